"""A small threaded HTTP/1.1 server with keep-alive and chunked streaming, for tests and demos on
127.0.0.1. It is a PEP 3333 gateway: it serves any WSGI app (generators and ``write()`` included),
and `wsgiref.validate` finds nothing wrong on either side. It knows nothing of MCP.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import logging
import socket
import sys
import threading
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from mcp_tasks._threads import start_thread
from mcp_tasks.server._wsgi_types import Environ, WsgiApp

__all__ = ["ThreadedWsgiServer"]

log = logging.getLogger("mcp_tasks.server")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body leave in one send, with Nagle off: no 40 ms delayed-ACK stalls.
    disable_nagle_algorithm = True
    wbufsize = 64 * 1024
    server: ThreadedWsgiServer

    def do_POST(self) -> None:
        self._run_wsgi()

    do_GET = do_DELETE = do_PUT = do_PATCH = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http: " + format, *args)

    def _run_wsgi(self) -> None:
        """Run the WSGI app for this request, as PEP 3333 asks of a gateway."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.send_error(411, "Content-Length required")
            self.close_connection = True
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self.send_error(400, "Bad Content-Length")
            self.close_connection = True
            return
        body = self.rfile.read(length) if length > 0 else b""
        _Response(self, self._environ(body)).run(self.server.app)

    def _environ(self, body: bytes) -> Environ:
        path, _, query = self.path.partition("?")
        environ: Environ = {
            "REQUEST_METHOD": self.command,
            "SCRIPT_NAME": "",
            "PATH_INFO": urllib.parse.unquote(path, "latin-1"),
            "QUERY_STRING": query,
            "SERVER_NAME": str(self.server.server_address[0]),
            "SERVER_PORT": str(self.server.server_address[1]),
            "SERVER_PROTOCOL": self.request_version,
            "SERVER_SOFTWARE": self.version_string(),
            "REMOTE_ADDR": str(self.client_address[0]),
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }
        for name, value in self.headers.items():
            key = "HTTP_" + name.upper().replace("-", "_")
            if key in ("HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"):
                continue
            # A header sent more than once is one variable, its values joined (as CGI does).
            environ[key] = f"{environ[key]},{value}" if key in environ else value
        return environ


class _Response:
    """One WSGI response: `start_response`, `write`, then the iterable, sent with the right framing.

    Headers go out with the first non-empty body chunk (or at the end), so an app may still change
    its mind with ``exc_info`` until then. Without a Content-Length the body is chunked (HTTP/1.1)
    or ended by closing the connection (HTTP/1.0). The iterable's ``close()`` is always called.
    """

    def __init__(self, handler: _Handler, environ: Environ) -> None:
        self.handler = handler
        self.environ = environ
        self.status: str | None = None
        self.headers: list[tuple[str, str]] = []
        self.sent = False
        self.chunked = False

    def start_response(
        self, status: str, headers: list[tuple[str, str]], exc_info: Any = None
    ) -> Callable[[bytes], None]:
        if exc_info:
            try:
                if self.sent:
                    raise exc_info[1].with_traceback(exc_info[2])
            finally:
                exc_info = None
        elif self.status is not None:
            raise AssertionError("start_response was called a second time without exc_info")
        if not isinstance(status, str) or not status[:3].isdigit() or status[3:4] != " ":
            raise ValueError(f"a WSGI status must be a string like '200 OK', got {status!r}")
        for name, value in headers:
            if not isinstance(name, str) or not isinstance(value, str):
                raise TypeError(f"WSGI headers must be pairs of strings, got {(name, value)!r}")
        self.status, self.headers = status, list(headers)
        return self.write

    def write(self, data: bytes) -> None:
        """The `write()` callable of PEP 3333 (and the path of every body chunk)."""
        if not isinstance(data, bytes):
            raise TypeError(f"a WSGI body chunk must be bytes, got {type(data).__name__}")
        if self.status is None:
            raise AssertionError("write() was called before start_response()")
        if not data:
            return
        wfile = self.handler.wfile
        if not self.sent:
            self._send_headers()
        wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n" if self.chunked else data)
        wfile.flush()

    def _send_headers(self) -> None:
        assert self.status is not None
        handler = self.handler
        code, _, reason = self.status.partition(" ")
        handler.send_response(int(code), reason)
        known_length = False
        for key, value in self.headers:
            known_length = known_length or key.lower() == "content-length"
            handler.send_header(key, value)
        bodiless = code in ("204", "304") or handler.command == "HEAD"
        if not known_length and not bodiless:
            if handler.request_version == "HTTP/1.1":
                self.chunked = True
                handler.send_header("Transfer-Encoding", "chunked")
            else:
                handler.close_connection = True  # the end of the body is the end of the connection
                handler.send_header("Connection", "close")
        handler.end_headers()
        self.sent = True

    def run(self, app: WsgiApp) -> None:
        handler = self.handler
        try:
            result = app(self.environ, self.start_response)
            try:
                for data in result:
                    self.write(data)
                if not self.sent:
                    if self.status is None:
                        raise AssertionError("the app returned without calling start_response()")
                    self._send_headers()
                if self.chunked:
                    handler.wfile.write(b"0\r\n\r\n")
                handler.wfile.flush()
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        except OSError:
            handler.close_connection = True  # the client went away
        except Exception:
            log.exception("the WSGI app failed on %s %s", self.environ["REQUEST_METHOD"], self.environ["PATH_INFO"])
            if self.sent:
                handler.close_connection = True  # too late for a status: cut the response short
                return
            body = b"internal server error"
            with contextlib.suppress(OSError):
                handler.send_response(500, "Internal Server Error")
                handler.send_header("Content-Type", "text/plain")
                handler.send_header("Content-Length", str(len(body)))
                handler.end_headers()
                handler.wfile.write(body)
                handler.wfile.flush()


class ThreadedWsgiServer(HTTPServer):
    """Serves `app` at `address`, each connection in a thread of its own."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # 1,000 clients connecting at once are not reset

    def __init__(self, address: tuple[str, int], app: WsgiApp) -> None:
        super().__init__(address, _Handler)
        self.app = app
        self._lock = threading.Lock()
        self._connections: dict[threading.Thread, socket.socket] = {}  # the sockets still served
        self._threads: list[threading.Thread] = []  # every connection thread not yet known to have ended
        self._numbers = itertools.count(1)

    def process_request(self, request: Any, client_address: Any) -> None:
        def serve() -> None:
            try:
                self.finish_request(request, client_address)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)
                with self._lock:
                    self._connections.pop(threading.current_thread(), None)

        with self._lock:
            thread = start_thread(f"server-http-{next(self._numbers)}", serve)
            self._connections[thread] = request
            # A thread leaves `_connections` a moment before it ends: `close_connections` hands
            # over every thread that may still be alive, so none is left unjoined.
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("http connection error", exc_info=True)

    def close_connections(self) -> list[threading.Thread]:
        """Shut down every connection still served; returns the connection threads to join."""
        with self._lock:
            sockets = list(self._connections.values())
            threads = list(self._threads)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return threads
