"""The 2025-era session's GET stream, for `HttpTransport`: a worker that keeps it open (reconnecting
after a drop, with ``Last-Event-ID`` and the server's ``retry:`` delay) and hands each message on,
and the holder that keeps one at a time (a new session's replacing the old one's), which a
session's first request waits for, cut and joined at the end.

A module of its own because the standing stream is a job apart from the session's headers
(`transports._session`) and from sending messages and reading their answers (`transports.http`).
"""

from __future__ import annotations

import itertools
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

from mcp_tasks._clock import Deadline, wait_sliced
from mcp_tasks._threads import start_thread
from mcp_tasks._wire import loads
from mcp_tasks.transports._failures import describe
from mcp_tasks.transports._sse import SseDecoder
from mcp_tasks.transports._watchdog import Watch, Watchdog

__all__ = [
    "DEFAULT_RECONNECT",
    "MAX_RECONNECT",
    "Answer",
    "Deliver",
    "GetResponse",
    "GetStream",
    "GetStreamHolder",
    "OpenGet",
    "event_json",
]

log = logging.getLogger("mcp_tasks")

DEFAULT_RECONNECT = 1.0
MAX_RECONNECT = 30.0
MAX_FAILURES = 5


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
                if decoder.retry is not None:
                    retry = decoder.retry
                if decoder.last_id is not None:
                    self._last_id = decoder.last_id
        except Exception as exc:
            if not self._stop.is_set():
                log.debug("the GET stream broke: %s", describe(exc))
        return retry

    def _take(self, data: str) -> None:
        message = event_json(data)
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


OpenWatched = Callable[[dict[str, str], Watch], GetResponse]


class GetStreamHolder:
    """Holds the session's one `GetStream`: `begin` opens it (GETs by `open_get`, each under the
    stream's own watch of `watchdog`; messages to `deliver`, responses to `answer`), `close` ends
    it for good.
    """

    def __init__(self, open_get: OpenWatched, deliver: Deliver, answer: Answer, watchdog: Watchdog, name: str) -> None:
        self._open_get = open_get
        self._deliver = deliver
        self._answer = answer
        self._watchdog = watchdog
        self._name = name
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._closed = False
        self._stream: GetStream | None = None
        self._watch: Watch | None = None

    def begin(self, headers: dict[str, str]) -> None:
        """Keep a GET stream open with the session's `headers`; one with other headers (a new
        session's) replaces the old one. Nothing once closed.
        """
        with self._lock:
            old, old_watch = self._stream, self._watch
            if self._closed or (old is not None and old.headers == headers):
                return
            self._watch = watch = self._watchdog.watch(None)
            self._stream = GetStream(
                lambda sent: self._open_get(sent, watch),
                self._deliver,
                self._answer,
                headers,
                f"{self._name}-{next(self._numbers)}",
            )
        if old is not None:
            _stop(old, old_watch)

    def wait_opened(self, deadline: Deadline, at_most: float) -> None:
        """Wait (`at_most` seconds, within `deadline`) until the stream has an answer, if there is
        a stream and it has none yet.
        """
        stream = self._stream
        if stream is not None and not stream.opened.is_set():
            wait_sliced(stream.opened, deadline.bound(at_most))

    def close(self) -> None:
        """End the stream, and refuse any other from now on."""
        with self._lock:
            self._closed = True
            stream, self._stream = self._stream, None
            watch, self._watch = self._watch, None
        if stream is not None:
            _stop(stream, watch)


def _stop(stream: GetStream, watch: Watch | None) -> None:
    """End a session's GET stream: cut its exchange (even one still waiting for its answer), then
    stop and join its worker.
    """
    if watch is not None:
        watch.fire()
    stream.close()


def event_json(data: str) -> dict[str, Any] | None:
    """The JSON object an SSE event's `data` holds; None (and a warning) when it holds none."""
    try:
        message = loads(data)
    except ValueError:
        log.warning("ignoring an SSE event that is not JSON")
        return None
    if not isinstance(message, dict):
        log.warning("ignoring an SSE event that is not a JSON object")
        return None
    return message
