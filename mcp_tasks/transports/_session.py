"""The HTTP side of a handshake (2025-era) session, for `HttpTransport`.

A 2025-era Streamable HTTP server keeps a session: its id comes back on the ``initialize`` answer
(``Mcp-Session-Id``; never taken from an earlier error answer, which some servers stamp with a
throwaway id), and every later request carries it with ``MCP-Protocol-Version``. The server sends
its own requests and notifications on POST answers (SSE) and on a separate GET stream, which some
send input requests on only: `GetStream` keeps that stream open (reconnecting after a drop, with
``Last-Event-ID`` and the server's ``retry:`` delay) until the session ends, and ``DELETE`` ends
it. A 404 on a request that carried the session id means the server expired the session:
`SessionExpired` tells the client to set one up again.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

from mcp_tasks._errors import TransportError
from mcp_tasks._threads import start_thread
from mcp_tasks._wire import loads
from mcp_tasks.transports._sse import SseDecoder

__all__ = ["GetStream", "LegacySession", "SessionExpired"]

log = logging.getLogger("mcp_tasks")

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
DEFAULT_RECONNECT = 1.0
MAX_RECONNECT = 30.0
MAX_FAILURES = 5


class SessionExpired(TransportError):
    """The server answered 404 to a request that carried the session id: the session is gone."""

    def __init__(self) -> None:
        super().__init__("The server expired the session (HTTP 404)", data={"status": 404})


def _visible_ascii(value: str) -> bool:
    return bool(value) and all(0x21 <= ord(c) <= 0x7E for c in value)


class LegacySession:
    """What one handshake session adds to each HTTP request, and what it takes from answers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.version: str | None = None
        self.session_id: str | None = None

    @property
    def active(self) -> bool:
        """True from the ``initialize`` answer on (until `end`): requests carry the session's
        headers, and none of the 2026-07-28 ones.
        """
        return self.version is not None or self.session_id is not None

    def headers(self, method: object) -> dict[str, str]:
        """The session's headers for one message (none for ``initialize`` itself)."""
        if method == "initialize":
            return {}
        with self._lock:
            found: dict[str, str] = {}
            if self.session_id is not None:
                found[SESSION_HEADER] = self.session_id
            if self.version is not None:
                found[VERSION_HEADER] = self.version
            return found

    def learn(self, method: object, status: int, headers: Any) -> None:
        """Take the session id from a successful ``initialize`` answer (only from that)."""
        if method != "initialize" or status >= 300:
            return
        value = headers.get(SESSION_HEADER)
        with self._lock:
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

    def begin(self, version: str) -> None:
        """The handshake is done at `version`."""
        with self._lock:
            self.version = version

    def end(self) -> str | None:
        """Forget the session; returns its id (for the DELETE) if there was one."""
        with self._lock:
            session_id, self.session_id, self.version = self.session_id, None, None
            return session_id


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
            log.debug("closing the GET stream: %r", exc)


OpenGet = Callable[[dict[str, str]], GetResponse]
Deliver = Callable[[dict[str, Any]], None]


class GetStream:
    """A worker that keeps the session's GET stream open and hands each message to `deliver`."""

    def __init__(self, open_get: OpenGet, deliver: Deliver, headers: dict[str, str], name: str) -> None:
        self._open = open_get
        self._deliver = deliver
        self._headers = {**headers, "Accept": "text/event-stream"}
        self._stop = threading.Event()
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
        failures = 0
        delay = DEFAULT_RECONNECT
        while not self._stop.is_set():
            headers = dict(self._headers)
            if self._last_id is not None:
                headers["Last-Event-ID"] = self._last_id
            try:
                response = self._open(headers)
            except Exception as exc:
                failures += 1
                log.debug("the GET stream did not open: %r", exc)
                if failures >= MAX_FAILURES or self._stop.wait(delay):
                    return
                continue
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
                log.debug("the GET stream broke: %r", exc)
        return retry

    def _take(self, data: str) -> None:
        try:
            message = loads(data)
        except ValueError:
            log.warning("ignoring a GET stream event that is not JSON")
            return
        if not isinstance(message, dict):
            log.warning("ignoring a GET stream event that is not a JSON object")
            return
        try:
            self._deliver(message)
        except Exception:
            log.exception("delivering a GET stream message failed")
