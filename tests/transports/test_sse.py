"""The SSE decoder, fed the way a socket delivers bytes: in arbitrary pieces."""

from __future__ import annotations

import pytest

from mcp_tasks import McpError
from mcp_tasks.transports._sse import SseDecoder, SseEvent


def decode_all(*chunks: bytes) -> list[SseEvent]:
    decoder = SseDecoder()
    events: list[SseEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    return events


def test_one_event() -> None:
    assert decode_all(b'data: {"a":1}\n\n') == [SseEvent('{"a":1}')]


def test_multi_line_data_joins_with_newlines() -> None:
    assert decode_all(b"data: one\ndata: two\ndata:three\n\n") == [SseEvent("one\ntwo\nthree")]


def test_comments_are_keep_alives() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b": keepalive\n\n: again\n\n") == []
    assert decoder.comments == 2


def test_event_names_ids_and_retry() -> None:
    events = decode_all(b"event: ping\nid: 7\nretry: 1500\ndata: x\n\ndata: y\n\n")
    assert events == [SseEvent("x", "ping", "7", 1500), SseEvent("y", "message", "7", 1500)]


def test_an_id_with_nul_and_a_bad_retry_are_ignored() -> None:
    events = decode_all(b"id: a\x00b\nretry: soon\ndata: x\n\n")
    assert events == [SseEvent("x", "message", None, None)]


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending(ending: bytes) -> None:
    text = b"data: a" + ending + b"data: b" + ending + ending
    assert decode_all(text) == [SseEvent("a\nb")]


def test_pieces_split_anywhere_give_the_same_events() -> None:
    stream = 'data: {"text":"héllo ✓"}\r\n\r\n: note\n\nevent: x\ndata: 2\r\n\r\n'.encode()
    whole = decode_all(stream)
    for size in range(1, 9):
        pieces = [stream[i : i + size] for i in range(0, len(stream), size)]
        assert decode_all(*pieces) == whole
    assert whole[0].data == '{"text":"héllo ✓"}'


def test_a_crlf_split_across_reads_is_one_line_end() -> None:
    assert decode_all(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n") == [SseEvent("a\nb")]


def test_an_event_without_data_is_not_dispatched() -> None:
    assert decode_all(b"event: empty\n\ndata: x\n\n") == [SseEvent("x")]


def test_a_field_without_a_colon_and_a_leading_bom() -> None:
    assert decode_all(b"\xef\xbb\xbfdata\n\n") == [SseEvent("")]


def test_an_unfinished_event_is_held_back() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: partial") == []
    assert decoder.feed(b"\n") == []
    assert decoder.feed(b"\n") == [SseEvent("partial")]


def test_a_line_past_the_cap_is_an_error_even_without_a_newline() -> None:
    decoder = SseDecoder(max_line=1000, max_event=1000)
    decoder.feed(b"data: " + b"x" * 900)
    with pytest.raises(McpError, match="SSE line longer than 1000 bytes") as error:
        decoder.feed(b"x" * 200)
    assert error.value.kind == "transport"


def test_an_event_past_the_cap_is_an_error() -> None:
    decoder = SseDecoder(max_line=1000, max_event=1500)
    decoder.feed(b"data: " + b"x" * 800 + b"\n")
    with pytest.raises(McpError, match="SSE event larger than 1500 bytes"):
        decoder.feed(b"data: " + b"x" * 800 + b"\n")


def test_the_default_caps_take_a_large_event_in_small_pieces() -> None:
    payload = b"y" * (4 * 1024 * 1024)
    stream = b"data: " + payload + b"\n\n"
    events = decode_all(*[stream[i : i + 65536] for i in range(0, len(stream), 65536)])
    assert len(events) == 1 and len(events[0].data) == len(payload)


def test_a_bom_split_across_reads() -> None:
    assert decode_all(b"\xef", b"\xbb", b"\xbfdata: a\n\n") == [SseEvent("a")]


def test_priming_events_dispatch_with_empty_data() -> None:
    # The decoder follows WHATWG (an event with empty data is dispatched); the transport skips it.
    assert decode_all(b"id: 1\ndata:\n\n") == [SseEvent("", id="1")]
