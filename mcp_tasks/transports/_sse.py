"""Server-sent events: an incremental decoder, fed bytes as they arrive.

It follows the WHATWG event-stream rules: lines end in CRLF, LF or CR (a CRLF may be split
across reads); ``data:`` lines join with newlines; a line starting with ``:`` is a comment (a
keep-alive); ``id:`` sets the last event id unless it holds a NUL; ``retry:`` takes an integer of
milliseconds; a blank line dispatches the event, unless it has no data.
"""

from __future__ import annotations

import codecs

import attrs

__all__ = ["SseDecoder", "SseEvent"]


@attrs.frozen
class SseEvent:
    """One dispatched event: its type (``message`` unless named), data, and the last event id."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SseDecoder:
    """Turns a byte stream into `SseEvent`s; `feed` returns the events each chunk completes."""

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._skip_lf = False
        self._first = True
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None
        self.comments = 0

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Decode a chunk; returns the events it completes."""
        text = self._text.decode(chunk)
        if self._first and text:
            self._first = False
            if text.startswith("\ufeff"):
                text = text[1:]
        events: list[SseEvent] = []
        for line in self._lines(text):
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def _lines(self, text: str) -> list[str]:
        lines = []
        buffer = self._pending
        i = 0
        if self._skip_lf and text.startswith("\n"):
            i = 1
        self._skip_lf = False
        start = i
        while i < len(text):
            ch = text[i]
            if ch == "\n" or ch == "\r":
                lines.append(buffer + text[start:i])
                buffer = ""
                if ch == "\r" and i + 1 < len(text) and text[i + 1] == "\n":
                    i += 1
                elif ch == "\r" and i + 1 == len(text):
                    self._skip_lf = True
                start = i + 1
            i += 1
        self._pending = buffer + text[start:]
        return lines

    def _line(self, line: str) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            self.comments += 1
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\x00" not in value:
            self._last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> SseEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = SseEvent(
            data="\n".join(self._data),
            event=self._event or "message",
            id=self._last_id,
            retry=self._retry,
        )
        self._data = []
        self._event = ""
        return event
