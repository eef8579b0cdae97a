"""What the client needs from a transport: send a request and get its response, send a
notification, open a listen stream, and hand over what the server sends of its own accord.
Transports know nothing of tasks.

Every request carries one `Deadline` (the call's whole timeout): each step the transport takes
(connecting, writing, reading) gets its time from it. Transient failures are retried here, below
the client, by the client's `Retry` policy and inside that deadline. A request abandoned (timed
out, interrupted) is forgotten and, where it may be running, cancelled on the server, here once
for every transport (`Transport.request`), off the caller's time: the caller's exception comes at
its deadline, and the notice goes out afterwards (`transports._cancel`).
"""

from __future__ import annotations

import abc
import logging
import queue
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Union

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import METHOD_NOT_FOUND, McpError, RequestTimeout, TransportError
from mcp_tasks._wire import IDEMPOTENT_METHODS, notification, valid_id
from mcp_tasks.transports._cancel import CancelSender
from mcp_tasks.transports._retry import Retry

__all__ = [
    "CANCEL_TIMEOUT",
    "CLOSED",
    "Message",
    "QueueStream",
    "Receiver",
    "RequestId",
    "Sent",
    "Stream",
    "Transport",
    "closed_error",
]

log = logging.getLogger("mcp_tasks")

Message = dict[str, Any]

RequestId = Union[str, int]
"""A JSON-RPC request id as this library sends them (a string or an integer)."""

Receiver = Callable[[Message, "RequestId | None"], "Message | None"]
"""Takes a message that answers no pending request, and its origin (see `Transport.deliver`); for
a server's request, returns the response.
"""


CANCEL_TIMEOUT: Final = 1.0
"""The most time telling the server that a request was abandoned may take, counted from the moment
the request was abandoned, on the transport's own time, never the caller's (best effort: a notice
that cannot go out in that time is dropped, so abandoning a request never hangs)."""

_MAKING = threading.Lock()  # makes a transport's cancel sender, once

CLOSED: Final = "the client was closed"


def closed_error(cause: BaseException | None = None) -> TransportError:
    """The one error of whatever the client's `close()` ended under it: a request, a stream being
    opened or read, a wait of the tasks code (the channel's `closed_error`), on every transport.
    """
    return TransportError(CLOSED, cause=cause)


class Sent:
    """Whether a request (any attempt at it) may have reached the server: set by the transport as
    it hands the request to the wire, so one never sent is not cancelled.
    """

    __slots__ = ("reached",)

    def __init__(self) -> None:
        self.reached = False


class Stream(abc.ABC):
    """The server's messages for one `subscriptions/listen` request, in order."""

    @abc.abstractmethod
    def read(self, deadline: Deadline | None = None) -> Message | None:
        """The next message; None once the stream has ended.

        Blocks until a message or the end: silence is not an end, and `close()` from another
        thread wakes a blocked read (which then returns None). Raises `McpError` (kind transport)
        when the stream broke. With a `deadline` (a listen's acknowledgement, read by the thread
        that opens it): `RequestTimeout` when nothing came by then, after which the stream is only
        to be closed.
        """

    @abc.abstractmethod
    def close(self) -> None:
        """End the stream from the client's side. Idempotent and bounded."""


class Transport(abc.ABC):
    """One connection to a server. Safe to share between threads."""

    retry: Retry = Retry()
    cancel_timeout: float = CANCEL_TIMEOUT
    """The budget for telling the server that a request was abandoned (see `request`)."""
    _receiver: Receiver | None = None
    _cancels: CancelSender | None = None
    _cancels_stopped: bool = False

    def attach(self, *, receiver: Receiver | None = None, retry: Retry | None = None) -> None:
        """Called once by the client: where unsolicited messages go (a receiver takes
        ``(message, origin)``), and the retry policy.
        """
        if receiver is not None:
            self._receiver = receiver
        if retry is not None:
            self.retry = retry

    @property
    def session_id(self) -> str | None:
        """The server's id for the 2025-era session this transport carries (``Mcp-Session-Id``),
        or None: only HTTP has one, once a handshake server gave it (or one was joined).
        """
        return None

    @property
    def in_flight(self) -> frozenset[RequestId]:
        """The ids of the requests whose answers this transport is waiting for (a diagnostic: an
        abandoned request is never among them).
        """
        return frozenset()

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
        none to send. Raises `RequestTimeout` when the deadline passes first, and `TransportError`
        when the connection failed (after the retries the policy allows).

        A request is abandoned when its deadline passes or anything else interrupts it (a
        `KeyboardInterrupt` while it waits, `SystemExit`, an exception out of the receiver): its
        pending state goes (no entry stays behind, no reader keeps waiting for it) and the
        exception goes on. When it may have reached the server and `cancellable` is true, the
        server is then told with ``notifications/cancelled`` ``{"requestId", "reason"}``, off the
        caller's time (the exception comes at the deadline, the notice after it), within
        `cancel_timeout` (`CANCEL_TIMEOUT`, 1 s) at most: a notice that cannot go out in that
        time, or fails, is logged at debug and dropped, so abandoning never hangs. `close` sends
        the notices still waiting (within what is left of their budgets) before it closes.
        Pass ``cancellable=False`` for a request that must not be cancelled that way (a
        2025-11-25 task-augmented call: its task is cancelled with ``tasks/cancel`` only).
        """
        method = message.get("method")
        sent = Sent()
        try:
            return self.retry.run(
                lambda: self._request(message, deadline, headers, sent),
                deadline,
                idempotent=method in IDEMPOTENT_METHODS,
                what=str(method),
            )
        except BaseException as exc:
            if cancellable and sent.reached:
                self._abandoned(message.get("id"), exc)
            raise

    @abc.abstractmethod
    def _request(self, message: Message, deadline: Deadline, headers: Mapping[str, str] | None, sent: Sent) -> Message:
        """One attempt at `request`. Sets ``sent.reached`` once the request may have reached the
        server; whatever it raises, it leaves no pending state behind.
        """

    @abc.abstractmethod
    def notify(self, message: Message, deadline: Deadline | None = None) -> None:
        """Send a notification (bounded by `deadline`, or the transport's own limit)."""

    def open_stream(self, message: Message, deadline: Deadline) -> Stream:
        """Send a `subscriptions/listen` request; its messages, then its end, arrive on the stream.

        Opening is retried like an idempotent request; reading the stream is not bounded by
        `deadline` (it lasts until the end or `close()`). Opening that is abandoned is cancelled
        as `request` says.
        """
        sent = Sent()
        try:
            return self.retry.run(
                lambda: self._open_stream(message, deadline, sent),
                deadline,
                idempotent=True,
                what="subscriptions/listen",
            )
        except BaseException as exc:
            if sent.reached:
                self._abandoned(message.get("id"), exc)
            raise

    @abc.abstractmethod
    def _open_stream(self, message: Message, deadline: Deadline, sent: Sent) -> Stream:
        """One attempt at `open_stream` (``sent`` as for `_request`)."""

    def keep_session(self) -> None:
        """Leave the 2025-era session open when this transport closes (others may resume its
        tasks by its id). Only HTTP has such a session; elsewhere there is nothing to keep.
        """
        return

    def begin_session(self, protocol_version: str) -> None:
        """The client finished a 2025-era handshake at `protocol_version`. HTTP then keeps the
        session (its headers, its GET stream, DELETE on close); other transports need nothing.
        Called again after the server expired a session, for the new one.
        """
        return

    @abc.abstractmethod
    def close(self) -> None:
        """Close the connection; pending requests fail. Idempotent."""

    def deliver(self, message: Message, origin: RequestId | None = None) -> Message | None:
        """Hand the client a message that answers no pending request (a server's own request or
        notification). Returns the response to send back for a request, None for a notification.
        A request the client cannot take is refused with -32601, never left unanswered.

        `origin` is the id of the pending request whose own response stream carried the message
        (over HTTP, the SSE answer to its POST or the resumption of that answer; over direct, the
        request whose exchange the server notified on), or None when the transport cannot tell
        (the 2025-era GET stream, stdio, where every message shares one stream).
        """
        receiver = self._receiver
        if receiver is not None:
            try:
                return receiver(message, origin)
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

    # -- abandonment --------------------------------------------------------------------------

    def _abandoned(self, request_id: object, exc: BaseException) -> None:
        """Tell the server a request it may be running was abandoned because of `exc` (unless
        `exc` is a failure that says the request is over: an answer that could not be read, a
        connection that broke).
        """
        if isinstance(exc, McpError) and not isinstance(exc, RequestTimeout):
            return
        if not valid_id(request_id):
            return
        if isinstance(exc, RequestTimeout):
            reason = "the request timed out"
        else:
            reason = f"the client abandoned the request ({type(exc).__name__})"
        try:
            self._send_cancel(notification("notifications/cancelled", {"requestId": request_id, "reason": reason}))
        except Exception as failure:
            log.debug("could not tell the server that request %r was abandoned: %r", request_id, failure)

    def _send_cancel(self, message: Message) -> None:
        """Hand a ``notifications/cancelled`` to this transport's one `CancelSender` (made with
        the first), which sends it with `_deliver_cancel` within `cancel_timeout`, and return at
        once. Transports whose sending never blocks queue it themselves instead.
        """
        with _MAKING:
            sender = self._cancels
            if sender is None and not self._cancels_stopped:
                kind = type(self).__name__.removesuffix("Transport").lower() or "transport"
                sender = CancelSender(f"{kind}-{str(id(self))[-6:]}", self._deliver_cancel, lambda: self.cancel_timeout)
                self._cancels = sender
        if sender is None:
            log.debug("dropped a notifications/cancelled: the transport is closed")
            return
        sender.post(message)

    def _deliver_cancel(self, message: Message, deadline: Deadline) -> None:
        """Send one ``notifications/cancelled`` within `deadline`, on the cancel sender's thread
        (`notify`, unless the transport knows better).
        """
        self.notify(message, deadline)

    def _stop_cancels(self) -> None:
        """For `close`, before the connection goes: take no more notices, send those waiting
        (within their budgets), join the sender's thread. Idempotent.
        """
        with _MAKING:
            self._cancels_stopped = True
            sender = self._cancels
        if sender is not None:
            sender.close()


def request_ids(keys: Iterable[object]) -> frozenset[RequestId]:
    """The keys that are request ids (for `Transport.in_flight`)."""
    return frozenset(key for key in keys if isinstance(key, (str, int)) and not isinstance(key, bool))


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

    def read(self, deadline: Deadline | None = None) -> Message | None:
        """See `Stream.read`."""
        try:
            item = self._queue.get(timeout=None if deadline is None else max(deadline.remaining() or 0.0, 0.0))
        except queue.Empty:
            raise RequestTimeout(deadline.timeout or 0.0 if deadline is not None else 0.0) from None
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
