"""What an HTTP answer says: the JSON-RPC response in a JSON body, the messages of an SSE answer,
and a listen stream (the SSE answer to a ``subscriptions/listen`` POST, read without a deadline
until it ends or is closed). What a server sent appears in errors only as a redacted excerpt.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import McpError, RequestTimeout, TransportError
from mcp_tasks._wire import loads, malformed
from mcp_tasks.transports._base import Message, Stream
from mcp_tasks.transports._body import Response
from mcp_tasks.transports._failures import excerpt
from mcp_tasks.transports._resume import StreamMark
from mcp_tasks.transports._sse import MAX_EVENT, SseDecoder

__all__ = ["HttpStream", "SingleMessage", "event_message", "json_answer", "messages"]


class HttpStream(Stream):
    """A listen stream: the SSE response to one ``subscriptions/listen`` POST.

    `read` blocks, with no timeout, until a message or the end: silence and keep-alive comments
    are not an end, a connection that breaks is an error. `close` (from any thread) shuts the
    socket down, which wakes a blocked reader at once.
    """

    def __init__(
        self, response: Response, on_close: Callable[[HttpStream], None] | None = None, *, max_message: int = MAX_EVENT
    ) -> None:
        self._response = response
        self._decoder = SseDecoder(max_line=max_message + 64, max_event=max_message)
        self._ready: list[Message] = []
        self._ended = False
        self._closed = threading.Event()
        self._reading = False
        self._lock = threading.Lock()
        self._on_close = on_close

    def read(self, deadline: Deadline | None = None) -> Message | None:
        """See `Stream.read`."""
        with self._lock:
            if self._closed.is_set() or self._reading:
                return None
            self._reading = True
        try:
            while not self._ready:
                if self._ended or self._closed.is_set():
                    return None
                try:
                    chunk = self._response.chunk(deadline)
                except McpError as exc:
                    self._ended = True
                    if self._closed.is_set():
                        return None
                    if isinstance(exc, RequestTimeout):
                        raise
                    raise TransportError(f"the listen stream broke: {exc.message}", cause=exc) from exc
                if not chunk:
                    self._ended = True
                    return None
                try:
                    events = self._decoder.feed(chunk)
                except McpError:
                    self._ended = True
                    raise
                for event in events:
                    message = event_message(event.event, event.data)
                    if message is not None:
                        self._ready.append(message)
            return self._ready.pop(0)
        finally:
            with self._lock:
                self._reading = False
                done = self._ended or self._closed.is_set()
            if done:
                self._response.finish()

    def close(self) -> None:
        """See `Stream.close`."""
        with self._lock:
            if self._closed.is_set():
                return
            self._closed.set()
            reading = self._reading
        self._response.shutdown()
        if not reading:
            self._response.finish()
        if self._on_close is not None:
            self._on_close(self)


class SingleMessage(Stream):
    """A listen request answered with one JSON message (an error) instead of a stream."""

    def __init__(self, message: Message) -> None:
        self._message: Message | None = message

    def read(self, deadline: Deadline | None = None) -> Message | None:
        """See `Stream.read`."""
        message, self._message = self._message, None
        return message

    def close(self) -> None:
        self._message = None


# -- responses ---------------------------------------------------------------------------------


def json_answer(response: Response, body: bytes, request_id: object) -> Message:
    """The JSON-RPC response in a body; it must answer `request_id` (an error may say null)."""
    try:
        message = loads(body) if body else None
    except (ValueError, RecursionError):
        message = None
    if not isinstance(message, dict) or not ("result" in message or "error" in message):
        raise malformed(f"The server answered HTTP {response.status} without a JSON-RPC message", excerpt(body))
    answered = message.get("id")
    if answered != request_id and "error" not in message:
        # An error answers the POST it came back on whatever its id (null when the server could
        # not read the request; the official Python SDK says "server-error").
        raise malformed("The server's answer is for another request", answered)
    return message


def messages(response: Response, deadline: Deadline, cap: int, mark: StreamMark | None = None) -> Iterator[Message]:
    """The JSON-RPC messages of an SSE answer, within the deadline (`mark` notes how far it got)."""
    decoder = SseDecoder(max_line=cap + 64, max_event=cap)
    while chunk := response.chunk(deadline):
        for event in decoder.feed(chunk):
            if mark is not None:
                mark.see(event)
            message = event_message(event.event, event.data)
            if message is not None:
                yield message


def event_message(event: str, data: str) -> Message | None:
    """The JSON-RPC message an SSE event carries; None for other event types and for events
    without data (a 2025-11-25 server's priming event: an ``id:`` and empty ``data:``).
    """
    if event != "message" or not data.strip():
        return None
    try:
        message = loads(data)
    except (ValueError, RecursionError) as exc:
        raise malformed("The server sent an SSE event that is not JSON", excerpt(data)) from exc
    if not isinstance(message, dict):
        raise malformed("The server sent an SSE event that is not a JSON object", excerpt(data))
    return message
