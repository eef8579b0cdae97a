"""The direct transport: an in-process server, with every message still serialized to JSON and
back, so what crosses is exactly what a wire would carry.

A request without a timeout runs in the caller's thread. A request with one runs on one of the
transport's long-lived workers while the caller waits with its deadline, so a request that stalls
is abandoned at its deadline. An abandoned request (its deadline passed, or the caller was
interrupted) has its exchange cancelled, as a closed connection would show the server, and, unless
the caller said it must not be, the server is also handed the ``notifications/cancelled`` a wire
would carry (see `Transport.request`). No request costs a thread: a worker that finishes waits for
the next one. The pool grows only while requests overlap (a stalled one keeps its worker), and
keeps at most `MAX_IDLE` idle workers. Listen streams run on the same workers. Notifications the
server sends on a request that is not a stream go to the client (`Transport.deliver`, with that
request's id as their origin).
"""

from __future__ import annotations

import functools
import itertools
import logging
import queue
import threading
from collections.abc import Callable, Mapping
from typing import Any

from mcp_tasks._clock import Deadline, wait_sliced
from mcp_tasks._errors import RequestTimeout, TransportError
from mcp_tasks._exchange import Exchange, ServesMessages
from mcp_tasks._threads import PREFIX, join_all
from mcp_tasks._wire import dumps, loads, malformed
from mcp_tasks.transports._base import (
    Message,
    QueueStream,
    RequestId,
    Sent,
    Stream,
    Transport,
    closed_error,
    request_ids,
)

__all__ = ["DirectTransport"]

log = logging.getLogger("mcp_tasks")

CLOSE_TIMEOUT = 5.0
MAX_IDLE = 8
"""Idle workers kept for the next requests; one more that goes idle ends."""


def _over_the_wire(message: Message) -> Message:
    copied = loads(dumps(message))
    if not isinstance(copied, dict):
        raise TransportError(f"the server sent a {type(copied).__name__}, not a JSON object")
    return copied


_Job = tuple[Callable[[], None], threading.Event]


class _Workers:
    """Long-lived threads that run jobs; a job takes an idle one, or starts one if none is idle."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[_Job | None]] = []
        self._threads: set[threading.Thread] = set()  # the workers not yet on their way out
        self._started: list[threading.Thread] = []  # every worker not yet known to have ended
        self._numbers = itertools.count(1)
        self._closed = False

    def run(self, job: Callable[[], None], done: threading.Event) -> None:
        """Run `job` on a worker, then set `done` (once the worker is ready for the next job, so
        a caller that goes on at once finds it idle). TransportError once closed.
        """
        with self._lock:
            if self._closed:
                raise closed_error()
            if self._idle:
                self._idle.pop().put((job, done))
                return
            inbox: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
            inbox.put((job, done))
            # Registered before it starts, so an interrupt that lands while it starts (the job
            # can raise one in the caller's thread at once) leaves no worker untracked. A worker
            # leaves `_threads` a moment before it ends: `close` joins from `_started`.
            thread = threading.Thread(
                target=lambda: self._work(inbox), name=f"{PREFIX}{self._name}-{next(self._numbers)}", daemon=True
            )
            self._threads.add(thread)
            self._started = [t for t in self._started if t.is_alive()]
            self._started.append(thread)
            thread.start()

    def _work(self, inbox: queue.SimpleQueue[_Job | None]) -> None:
        done: threading.Event | None = None
        try:
            while True:
                item = inbox.get()
                if item is None:
                    return
                job, done = item
                try:
                    job()
                except BaseException:  # a job hands its own errors over; this is a last resort
                    log.exception("a direct-transport job failed")
                with self._lock:
                    if self._closed or len(self._idle) >= MAX_IDLE:
                        return
                    self._idle.append(inbox)
                done.set()
                done = None
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())
            if done is not None:
                done.set()

    @property
    def count(self) -> int:
        """How many workers are alive (idle or busy)."""
        with self._lock:
            return len(self._threads)

    def close(self, timeout: float) -> None:
        """Stop the idle workers; busy ones stop after their job. Joins them all within `timeout`."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            threads = [t for t in self._started if t.ident is not None]  # (an interrupted start never ran)
        for inbox in idle:
            inbox.put(None)
        join_all(threads, timeout)


class DirectTransport(Transport):
    """Talks to a server object in this process."""

    def __init__(self, server: ServesMessages, *, principal: str | None = None) -> None:
        if not callable(getattr(server, "handle", None)):
            raise TypeError(f"a direct server needs a handle(message, exchange) method, got {server!r}")
        self._server = server
        self._principal = principal
        self._lock = threading.Lock()
        self._inflight: dict[Exchange, RequestId | None] = {}  # streams: None
        self._workers = _Workers("direct")
        self._closed = False

    def _request(self, message: Message, deadline: Deadline, headers: Mapping[str, str] | None, sent: Sent) -> Message:
        """See `Transport.request`. An abandoned request's exchange is cancelled (the server sees
        what a closed connection would show it) and leaves the in-flight map.
        """
        self._check_open()
        timeout = deadline.step()
        wire = _over_the_wire(message)
        key = message.get("id")
        origin = key if isinstance(key, (str, int)) and not isinstance(key, bool) else None
        exchange = Exchange(functools.partial(self._deliver_notification, origin=origin), self._principal)
        with self._lock:
            self._check_open()
            self._inflight[exchange] = key
        try:
            if timeout is None:
                sent.reached = True
                try:
                    response = self._server.handle(wire, exchange)
                except Exception:
                    sent.reached = False  # the server is done with it: it failed it
                    raise
                return self._answer(response)
            outcome: dict[str, Any] = {}
            done = threading.Event()

            def job() -> None:
                try:
                    outcome["response"] = self._server.handle(wire, exchange)
                except BaseException as exc:  # handed to the caller's thread
                    outcome["error"] = exc

            sent.reached = True  # from here on it may run: an interrupt can land before run returns
            try:
                self._workers.run(job, done)
            except TransportError:
                sent.reached = False
                raise
            if not wait_sliced(done, deadline.remaining()):
                raise RequestTimeout(deadline.timeout or timeout)
            if "error" in outcome:
                sent.reached = False  # the server failed the request: nothing of it runs on
                raise outcome["error"]
            return self._answer(outcome["response"])
        except BaseException:
            exchange.cancel()
            raise
        finally:
            with self._lock:
                self._inflight.pop(exchange, None)

    @property
    def in_flight(self) -> frozenset[RequestId]:
        """See `Transport.in_flight`."""
        with self._lock:
            return request_ids(self._inflight.values())

    def _deliver_cancel(self, message: Message, deadline: Deadline) -> None:
        """See `Transport._deliver_cancel`: the server handles the notice on a worker, waited for
        until `deadline` at most (on the cancel sender's thread, never the caller's).
        """
        wire = _over_the_wire(message)
        done = threading.Event()

        def job() -> None:
            try:
                self._server.handle(wire, Exchange(principal=self._principal))
            except Exception as exc:
                log.debug("the server failed on a notifications/cancelled: %r", exc)

        self._workers.run(job, done)
        if not wait_sliced(done, deadline.remaining()):
            log.debug("the server did not take the notifications/cancelled within %.1fs", self.cancel_timeout)

    def notify(self, message: Message, deadline: Deadline | None = None) -> None:
        """See `Transport.notify`."""
        self._check_open()
        self._server.handle(_over_the_wire(message), Exchange(principal=self._principal))

    def _open_stream(self, message: Message, deadline: Deadline, sent: Sent) -> Stream:
        """See `Transport.open_stream`. The server side runs on a worker until it ends."""
        self._check_open()
        wire = _over_the_wire(message)
        finished = threading.Event()

        def on_close() -> None:
            exchange.cancel()
            finished.wait(CLOSE_TIMEOUT)

        stream = QueueStream(on_close)

        def feed(notification: Message) -> None:
            stream.feed(_over_the_wire(notification))

        exchange = Exchange(feed, self._principal)

        def job() -> None:
            try:
                response = self._server.handle(wire, exchange)
                if response is not None:
                    stream.feed(_over_the_wire(response))
                stream.end()
            except BaseException as exc:
                stream.end(TransportError(f"the server failed while serving the stream: {exc!r}"))
            finally:
                with self._lock:
                    self._inflight.pop(exchange, None)

        with self._lock:
            self._check_open()
            self._inflight[exchange] = None  # a stream, not a request waiting for its answer
        try:
            self._workers.run(job, finished)
        except TransportError:
            with self._lock:
                self._inflight.pop(exchange, None)
            raise
        sent.reached = True
        return stream

    def close(self) -> None:
        """Send the notices of abandoned requests still waiting (within their budgets), cancel what
        is still running on the server for this client and join the workers.
        """
        self._stop_cancels()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            inflight = list(self._inflight)
        for exchange in inflight:
            exchange.cancel()
        self._workers.close(CLOSE_TIMEOUT)

    @property
    def workers(self) -> int:
        """How many worker threads the transport has (for tests and benchmarks)."""
        return self._workers.count

    def _deliver_notification(self, message: Message, origin: RequestId | None) -> None:
        """A notification the server sent on a plain request (`origin`): the client's, like any
        unsolicited one.
        """
        try:
            carried = _over_the_wire(message)
        except ValueError as exc:  # no wire could carry it: it never reaches the client
            log.debug("dropped a server notification no wire can carry: %s", exc)
            return
        self.deliver(carried, origin)

    def _answer(self, response: Message | None) -> Message:
        if response is None:
            raise TransportError("the server sent no response to the request")
        try:
            return _over_the_wire(response)
        except ValueError as exc:  # what no wire could carry (NaN, a lone surrogate, too deep)
            raise malformed(f"The server sent a response no wire can carry: {exc}") from None

    def _check_open(self) -> None:
        if self._closed:
            raise closed_error()
