"""An answer that comes another way, for `HttpTransport` on a 2025-era session: a request waiting
for its answer (`Awaited`), which the session's GET stream may bring, and the resumption of a POST
answer (SSE) that ended before its response (SEP-1699): `resume_answer` waits the server's
``retry:`` delay and GETs the stream again with ``Last-Event-ID``, within the call's deadline.

A module of its own because waiting for an answer elsewhere is one idea, apart from keeping the
session (`transports._session`) and its standing GET stream (`transports._get_stream`).
"""

from __future__ import annotations

import functools
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

from mcp_tasks._clock import Deadline, wait_sliced
from mcp_tasks._errors import McpError, RequestTimeout, TransportError
from mcp_tasks._wire import valid_id
from mcp_tasks.transports._base import RequestId, closed_error, request_ids
from mcp_tasks.transports._failures import describe
from mcp_tasks.transports._get_stream import (
    DEFAULT_RECONNECT,
    MAX_RECONNECT,
    Deliver,
    GetResponse,
    OpenGet,
    event_json,
)
from mcp_tasks.transports._sse import SseDecoder, SseEvent

__all__ = ["Awaited", "AwaitedRequests", "StreamMark", "resume_answer"]

log = logging.getLogger("mcp_tasks")

MAX_RESUMES = 5


class StreamMark:
    """How far an SSE answer got: the last event id the server gave, and its ``retry:`` delay."""

    def __init__(self) -> None:
        self.last_id: str | None = None
        self.retry_ms: int | None = None

    def see(self, event: SseEvent) -> None:
        """Take one dispatched event's id and retry (priming events included)."""
        if event.id is not None:
            self.last_id = event.id
        if event.retry is not None:
            self.retry_ms = event.retry

    @property
    def delay(self) -> float:
        """Seconds to wait before reconnecting: the server's ``retry:``, else the default."""
        if self.retry_ms is None:
            return DEFAULT_RECONNECT
        return min(self.retry_ms / 1000, MAX_RECONNECT)


class Awaited:
    """One HTTP request waiting for its answer: a way to cut the read under way (its POST answer,
    or the GET resuming it), and the answer when it came another way (on the session's GET
    stream) or the end when the transport closed. Either cuts the read, which then finds it here.
    """

    def __init__(self, request_id: Any) -> None:
        self.request_id = request_id
        self._lock = threading.Lock()
        self._cut: Callable[[], None] | None = None
        self._answer: dict[str, Any] | None = None
        self._aborted = False
        self._settled = False
        self._event: threading.Event | None = None  # made only for whoever waits (rare: a resumption)

    @property
    def settled(self) -> threading.Event:
        """Set once the answer came another way or the transport closed (to wait on)."""
        with self._lock:
            if self._event is None:
                self._event = threading.Event()
                if self._settled:
                    self._event.set()
            return self._event

    def reading(self, cut: Callable[[], None] | None) -> None:
        """`cut` wakes the read now under way (None: no read now). Once this returns with None,
        no cut runs any more (a connection going back to the pool is never cut).
        """
        with self._lock:
            self._cut = cut
            if cut is not None and self._settled:
                cut()

    def answered(self, message: dict[str, Any]) -> bool:
        """The answer came another way; False when the request was settled already."""
        return self._settle(message)

    def abort(self) -> None:
        """The transport is closing: the request fails."""
        self._settle(None)

    def _settle(self, message: dict[str, Any] | None) -> bool:
        with self._lock:
            if self._settled:
                return False
            self._answer, self._aborted = message, message is None
            self._settled = True
            if self._event is not None:
                self._event.set()
            if self._cut is not None:
                self._cut()  # under the lock: see `reading`
        return True

    def outcome(self) -> dict[str, Any] | None:
        """The answer that came another way; None when none came; `TransportError` when the
        transport closed under the request.
        """
        if self._aborted:
            raise closed_error()
        return self._answer


class AwaitedRequests:
    """The requests of one transport waiting for their answers, by id: where a response that came
    another way finds its request (`answer`), and where `abort` fails them all at the end.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[object, Awaited] = {}
        self._closed = False

    def add(self, request_id: Any) -> Awaited:
        """A request now waiting; `TransportError` once `abort` ran."""
        awaited = Awaited(request_id)
        with self._lock:
            if self._closed:
                raise closed_error()
            self._waiting[request_id] = awaited
        return awaited

    def remove(self, awaited: Awaited) -> None:
        """The request no longer waits (a newer one with its id is kept)."""
        with self._lock:
            if self._waiting.get(awaited.request_id) is awaited:
                del self._waiting[awaited.request_id]

    def ids(self) -> frozenset[RequestId]:
        """The ids of the requests waiting (see `Transport.in_flight`)."""
        with self._lock:
            return request_ids(self._waiting)

    def answer(self, message: dict[str, Any]) -> bool:
        """`message`, a response that came another way, answers the request still waiting for it
        (False when none is).
        """
        key = message.get("id")
        with self._lock:
            awaited = self._waiting.get(key) if valid_id(key) else None
        return awaited is not None and awaited.answered(message)

    def abort(self) -> None:
        """The transport is closing: every request waiting fails, and no other may wait."""
        with self._lock:
            self._closed = True
            waiting = list(self._waiting.values())
        for awaited in waiting:
            awaited.abort()


def resume_answer(
    open_get: OpenGet,
    headers: dict[str, str],
    awaited: Awaited,
    mark: StreamMark,
    deadline: Deadline,
    deliver: Deliver,
) -> dict[str, Any]:
    """The response to the `awaited` request, whose POST answer ended without it: after the
    server's ``retry:`` delay, GET the stream again with ``Last-Event-ID`` and read on; the
    server's own messages on it go to `deliver`. Every wait and read is within `deadline`
    (RequestTimeout), and ends early when the answer comes another way (see `Awaited`).
    """
    request_id = awaited.request_id
    for _ in range(MAX_RESUMES):
        found = _wait_within(deadline, mark.delay, awaited)
        if found is not None:
            return found
        assert mark.last_id is not None
        sent = {**headers, "Accept": "text/event-stream", "Last-Event-ID": mark.last_id}
        log.debug("resuming the answer to #%s after event %s", request_id, mark.last_id)
        try:
            response = open_get(sent)
        except RequestTimeout as exc:
            raise RequestTimeout(deadline.timeout or 0.0) from exc
        except McpError:
            raise  # the transport's own verdict: a cut, a connection refused
        except Exception as exc:
            raise TransportError(f"could not resume the SSE answer: {describe(exc)}", cause=exc) from exc
        try:
            if response.status != 200:
                raise TransportError(
                    f"the server answered the resumption GET with HTTP {response.status}",
                    data={"status": response.status},
                )
            awaited.reading(functools.partial(_shutdown, response.sock))
            try:
                found = _read_for(response, request_id, mark, deadline, deliver)
            except McpError:
                found = awaited.outcome()
                if found is None:
                    raise
            finally:
                awaited.reading(None)
        finally:
            response.close()
        if found is None:
            found = awaited.outcome()
        if found is not None:
            return found
        log.debug("the resumed stream ended without the response; resuming again")
    raise TransportError(f"the SSE answer did not come back after {MAX_RESUMES} resumptions")


def _shutdown(sock: socket.socket | None) -> None:
    """Wake a read blocked on `sock` (from any thread)."""
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _wait_within(deadline: Deadline, seconds: float, awaited: Awaited) -> dict[str, Any] | None:
    """Wait `seconds` (the server's reconnection delay), within the deadline (then
    RequestTimeout); the answer if it came another way meanwhile.
    """
    if wait_sliced(awaited.settled, deadline.bound(seconds)):
        return awaited.outcome()
    if deadline.expired():
        raise RequestTimeout(deadline.timeout or 0.0)
    return None


def _read_for(
    response: GetResponse, request_id: object, mark: StreamMark, deadline: Deadline, deliver: Deliver
) -> dict[str, Any] | None:
    """Read a resumed stream until the response to `request_id` (None if the stream ends first)."""
    decoder = SseDecoder()
    chunks = iter(response.chunks)
    while True:
        if response.sock is not None:
            response.sock.settimeout(deadline.step())
        try:
            chunk = next(chunks, b"")
        except Exception as exc:
            if deadline.expired() or isinstance(exc, (TimeoutError, socket.timeout)) or "timed out" in str(exc):
                raise RequestTimeout(deadline.timeout or 0.0) from exc
            raise TransportError(f"the resumed SSE stream broke: {describe(exc)}", cause=exc) from exc
        if not chunk:
            return None
        for event in decoder.feed(chunk):
            mark.see(event)
            if event.event != "message" or not event.data.strip():
                continue
            message = event_json(event.data)
            if message is None:
                continue
            if "method" in message:
                deliver(message)
            elif message.get("id") == request_id:
                return message
            else:
                log.debug("ignored a response to another request on a resumed stream")
