"""The plain path (see `transports._sender`): keep-alive connections to one origin, the request
written in one send, the answer parsed by the stdlib's `http.client.HTTPResponse`.

A poll is the hot path of a tasks client, and most of its client-side cost was the layers around
the socket (urllib3's pool and response, http.client's header-by-header request writer). When
nothing of requests' applies (no auth, hooks, cookies or proxy), a message goes straight to a
connection kept here. Each socket is attached to the calling thread's `Watch` (see
`transports._watchdog`) as it connects (before TLS) or is reused, so the one deadline holds here
as on every other path.

A connection is taken from the idle list only when its socket has nothing to read (an idle
connection the server closed reads as EOF: it is closed and a new one made, as urllib3 does), and
goes back only after its answer was read to a clean end (`transports._body.Response.finish`).
TLS follows requests' settings: `verify` True (requests' CA bundle, certifi's), a CA file or
directory, or False; `cert` a client certificate file or a (cert, key) pair.
"""

from __future__ import annotations

import http.client
import os
import select
import socket
import ssl
import threading
from collections.abc import Mapping

from mcp_tasks.transports._head import LeanResponse
from mcp_tasks.transports._watchdog import attach_current, connect

__all__ = ["DirectPool"]


class DirectPool:
    """Keep-alive connections to one origin; at most `max_idle` idle ones are kept."""

    def __init__(
        self,
        scheme: str,
        host: str,
        port: int | None,
        *,
        verify: bool | str = True,
        cert: str | tuple[str, str] | None = None,
        max_idle: int = 4096,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._host = host
        self._port = port or (443 if scheme == "https" else 80)
        shown = f"[{host}]" if ":" in host else host
        default = self._port == (443 if scheme == "https" else 80)
        self._host_header = shown if default else f"{shown}:{self._port}"
        self._base = dict(headers or {})
        self._heads: dict[tuple[str, tuple[str, ...]], str] = {}
        self._context = _tls_context(verify, cert) if scheme == "https" else None
        self._idle: list[socket.socket] = []
        self._lock = threading.Lock()
        self._max_idle = max_idle
        self._closed = False

    def post(
        self, path: str, body: bytes, headers: Mapping[str, str], timeout: float | None
    ) -> tuple[http.client.HTTPResponse, socket.socket]:
        """Send one POST with the pool's `headers` and the request's own (which replace any of
        the pool's of the same name); the response (status and headers read, body not) and its
        socket, which the caller hands back to `release`. A header with a line break is a
        ValueError.
        """
        names = tuple(headers)
        start = self._heads.get((path, names))
        if start is None:
            start = self._start(path, names)
        own = "".join([f"{name}: {value}\r\n" for name, value in headers.items()])
        if own.count("\n") != len(names) or own.count("\r") != len(names):
            raise ValueError("an HTTP header value must not contain a line break")
        head = f"{start}{own}Content-Length: {len(body)}\r\n\r\n"
        sock = self._take(timeout)
        response = None
        try:
            sock.sendall(head.encode("latin-1") + body)
            response = LeanResponse(sock, method="POST")
            response.begin()
            return response, sock
        except BaseException:
            if response is not None:
                response.close()  # its reader holds the socket open
            sock.close()
            raise

    def _start(self, path: str, names: tuple[str, ...]) -> str:
        """The request line, Host and the pool's headers that `names` do not replace (made once
        per path and set of names: a poll sends the same ones every time).
        """
        replaced = {name.lower() for name in names}
        lines = [f"POST {path} HTTP/1.1\r\nHost: {self._host_header}\r\n"]
        lines.extend(f"{name}: {value}\r\n" for name, value in self._base.items() if name.lower() not in replaced)
        start = "".join(lines)
        if start.count("\n") != len(lines) + 1 or start.count("\r") != len(lines) + 1:
            raise ValueError("an HTTP header value must not contain a line break")
        if len(self._heads) < _MAX_HEADS:
            self._heads[(path, names)] = start  # a plain dict: a racing thread makes the same string
        return start

    def release(self, sock: socket.socket, keep: bool) -> None:
        """Take a connection back: kept for the next request, or closed."""
        if keep:
            with self._lock:
                if not self._closed and len(self._idle) < self._max_idle:
                    self._idle.append(sock)
                    return
        sock.close()

    def close(self) -> None:
        """Close every idle connection (one in use is closed when it comes back)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for sock in idle:
            sock.close()

    def _take(self, timeout: float | None) -> socket.socket:
        while True:
            with self._lock:
                sock = self._idle.pop() if self._idle else None
            if sock is None:
                return self._connect(timeout)
            if _readable(sock):
                sock.close()  # closed by the server while idle (or it sent what no one asked for)
                continue
            sock.settimeout(timeout)
            attach_current(sock)
            return sock

    def _connect(self, timeout: float | None) -> socket.socket:
        # Watched from before the connect on (the TLS handshake too); no Nagle delay, as urllib3.
        sock = connect((self._host, self._port), timeout, options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
        try:
            if self._context is not None:
                tls = self._context.wrap_socket(sock, server_hostname=self._host)
                attach_current(tls)
                return tls
            return sock
        except BaseException:
            sock.close()
            raise


_MAX_HEADS = 64
"""Request heads kept (one per path and set of per-request header names: a handful in practice)."""


def _readable(sock: socket.socket) -> bool:
    """Whether an idle socket has something to read (EOF included) right now."""
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        ready, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(ready)


def _tls_context(verify: bool | str, cert: str | tuple[str, str] | None) -> ssl.SSLContext:
    """An SSL context with requests' meaning of `verify` and `cert`."""
    if verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif isinstance(verify, str):
        if os.path.isdir(verify):
            context = ssl.create_default_context(capath=verify)
        else:
            context = ssl.create_default_context(cafile=verify)
    else:
        from requests.utils import DEFAULT_CA_BUNDLE_PATH

        context = ssl.create_default_context(cafile=DEFAULT_CA_BUNDLE_PATH)
    if isinstance(cert, tuple):
        context.load_cert_chain(cert[0], cert[1])
    elif cert:
        context.load_cert_chain(cert)
    return context
