"""The HTTP side of a handshake (2025-era) session, for `HttpTransport`.

A 2025-era Streamable HTTP server keeps a session: its id comes back on the ``initialize`` answer
(``Mcp-Session-Id``; never taken from an earlier error answer, which some servers stamp with a
throwaway id), and every later request carries it with ``MCP-Protocol-Version``. The server sends
its own requests and notifications on POST answers (SSE) and on a separate GET stream, which some
send input requests on only: `GetStream` keeps that stream open (reconnecting after a drop, with
``Last-Event-ID`` and the server's ``retry:`` delay) until the session ends, and ``DELETE`` ends
it. A 404 on a request that carried the session id means the server expired the session:
`SessionExpired` tells the client to set one up again. A POST answer (SSE) that ends before its
response, after the server gave its events ids, is resumed (SEP-1699): `resume_answer` waits the
server's ``retry:`` delay and GETs the stream again with ``Last-Event-ID``, within the call's deadline.
"""

from __future__ import annotations

import functools
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

from mcp_tasks._clock import Deadline, wait_sliced
from mcp_tasks._errors import McpError, RequestTimeout, TransportError
from mcp_tasks._threads import start_thread
from mcp_tasks._wire import loads
from mcp_tasks.transports._failures import describe
from mcp_tasks.transports._sse import SseDecoder, SseEvent

__all__ = ["Awaited", "GetStream", "LegacySession", "StreamMark", "resume_answer"]

log = logging.getLogger("mcp_tasks")

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
DEFAULT_RECONNECT = 1.0
MAX_RECONNECT = 30.0
MAX_FAILURES = 5
MAX_RESUMES = 5


def _visible_ascii(value: str) -> bool:
    return bool(value) and all(0x21 <= ord(c) <= 0x7E for c in value)


class LegacySession:
    """What one handshake session adds to each HTTP request, and what it takes from answers.

    A session is ours when an ``initialize`` answer gave its id (we DELETE it at the end), or
    joined when the id came from elsewhere (`join`): another process owns it, so it is never
    deleted from here.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.version: str | None = None
        self.session_id: str | None = None
        self.joined = False
        self.lost = False  # the server expired the session; no new one yet (see `expire`)

    @property
    def active(self) -> bool:
        """True from the ``initialize`` answer (or a `join`) on, until `end`: requests carry the
        session's headers, and none of the 2026-07-28 ones.
        """
        return self.version is not None or self.session_id is not None

    def join(self, session_id: str) -> None:
        """Carry `session_id`, a session another process set up, from the first request on."""
        if not isinstance(session_id, str) or not _visible_ascii(session_id):
            raise ValueError(f"session_id must be a non-empty string of visible ASCII, got {session_id!r}")
        with self._lock:
            self.session_id = session_id
            self.joined = True

    def headers(self, method: object) -> dict[str, str]:
        """The session's headers for one message (none for ``initialize`` itself)."""
        if method == "initialize":
            return {}
        with self._lock:
            return self._headers()

    def _headers(self) -> dict[str, str]:
        found: dict[str, str] = {}
        if self.session_id is not None:
            found[SESSION_HEADER] = self.session_id
        if self.version is not None:
            found[VERSION_HEADER] = self.version
        return found

    def learn(self, method: object, status: int, headers: Any) -> None:
        """Take the session id from a successful ``initialize`` answer (only from that): a new
        session, ours, which replaces whatever session was carried before.
        """
        if method != "initialize" or status >= 300:
            return
        value = headers.get(SESSION_HEADER)
        with self._lock:
            self.joined = self.lost = False
            if isinstance(value, str) and _visible_ascii(value):
                self.session_id = value
            elif value is not None:
                log.warning("ignoring an Mcp-Session-Id that is not visible ASCII")
                self.session_id = None
            else:
                self.session_id = None

    def expired(self, sent: dict[str, str], status: int) -> bool:
        """Whether a `status` answer to a request sent with `sent` headers means an expired session."""
        return status == 404 and SESSION_HEADER in sent

    def expire(self) -> None:
        """The server expired the session (a 404 to a message that carried its id): forget it,
        never DELETE it, and refuse every message but ``initialize`` until a new session (see
        `refuses`), so whoever sends next learns it and sets one up again.
        """
        with self._lock:
            self.session_id, self.version, self.joined = None, None, False
            self.lost = True

    def refuses(self, method: object) -> bool:
        """Whether a message of `method` is refused for a session the server expired."""
        return self.lost and method != "initialize"

    def keep(self) -> None:
        """Leave the session open at the end (no DELETE): its tasks are to be resumed elsewhere."""
        with self._lock:
            self.joined = True

    def begin(self, version: str) -> None:
        """The handshake is done at `version` (a joined session keeps its id)."""
        with self._lock:
            self.version = version

    def end(self) -> dict[str, str] | None:
        """Forget the session; returns the headers a ``DELETE`` of it carries (its id and
        ``MCP-Protocol-Version``), or None when there is none of ours to delete (no id, or a
        joined session, which its owner ends).
        """
        with self._lock:
            headers = self._headers() if self.session_id is not None and not self.joined else None
            self.session_id, self.version, self.joined = None, None, False
            return headers


class GetResponse:
    """What `GetStream` needs of one GET answer: its status, a way to read it, a way to cut it."""

    def __init__(self, status: int, chunks: Iterator[bytes], sock: socket.socket | None, close: Callable[[], None]):
        self.status = status
        self.chunks = chunks
        self.sock = sock
        self._close = close

    def close(self) -> None:
        """Cut the answer; wakes a reader blocked in `chunks`."""
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        try:
            self._close()
        except Exception as exc:  # a reader may be inside it; it is going away anyway
            log.debug("closing the GET stream: %s", describe(exc))


OpenGet = Callable[[dict[str, str]], GetResponse]
Deliver = Callable[[dict[str, Any]], None]
Answer = Callable[[dict[str, Any]], bool]


class GetStream:
    """A worker that keeps the session's GET stream open and hands each message to `deliver`;
    a response (which belongs on its request's own stream) goes to `answer`, which takes it when
    a request still waits for it (a server that sends a resumed answer on whichever GET comes
    next) and says False otherwise.

    `opened` is set once the first GET has an answer (or failed, or the worker stopped): until
    then the server may not know the stream, so the transport holds its first request back.
    """

    def __init__(self, open_get: OpenGet, deliver: Deliver, answer: Answer, headers: dict[str, str], name: str) -> None:
        self._open = open_get
        self._deliver = deliver
        self._answer = answer
        self.headers = dict(headers)  # the session's, as given
        self._headers = {**headers, "Accept": "text/event-stream"}
        self._stop = threading.Event()
        self.opened = threading.Event()
        self._lock = threading.Lock()
        self._current: GetResponse | None = None
        self._last_id: str | None = None
        self._thread = start_thread(f"http-get-{name}", self._run)

    def close(self) -> None:
        """Stop the worker and wait for it (bounded)."""
        self._stop.set()
        with self._lock:
            current = self._current
        if current is not None:
            current.close()
        if self._thread is not threading.current_thread():
            self._thread.join(5.0)

    def _run(self) -> None:
        try:
            self._keep_open()
        finally:
            self.opened.set()

    def _keep_open(self) -> None:
        failures = 0
        delay = DEFAULT_RECONNECT
        while not self._stop.is_set():
            headers = dict(self._headers)
            if self._last_id is not None:
                headers["Last-Event-ID"] = self._last_id
            try:
                response = self._open(headers)
            except Exception as exc:
                self.opened.set()
                failures += 1
                log.debug("the GET stream did not open: %s", describe(exc))
                if failures >= MAX_FAILURES or self._stop.wait(delay):
                    return
                continue
            self.opened.set()
            if response.status in (404, 405) or response.status >= 400:
                response.close()
                # 405: the server has no GET stream; 404: the session is gone (the next request sees it).
                log.debug("the server answered the GET stream with HTTP %s", response.status)
                return
            with self._lock:
                if self._stop.is_set():
                    response.close()
                    return
                self._current = response
            retry = self._read(response)
            with self._lock:
                self._current = None
            response.close()
            if retry is not None:
                delay = min(retry / 1000, MAX_RECONNECT)
            failures = 0
            if self._stop.wait(delay):
                return
            log.debug("the GET stream ended; reconnecting")

    def _read(self, response: GetResponse) -> int | None:
        """Read one GET answer to its end; returns the server's last ``retry:`` (ms), if any."""
        decoder = SseDecoder()
        retry: int | None = None
        try:
            for chunk in response.chunks:
                for event in decoder.feed(chunk):
                    if event.id is not None:
                        self._last_id = event.id
                    if event.retry is not None:
                        retry = event.retry
                    if event.event == "message" and event.data.strip():
                        self._take(event.data)
                pending_retry = getattr(decoder, "_retry", None)
                if isinstance(pending_retry, int):
                    retry = pending_retry
                pending_id = getattr(decoder, "_last_id", None)
                if isinstance(pending_id, str):
                    self._last_id = pending_id
        except Exception as exc:
            if not self._stop.is_set():
                log.debug("the GET stream broke: %s", describe(exc))
        return retry

    def _take(self, data: str) -> None:
        message = _parse(data)
        if message is None:
            return
        try:
            if "method" in message:
                self._deliver(message)
            elif not self._answer(message):
                # A response belongs on its request's own stream (or a resumption of it).
                log.warning("ignoring a response the server sent on the session's GET stream")
        except Exception:
            log.exception("delivering a GET stream message failed")


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
            raise TransportError("the client is closed")
        return self._answer


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
            message = _parse(event.data)
            if message is None:
                continue
            if "method" in message:
                deliver(message)
            elif message.get("id") == request_id:
                return message
            else:
                log.debug("ignored a response to another request on a resumed stream")


def _parse(data: str) -> dict[str, Any] | None:
    try:
        message = loads(data)
    except ValueError:
        log.warning("ignoring an SSE event that is not JSON")
        return None
    if not isinstance(message, dict):
        log.warning("ignoring an SSE event that is not a JSON object")
        return None
    return message
