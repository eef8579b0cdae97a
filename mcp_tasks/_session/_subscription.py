"""A listen stream: one worker thread reads it into a bounded queue that the caller drains.

Events are `Notification`, `Dropped` (events lost to a full queue, told just before the next one
delivered) and `Closed` (the end; nothing follows it). User code never runs on the worker thread.
"""

from __future__ import annotations

import collections
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, Literal, Union

import attrs

from mcp_tasks._clock import MIN_STEP, Deadline, wait_condition
from mcp_tasks._errors import McpError, RequestTimeout, TransportError
from mcp_tasks._redact import short_id
from mcp_tasks._threads import join_all, start_thread
from mcp_tasks._wire import decode_response
from mcp_tasks.transports._base import Stream

__all__ = ["Closed", "Dropped", "Event", "Notification", "Subscription"]

log = logging.getLogger("mcp_tasks")

CLOSE_TIMEOUT = 5.0
OVERFLOW_MODES = ("drop_oldest", "drop_newest")


@attrs.frozen(repr=False)
class Notification:
    """A notification the server sent on the stream; `params` includes its `_meta`."""

    method: str
    params: dict[str, Any]

    def __repr__(self) -> str:
        # Params can carry task ids, which act as bearer tokens: show the keys, the task id cut short.
        task_id = self.params.get("taskId")
        shown = f", taskId={short_id(task_id)!r}" if task_id is not None else ""
        return f"Notification(method={self.method!r}, params=<keys {sorted(map(str, self.params))}>{shown})"


@attrs.frozen
class Dropped:
    """`count` events were lost because the queue was full; told before the next delivered one."""

    count: int


@attrs.frozen
class Closed:
    """The stream ended: `error` is None at a normal end, the `McpError` on a failure."""

    error: McpError | None = None


Event = Union[Notification, Dropped, Closed]


class Subscription:
    """One `subscriptions/listen` stream, acknowledged by the server.

    `accepted` is the filter the server agreed to (possibly a subset of the one asked for) and `id`
    the listen request id (also the subscriptionId). Read events with `next()` or by iterating;
    `close()` ends the stream and joins the worker. Use it as a context manager.
    """

    def __init__(
        self,
        stream: Stream,
        subscription_id: int | str,
        *,
        max_buffer: int = 100,
        overflow: Literal["drop_oldest", "drop_newest"] = "drop_oldest",
        sink: Callable[[Event], None] | None = None,
        start: bool = True,
    ) -> None:
        check_buffer_options(max_buffer, overflow)
        self._sink = sink  # the library's own reader: events go to it, in the worker, not to the queue
        self.id = subscription_id
        self.accepted: dict[str, Any] = {}
        self._stream = stream
        self._max_buffer = max_buffer
        self._overflow = overflow
        self._cond = threading.Condition()
        self._acknowledged = False
        self._events: collections.deque[Notification] = collections.deque()
        self._dropped = 0
        self._received = 0
        self._end: Closed | None = None  # queued end, delivered after the events
        self._done: Closed | None = None  # the end, once delivered or closed
        self._stop = threading.Event()
        self._close_lock = threading.Lock()
        self._worker: threading.Thread | None = None
        if start:
            self.start()

    def start(self) -> None:
        """Start the worker that reads the stream (made with ``start=False``: once `acknowledge`d
        on the caller's thread, when the caller is ready for its events). Idempotent.
        """
        with self._close_lock:
            if self._worker is None and not self._stop.is_set():
                self._worker = start_thread(f"listen-{self.id}", self._run)

    def acknowledge(self, deadline: Deadline) -> dict[str, Any]:
        """Read the stream on the caller's thread until the server acknowledges the subscription
        (made with ``start=False``, before `start`): no thread of its own until then. Returns the
        accepted filter; raises as `wait_acknowledged` does.
        """
        while not self._acknowledged:
            try:
                end = self._take(deadline)
            except RequestTimeout:
                raise RequestTimeout(
                    deadline.timeout or 0.0, "The server did not acknowledge the subscription in time"
                ) from None
            if end is not None:
                with self._cond:
                    self._end = end
                raise end.error if end.error is not None else TransportError("The listen stream ended at once")
        return self.accepted

    def wait_acknowledged(self, deadline: Deadline) -> dict[str, Any]:
        """Block until the server acknowledges the subscription; returns the accepted filter.

        Raises `RequestTimeout` when the deadline passes first, and the stream's error (or a
        `TransportError`) when it ends before the acknowledgement.
        """
        with self._cond:
            while not self._acknowledged:
                end = self._end if self._end is not None else self._done
                if end is not None:
                    raise (
                        end.error
                        if end.error is not None
                        else TransportError("The listen stream ended before the server acknowledged it")
                    )
                left = deadline.remaining()  # read once for this step
                if left is not None and left < MIN_STEP:
                    raise RequestTimeout(
                        deadline.timeout or 0.0, "The server did not acknowledge the subscription in time"
                    )
                wait_condition(self._cond, None if left is None else time.monotonic() + left)
            return self.accepted

    # -- the caller's side --------------------------------------------------------------------

    def next(self, timeout: float | None = None) -> Event:
        """The next event; raises `TimeoutError` when none comes within `timeout` seconds.

        `timeout` None waits for ever, 0 takes only what is already there. Once the stream has
        ended every call returns its `Closed` event at once.
        """
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
                raise TypeError(f"timeout must be a number of seconds or None, got {timeout!r}")
            if math.isnan(timeout) or timeout < 0:
                raise ValueError(f"timeout must be zero or more seconds, got {timeout!r}")
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._done is not None:
                    return self._done
                if self._events:
                    if self._dropped:
                        dropped, self._dropped = Dropped(self._dropped), 0
                        return dropped
                    return self._events.popleft()
                if self._end is not None:
                    if self._dropped:
                        dropped, self._dropped = Dropped(self._dropped), 0
                        return dropped
                    self._done = self._end
                    return self._done
                if not wait_condition(self._cond, end):
                    raise TimeoutError("no event within the timeout")

    def __iter__(self) -> Iterator[Event]:
        """Events until, and including, `Closed`."""
        while True:
            event = self.next()
            yield event
            if isinstance(event, Closed):
                return

    def close(self) -> None:
        """End the stream (stdio sends notifications/cancelled, HTTP closes the response, direct
        tells the server) and join the worker. Idempotent; bounded at 5 s in all (beyond the
        transport's own bound on closing the stream, a worker still reading is left, with a warning).
        """
        with self._close_lock:
            if self._stop.is_set():
                return
            self._stop.set()
        deadline = Deadline(CLOSE_TIMEOUT)
        try:
            self._stream.close()
        finally:
            join_all([] if self._worker is None else [self._worker], deadline.remaining() or 0.0)
            with self._cond:
                self._events.clear()
                self._dropped = 0
                if self._done is None:
                    self._done = Closed(None)
                self._cond.notify_all()

    @property
    def received(self) -> int:
        """How many notifications the stream has brought so far (delivered or dropped)."""
        return self._received

    @property
    def closed(self) -> bool:
        """Whether the stream has ended (its `Closed` event is due or delivered)."""
        return self._done is not None or self._end is not None

    def __enter__(self) -> Subscription:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<Subscription id={self.id!r} {state} accepted={sorted(self.accepted)}>"

    # -- the worker ---------------------------------------------------------------------------

    def _run(self) -> None:
        end: Closed
        try:
            end = self._pump()
        except Exception as exc:  # never leave the caller waiting
            log.exception("listen stream worker failed")
            end = Closed(TransportError(f"the listen stream failed: {exc!r}", cause=exc))
        with self._cond:
            if self._end is None:
                self._end = end
            self._cond.notify_all()
        if self._sink is not None:
            self._sink(end)

    def _pump(self) -> Closed:
        while not self._stop.is_set():
            end = self._take(None)
            if end is not None:
                return end
        return Closed(None)

    def _take(self, deadline: Deadline | None) -> Closed | None:
        """Read and take one message of the stream: its end (`Closed`), or None to read on."""
        try:
            read: object = self._stream.read(deadline)  # a server may send any JSON value
        except McpError as exc:
            if deadline is not None and isinstance(exc, RequestTimeout):
                raise
            return Closed(exc)
        if read is None:
            if self._stop.is_set():
                return Closed(None)
            return Closed(TransportError("the listen stream ended before the server's response"))
        if not isinstance(read, dict):
            log.debug("ignored a message on the listen stream that is not a JSON object")
            return None
        message: dict[str, Any] = read
        if "method" not in message:
            if message.get("id") != self.id:
                log.debug("ignored a response on the listen stream that is not its own")
                return None
            try:
                decode_response(message)
            except McpError as exc:
                return Closed(exc)
            if not self._acknowledged:
                # A stream that ends before its acknowledgement is no stream: a wait then polls
                # (it falls back on a TransportError, not yet on a ProtocolError).
                return Closed(
                    TransportError("The server ended the subscription before acknowledging it", cause=message)
                )
            return Closed(None)
        if not self._acknowledged:
            if message.get("method") == "notifications/subscriptions/acknowledged":
                return self._acknowledge(message)
            log.debug("ignored %s before the acknowledgement", message.get("method"))
            return None
        method = message["method"]
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "notifications/cancelled" and params.get("requestId") == self.id:
            return Closed(None)
        if not isinstance(method, str):
            log.debug("ignored a message on the listen stream with a non-string method")
            return None
        self._deliver(Notification(method, params))
        return None

    def _acknowledge(self, message: dict[str, Any]) -> Closed | None:
        params = message.get("params")
        accepted = params.get("notifications") if isinstance(params, dict) else None
        if not isinstance(accepted, dict):  # a TransportError, so that a wait polls (as above)
            return Closed(TransportError("The acknowledgement has no notifications filter", cause=message))
        with self._cond:
            self.accepted = accepted
            self._acknowledged = True
            self._cond.notify_all()
        return None

    def _deliver(self, event: Notification) -> None:
        if self._sink is not None:
            self._received += 1
            self._sink(event)
            return
        with self._cond:
            self._received += 1
            if len(self._events) >= self._max_buffer:
                if not self._dropped:
                    log.debug("listen stream %s: queue full, dropping events (%s)", self.id, self._overflow)
                self._dropped += 1
                if self._overflow == "drop_newest":
                    return
                self._events.popleft()
            self._events.append(event)
            self._cond.notify_all()


def check_buffer_options(max_buffer: object, overflow: object) -> None:
    """Validate the queue options of a subscription."""
    if isinstance(max_buffer, bool) or not isinstance(max_buffer, int):
        raise TypeError(f"max_buffer must be an int, got {max_buffer!r}")
    if max_buffer < 1:
        raise ValueError(f"max_buffer must be at least 1, got {max_buffer}")
    if overflow not in OVERFLOW_MODES:
        raise ValueError(f"overflow must be one of {', '.join(OVERFLOW_MODES)}, got {overflow!r}")
