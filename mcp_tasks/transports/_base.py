"""What the client needs from a transport: send a request and get its response, send a
notification, open a listen stream, and hand over what the server sends of its own accord.
Transports know nothing of tasks.

Every request carries one `Deadline` (the call's whole timeout): each step the transport takes
(connecting, writing, reading) gets its time from it. Transient failures are retried here, below
the client, by the client's `Retry` policy and inside that deadline.
"""

from __future__ import annotations

import abc
import logging
import queue
import threading
from collections.abc import Callable, Mapping
from typing import Any

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import METHOD_NOT_FOUND, McpError
from mcp_tasks._retry import Retry
from mcp_tasks._wire import IDEMPOTENT_METHODS

__all__ = ["Message", "QueueStream", "Receiver", "Stream", "Transport"]

log = logging.getLogger("mcp_tasks")

Message = dict[str, Any]

Receiver = Callable[[Message], "Message | None"]
"""Takes a message that answers no pending request; for a server's request, returns the response."""


class Stream(abc.ABC):
    """The server's messages for one `subscriptions/listen` request, in order."""

    @abc.abstractmethod
    def read(self) -> Message | None:
        """The next message; None once the stream has ended.

        Blocks until a message or the end: silence is not an end, and `close()` from another
        thread wakes a blocked read (which then returns None). Raises `McpError` (kind transport)
        when the stream broke.
        """

    @abc.abstractmethod
    def close(self) -> None:
        """End the stream from the client's side. Idempotent and bounded."""


class Transport(abc.ABC):
    """One connection to a server. Safe to share between threads."""

    retry: Retry = Retry()
    _receiver: Receiver | None = None

    def attach(self, *, receiver: Receiver | None = None, retry: Retry | None = None) -> None:
        """Called once by the client: where unsolicited messages go, and the retry policy."""
        if receiver is not None:
            self._receiver = receiver
        if retry is not None:
            self.retry = retry

    @property
    def session_id(self) -> str | None:
        """The 2025-era HTTP session this transport is in (None elsewhere)."""
        return None

    def request(
        self,
        message: Message,
        deadline: Deadline,
        headers: Mapping[str, str] | None = None,
        *,
        cancellable: bool = True,
    ) -> Message:
        """Send a request and return the response message that answers it.

        `headers` are extra HTTP headers for this request (``Mcp-Param-*``); other transports have
        none to send. Raises `RequestTimeout` when the deadline passes first (the request is then
        cancelled as the transport can), and `TransportError` when the connection failed (after
        the retries the policy allows).
        """
        method = message.get("method")
        return self.retry.run(
            lambda: self._request(message, deadline, headers),
            deadline,
            idempotent=method in IDEMPOTENT_METHODS,
            what=str(method),
        )

    @abc.abstractmethod
    def _request(self, message: Message, deadline: Deadline, headers: Mapping[str, str] | None) -> Message:
        """One attempt at `request`."""

    @abc.abstractmethod
    def notify(self, message: Message, deadline: Deadline | None = None) -> None:
        """Send a notification (bounded by `deadline`, or the transport's own limit)."""

    def open_stream(self, message: Message, deadline: Deadline) -> Stream:
        """Send a `subscriptions/listen` request; its messages, then its end, arrive on the stream.

        Opening is retried like an idempotent request; reading the stream is not bounded by
        `deadline` (it lasts until the end or `close()`).
        """
        return self.retry.run(
            lambda: self._open_stream(message, deadline), deadline, idempotent=True, what="subscriptions/listen"
        )

    @abc.abstractmethod
    def _open_stream(self, message: Message, deadline: Deadline) -> Stream:
        """One attempt at `open_stream`."""

    def keep_session(self) -> None:
        """Leave the 2025-era session open when this transport closes (others may resume its
        tasks by its id). Only HTTP has such a session; elsewhere there is nothing to keep.
        """
        return

    def begin_session(self, protocol_version: str) -> None:
        """The client finished a 2025-era handshake at `protocol_version`. HTTP then keeps the
        session (its headers, its GET stream, DELETE on close); other transports need nothing.
        """
        return

    @abc.abstractmethod
    def close(self) -> None:
        """Close the connection; pending requests fail. Idempotent."""

    def deliver(self, message: Message) -> Message | None:
        """Hand the client a message that answers no pending request (a server's own request or
        notification). Returns the response to send back for a request, None for a notification.
        A request the client cannot take is refused with -32601, never left unanswered.
        """
        receiver = self._receiver
        if receiver is not None:
            try:
                return receiver(message)
            except Exception:
                log.exception("the client failed to take a %s message", message.get("method"))
                if "id" not in message:
                    return None
        elif "id" not in message:
            log.debug("server notification %s outside any stream", message.get("method"))
            return None
        method = message.get("method")
        error = McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
        return {"jsonrpc": "2.0", "id": message.get("id"), "error": error.to_wire()}


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

    def read(self) -> Message | None:
        """See `Stream.read`."""
        item = self._queue.get()
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
