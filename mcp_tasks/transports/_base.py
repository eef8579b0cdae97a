"""What the client needs from a transport: send a request and get its response, send a
notification, open a listen stream. Transports know nothing of tasks.
"""

from __future__ import annotations

import abc
import queue
import threading
from collections.abc import Callable, Mapping
from typing import Any

from mcp_tasks._clock import get_sliced
from mcp_tasks._errors import McpError

__all__ = ["QueueStream", "Stream", "Transport"]

Message = dict[str, Any]


class Stream(abc.ABC):
    """The server's messages for one `subscriptions/listen` request, in order."""

    @abc.abstractmethod
    def read(self, timeout: float | None) -> Message | None:
        """The next message; None once the stream has ended.

        Raises the builtin `TimeoutError` when nothing came within `timeout` (the stream stays
        usable), and `McpError` (kind transport) when the stream broke.
        """

    @abc.abstractmethod
    def close(self) -> None:
        """End the stream from the client's side. Idempotent and bounded."""


class Transport(abc.ABC):
    """One connection to a server. Safe to share between threads."""

    @abc.abstractmethod
    def request(self, message: Message, timeout: float | None, headers: Mapping[str, str] | None = None) -> Message:
        """Send a request and return the response message that answers it.

        `headers` are extra HTTP headers for this request (``Mcp-Param-*``); other transports have
        none to send. Raises `RequestTimeout` when no response came within `timeout` (the request
        is then cancelled as the transport can), and `TransportError` when the connection failed.
        """

    @abc.abstractmethod
    def notify(self, message: Message) -> None:
        """Send a notification."""

    @abc.abstractmethod
    def open_stream(self, message: Message, timeout: float | None) -> Stream:
        """Send a `subscriptions/listen` request; its messages, then its end, arrive on the stream."""

    @abc.abstractmethod
    def close(self) -> None:
        """Close the connection; pending requests fail. Idempotent."""


_END = object()


class QueueStream(Stream):
    """A stream fed by another thread: `feed` messages, then `end` or `fail`."""

    def __init__(self, on_close: Callable[[], None] | None = None) -> None:
        self._queue: queue.Queue[Any] = queue.Queue()
        self._on_close = on_close
        self._closed = False
        self._ended = False
        self._lock = threading.Lock()

    def feed(self, message: Message) -> None:
        """Queue one message from the server."""
        self._queue.put(message)

    def end(self, error: McpError | None = None) -> None:
        """Mark the end of the stream, cleanly or with an error. Only the first end counts."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
        self._queue.put(error if error is not None else _END)

    def read(self, timeout: float | None) -> Message | None:
        """See `Stream.read`."""
        try:
            item = get_sliced(self._queue, timeout)
        except queue.Empty:
            raise TimeoutError("no message within the timeout") from None
        if item is _END:
            self._queue.put(_END)
            return None
        if isinstance(item, McpError):
            self._queue.put(_END)
            raise item
        message: Message = item
        return message

    def close(self) -> None:
        """See `Stream.close`."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._on_close is not None:
            self._on_close()
        self.end()
