"""The wire helpers: header values, _meta merging, extension declarations, JSON."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks import _wire
from mcp_tasks._wire import (
    declares_extension,
    decode_header_value,
    dumps,
    encode_header_value,
    loads,
    mcp_name,
    merge_meta,
)


@pytest.mark.parametrize("value", ["zJ3JNBBAORw4uOgJy7Rl93ZQYuUp0qUA13srtHs9SZc", "slow_compute", "a b"])
def test_visible_ascii_is_sent_plain(value: str) -> None:
    assert encode_header_value(value) == value


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("task/with unicode ✓", "=?base64?dGFzay93aXRoIHVuaWNvZGUg4pyT?="),
        (" leading", "=?base64?IGxlYWRpbmc=?="),
        ("trailing ", "=?base64?dHJhaWxpbmcg?="),
        ("tab\there", "=?base64?dGFiCWhlcmU=?="),
        ("=?base64?looks-like-the-sentinel?=", "=?base64?PT9iYXNlNjQ/bG9va3MtbGlrZS10aGUtc2VudGluZWw/PQ==?="),
        ("", "=?base64??="),
    ],
)
def test_other_values_use_the_base64_form(value: str, encoded: str) -> None:
    assert encode_header_value(value) == encoded
    assert decode_header_value(encoded) == value


def test_a_malformed_base64_value_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        decode_header_value("=?base64?not base64!?=")


def test_mcp_name_mirrors_the_right_param() -> None:
    assert mcp_name("tools/call", {"name": "greet"}) == "greet"
    assert mcp_name("resources/read", {"uri": "file:///x"}) == "file:///x"
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        assert mcp_name(method, {"taskId": "t-1"}) == "t-1"
    assert mcp_name("tools/list", {}) is None
    assert mcp_name("subscriptions/listen", {"notifications": {}}) is None


def test_meta_merges_one_level_deep_with_later_layers_winning() -> None:
    merged = merge_meta({"a": {"x": 1}, "b": 1}, None, {"a": {"y": 2}}, {"c": 3})
    assert merged == {"a": {"y": 2}, "b": 1, "c": 3}


def test_declares_extension() -> None:
    meta: dict[str, Any] = {
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    }
    assert declares_extension(meta, "io.modelcontextprotocol/tasks")
    assert not declares_extension({}, "io.modelcontextprotocol/tasks")
    assert not declares_extension({"io.modelcontextprotocol/clientCapabilities": {"extensions": []}}, "x")


def test_dumps_is_compact_utf8_and_refuses_nan() -> None:
    assert dumps({"a": "✓", "b": [1, 2]}) == '{"a":"✓","b":[1,2]}'.encode()
    with pytest.raises(ValueError):
        dumps({"x": float("inf")})
    with pytest.raises(ValueError):
        dumps({"x": object()})


# -- decode limits (issue 9, item 10) -------------------------------------------------------------


@pytest.mark.parametrize("data", [b"[" * 513 + b"]" * 513, "{" * 100_000, b"[" * 1_000_000])
def test_json_nested_too_deep_is_a_clear_value_error(data: bytes | str) -> None:
    """Not the RecursionError the stdlib raises from deep inside the decoder."""
    with pytest.raises(ValueError, match="nested deeper than 512"):
        loads(data)


def test_json_at_the_depth_limit_and_brackets_in_strings_decode() -> None:
    assert loads(b"[" * 512 + b"]" * 512) is not None
    text = '{"a": "' + "[" * 2000 + '", "b": "\\"]]]"}'
    assert loads(text)["a"] == "[" * 2000
    assert loads(text.encode())["b"] == '"]]]'


@pytest.mark.parametrize(
    "data",
    [b'"\\ud800"', b'{"taskId": "ab\\uDC00"}', b'"\xed\xa0\x80"', '"\\udfff"', '"\udc00"'],
)
def test_a_lone_surrogate_is_refused_at_decode(data: bytes | str) -> None:
    """No wire can carry it back: a task id like that could never be sent again."""
    with pytest.raises(ValueError, match="lone surrogate"):
        loads(data)


def test_a_surrogate_pair_is_text() -> None:
    assert loads(b'"\\ud83d\\ude00"') == "\U0001f600"


@pytest.mark.parametrize("data", [b"NaN", b"[Infinity]", b'{"x": -Infinity}', b"[1e999]", b"-1e400"])
def test_numbers_json_does_not_have_are_refused(data: bytes) -> None:
    with pytest.raises(ValueError, match="JSON"):
        loads(data)


def test_a_text_over_the_size_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_wire, "MAX_JSON_BYTES", 100)
    assert loads(b"[" + b"1," * 40 + b"1]")
    with pytest.raises(ValueError, match="over the limit"):
        loads(b"[" + b"1," * 60 + b"1]")
