"""A call's short printable form (`arguments_text`, `call_text`, `task_label`) and the form a
store keeps (`kept_arguments`): secrets hidden at any depth, nesting, unicode and control
characters, long values, what JSON cannot hold, and a bound however large the arguments are.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from mcp_tasks._call_text import (
    CUT,
    HIDDEN,
    KEPT_CHARS,
    KEPT_TEXT,
    SHOWN_CHARS,
    arguments_text,
    call_text,
    kept_arguments,
    secret_key,
    task_label,
)

TASK = "e2941f0c-7a3b-4d8e-9c1a-5b6d7e8fb175"


def test_a_call_reads_as_its_tool_and_its_arguments_json() -> None:
    assert call_text("export", {"report": "q3"}) == 'export {"report": "q3"}'
    assert task_label(TASK, "export", arguments_text({"report": "q3"})) == 'export {"report": "q3"} e294…b175'


def test_no_arguments_and_an_unknown_call() -> None:
    assert call_text("export", None) == call_text("export", {}) == "export"
    assert arguments_text(None) == arguments_text({}) == ""
    assert task_label(TASK, None) == "task e294…b175"
    assert task_label(TASK, "export") == "export e294…b175"
    assert call_text(None, None) == ""


@pytest.mark.parametrize(
    "key",
    ["token", "api_key", "API_KEY", "apiKey", "access_token", "accessToken", "Authorization", "password",
     "db_passwd", "client_secret", "hidden", "X-Auth", "credentials", "session_cookie"],
)  # fmt: skip
def test_values_under_secret_looking_keys_are_hidden(key: str) -> None:
    assert secret_key(key)
    shown = call_text("login", {"user": "ann", key: "s3cr3t-v4lue"})
    assert "s3cr3t" not in shown and f'"{key}": "{HIDDEN}"' in shown
    assert kept_arguments({key: "s3cr3t-v4lue"}) == {key: HIDDEN}


def test_plain_keys_are_shown() -> None:
    assert not any(secret_key(key) for key in ("user", "report", "n", "query", "path"))


def test_secrets_are_hidden_at_any_depth_and_whatever_their_type() -> None:
    arguments = {"a": [{"b": {"Token": {"nested": "s3cr3t"}}}], "password": 1234, "auth": ["s3cr3t"]}
    kept = kept_arguments(arguments)
    assert kept == {"a": [{"b": {"Token": HIDDEN}}], "password": HIDDEN, "auth": HIDDEN}
    assert "s3cr3t" not in arguments_text(arguments, width=200) and "1234" not in arguments_text(arguments, 200)


def test_nesting_is_shown_as_json() -> None:
    assert arguments_text({"a": [1, {"b": None, "c": True}]}) == '{"a": [1, {"b": null, "c": true}]}'


def test_unicode_is_kept_and_control_and_invisible_characters_escaped() -> None:
    shown = call_text("greet", {"name": "Zoë 日本 🎉"})
    assert shown == 'greet {"name": "Zoë 日本 🎉"}'
    tricky = call_text("greet\x1b[2J", {"name": "a\x1b]0;title\x07\u202eb"})
    assert "\x1b" not in tricky and "\u202e" not in tricky and "\x07" not in tricky
    assert "\\x1b[2J" in tricky and "\\u202e" in tricky and tricky.isprintable()


def test_long_values_are_cut_to_about_forty_characters() -> None:
    shown = call_text("store", {"document": "x" * 100_000})
    assert shown.startswith('store {"document": "xxx') and shown.endswith(CUT)
    assert len(arguments_text({"document": "x" * 100_000})) == SHOWN_CHARS
    many = arguments_text({f"k{n}": n for n in range(10_000)})
    assert len(many) == SHOWN_CHARS and many.endswith(CUT)
    assert len(arguments_text({"a": "b"}, width=5)) == 5


def test_values_json_cannot_hold_are_shown_as_their_repr() -> None:
    class Odd:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    arguments: dict[Any, Any] = {
        "day": datetime.date(2026, 7, 28),
        "raw": b"\x00ab",
        7: {1, 2},
        ("a", 1): float("nan"),
        "odd": Odd(),
        "big": 10**5000,  # too long for repr
    }
    kept = kept_arguments(arguments)
    assert kept is not None
    assert kept["day"] == "datetime.date(2026, 7, 28)" and kept["raw"] == "b'\\x00ab'"
    assert kept["7"] == "{1, 2}" and kept["('a', 1)"] == "nan" and kept["odd"] == "<Odd>" and kept["big"] == "<int>"
    json.dumps(kept, allow_nan=False)  # JSON, a store can keep it
    assert arguments_text(arguments).startswith('{"day": "datetime.date(2026, 7, 28)"')
    assert arguments_text(["not", "a", "mapping"]) == "['not', 'a', 'mapping']"


def test_a_cycle_ends_cut_not_in_a_recursion_error() -> None:
    looped: dict[str, Any] = {}
    looped["self"] = looped
    assert kept_arguments(looped) is not None
    assert arguments_text(looped).startswith('{"self": {"self": ')


def test_what_a_store_keeps_is_bounded_and_reads_back_unchanged() -> None:
    arguments = {"api_key": "k", "doc": "y" * 50_000, "rows": [list(range(100)) for _ in range(100)], "z": 1}
    kept = kept_arguments(arguments)
    assert kept is not None and kept["api_key"] == HIDDEN and kept["doc"].endswith(CUT)
    assert len(kept["doc"]) == KEPT_TEXT + 1 and kept["rows"][0][:3] == [0, 1, 2]  # one value takes not all
    assert list(kept) == ["api_key", "doc", "rows", CUT] and kept["rows"][-1] == CUT  # past the budget: cut
    assert len(json.dumps(kept, ensure_ascii=False)) < 2 * KEPT_CHARS
    assert kept_arguments(kept) == kept
    small = {"report": "q3", "n": [1, 2.5, None, True]}
    assert kept_arguments(small) == small


def test_arguments_that_are_not_a_mapping_are_refused_for_a_store() -> None:
    with pytest.raises(ValueError, match="arguments must be a mapping or None, got list"):
        kept_arguments([1, 2])
