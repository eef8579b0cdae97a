"""Server-sent events: an incremental decoder, fed bytes as they arrive.

It follows the WHATWG event-stream rules: lines end in CRLF, LF or CR (a CRLF may be split
across reads); ``data:`` lines join with newlines; a line starting with ``:`` is a comment (a
keep-alive); ``id:`` sets the last event id unless it holds a NUL; ``retry:`` takes an integer of
milliseconds; a blank line dispatches the event, unless it has no data.

Decoding is linear in the bytes: a chunk is split into lines by `bytes.splitlines` (which, for
bytes, splits on CR, LF and CRLF only), a line still open at the end of a chunk is kept as a list
of pieces and joined once when it ends, and an event's data is joined and decoded once, when it
is dispatched. A line longer than `max_line` bytes, or an event whose data passes `max_event`
bytes, is an `McpError` (a server that never sends a newline must not grow memory without limit).
"""

from __future__ import annotations

from typing import Final

import attrs

from mcp_tasks._errors import CONNECTION_CLOSED, McpError

__all__ = ["MAX_EVENT", "MAX_LINE", "SseDecoder", "SseEvent"]

MAX_EVENT: Final = 16 * 1024 * 1024
"""The default cap on one event's data, in bytes: far above any real MCP message."""

MAX_LINE: Final = MAX_EVENT + 64
"""The default cap on one line, in bytes (a ``data:`` line can hold a whole event)."""

_BOM: Final = b"\xef\xbb\xbf"


@attrs.frozen
class SseEvent:
    """One dispatched event: its type (``message`` unless named), data, and the last event id."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SseDecoder:
    """Turns a byte stream into `SseEvent`s; `feed` returns the events each chunk completes."""

    def __init__(self, *, max_line: int = MAX_LINE, max_event: int = MAX_EVENT) -> None:
        self.max_line = max_line
        self.max_event = max_event
        self._pieces: list[bytes] = []  # the line still open, in the pieces it arrived in
        self._open = 0  # its length so far
        self._skip_lf = False  # the last chunk ended in CR: a LF first in the next one is its pair
        self._first = True  # a BOM may open the stream
        self._data: list[bytes] = []
        self._size = 0  # bytes of data in the event being built
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None
        self.comments = 0

    @property
    def last_id(self) -> str | None:
        """The last event id the stream set, the event it belongs to dispatched or not yet."""
        return self._last_id

    @property
    def retry(self) -> int | None:
        """The last ``retry:`` (ms) the stream set, the event it belongs to dispatched or not yet."""
        return self._retry

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Decode a chunk; returns the events it completes. Raises `McpError` past a cap."""
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if self._first:
            chunk = self._strip_bom(chunk)
        if not chunk:
            return []
        end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
        if end < 0:
            self._hold(chunk)
            return []
        head, tail = chunk[: end + 1], chunk[end + 1 :]
        if self._pieces:
            self._pieces.append(head)
            head = b"".join(self._pieces)
            self._pieces, self._open = [], 0
        if not tail and head.endswith(b"\r"):
            self._skip_lf = True
        events: list[SseEvent] = []
        for line in head.splitlines():
            if len(line) > self.max_line:
                raise _too_big(f"an SSE line longer than {self.max_line} bytes")
            event = self._line(line)
            if event is not None:
                events.append(event)
        if tail:
            self._hold(tail)
        return events

    def _strip_bom(self, chunk: bytes) -> bytes:
        pending = b"".join(self._pieces) + chunk
        if len(pending) < len(_BOM) and _BOM.startswith(pending):
            self._pieces, self._open = [pending], len(pending)  # not enough bytes to tell yet
            return b""
        self._first = False
        self._pieces, self._open = [], 0
        return pending[len(_BOM) :] if pending.startswith(_BOM) else pending

    def _hold(self, piece: bytes) -> None:
        self._pieces.append(piece)
        self._open += len(piece)
        if self._open > self.max_line:
            raise _too_big(f"an SSE line longer than {self.max_line} bytes")

    def _line(self, line: bytes) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(b"data:"):
            value = line[6:] if line.startswith(b"data: ") else line[5:]
            self._size += len(value) + 1
            if self._size > self.max_event:
                raise _too_big(f"an SSE event larger than {self.max_event} bytes")
            self._data.append(value)
            return None
        if line.startswith(b":"):
            self.comments += 1
            return None
        name, colon, raw = line.partition(b":")
        if colon and raw.startswith(b" "):
            raw = raw[1:]
        if name == b"data":  # "data" with no colon: an empty data line
            self._size += 1
            self._data.append(b"")
        elif name == b"event":
            self._event = raw.decode("utf-8", "replace")
        elif name == b"id" and b"\x00" not in raw:
            self._last_id = raw.decode("utf-8", "replace")
        elif name == b"retry" and raw.isdigit():
            self._retry = int(raw)
        return None

    def _dispatch(self) -> SseEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = SseEvent(
            data=b"\n".join(self._data).decode("utf-8", "replace"),
            event=self._event or "message",
            id=self._last_id,
            retry=self._retry,
        )
        self._data, self._size = [], 0
        self._event = ""
        return event


def _too_big(what: str) -> McpError:
    return McpError(CONNECTION_CLOSED, f"The server sent {what}", kind="transport", cause="sse_cap")
