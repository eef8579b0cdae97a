"""Serving Streamable HTTP: a WSGI app (usable under any WSGI server) and a small threaded
HTTP/1.1 server with keep-alive and chunked streaming, for tests and demos on 127.0.0.1. The
server is a PEP 3333 gateway: it serves any WSGI app (generators and ``write()`` included), and
`wsgiref.validate` finds nothing wrong on either side.

The app checks the headers as the spec requires: ``MCP-Protocol-Version`` equal to the body's
version, ``Mcp-Method`` equal to its method, and ``Mcp-Name`` equal to the tool name, uri or
``params.taskId`` (base64 form accepted); a missing or mismatched one is HTTP 400 with -32020.
``subscriptions/listen`` answers with an SSE stream that ends when the client goes.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import logging
import queue
import socket
import sys
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import TracebackType
from typing import Any

from mcp_tasks._errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    McpError,
)
from mcp_tasks._exchange import Exchange, ServesMessages
from mcp_tasks._threads import join_all, start_thread
from mcp_tasks._wire import (
    META_PROTOCOL_VERSION,
    NAME_PARAMS,
    decode_header_value,
    dumps,
    loads,
    param_header_values,
    param_headers,
)
from mcp_tasks.server._server import Server

__all__ = ["HttpServer", "McpWsgiApp", "serve_forever", "serve_http"]

log = logging.getLogger("mcp_tasks.server")

StartResponse = Callable[..., Any]
Environ = dict[str, Any]

MAX_BODY = 4 * 1024 * 1024
_END = object()
_LOCAL_ORIGINS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def _status_for(code: int) -> str:
    if code == METHOD_NOT_FOUND:
        return "404 Not Found"
    if code == INTERNAL_ERROR:
        return "500 Internal Server Error"
    return "400 Bad Request"


class McpWsgiApp:
    """The MCP endpoint as a WSGI application.

    `path` is the endpoint (``/mcp``). `sse_responses` answers every request with an SSE stream
    (request-scoped notifications, then the response) instead of a JSON body. `keepalive` is the
    seconds between ``:`` comments on an idle stream, which also tell a server that its client
    has gone. The principal of a request (who may see a task) is its ``Authorization`` header.
    """

    def __init__(
        self,
        server: ServesMessages,
        *,
        path: str = "/mcp",
        sse_responses: bool = False,
        keepalive: float = 5.0,
        max_body: int = MAX_BODY,
    ) -> None:
        self.server = server
        self.path = path
        self.sse_responses = sse_responses
        self.keepalive = keepalive
        self.max_body = max_body
        self._lock = threading.Lock()
        self._exchanges: set[Exchange] = set()
        self._workers: set[threading.Thread] = set()
        self._numbers = itertools.count(1)

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        """Serve one HTTP request."""
        if environ.get("PATH_INFO", "") != self.path:
            return _plain(start_response, "404 Not Found", b"not found")
        if environ.get("REQUEST_METHOD") != "POST":
            return _plain(start_response, "405 Method Not Allowed", b"POST only", [("Allow", "POST")])
        origin = environ.get("HTTP_ORIGIN")
        if origin and urllib.parse.urlsplit(origin).hostname not in _LOCAL_ORIGINS:
            return _plain(start_response, "403 Forbidden", b"origin not allowed")
        if environ.get("CONTENT_TYPE", "").split(";")[0].strip().lower() != "application/json":
            return _plain(start_response, "415 Unsupported Media Type", b"Content-Type must be application/json")
        accept = environ.get("HTTP_ACCEPT", "")
        if "application/json" not in accept or "text/event-stream" not in accept:
            return _plain(
                start_response, "406 Not Acceptable", b"Accept must list application/json and text/event-stream"
            )
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = -1
        if length < 0:
            return _plain(start_response, "411 Length Required", b"Content-Length required")
        if length > self.max_body:
            return _plain(start_response, "413 Content Too Large", b"body too large")
        body = environ["wsgi.input"].read(length)
        try:
            message = loads(body)
        except ValueError:
            return _json(start_response, "400 Bad Request", _error(None, McpError(PARSE_ERROR, "Parse error")))
        if not isinstance(message, dict):
            return _json(start_response, "400 Bad Request", _error(None, McpError(INVALID_REQUEST, "Invalid Request")))
        mismatch = _check_headers(environ, message, self.server)
        if mismatch is not None:
            return _json(start_response, "400 Bad Request", _error(message.get("id"), mismatch))
        principal = environ.get("HTTP_AUTHORIZATION")
        if "id" not in message:
            self.server.handle(message, Exchange(principal=principal))
            start_response("202 Accepted", [("Content-Type", "text/plain"), ("Content-Length", "0")])
            return [b""]
        if message.get("method") == "subscriptions/listen" or self.sse_responses:
            return self._stream(message, principal, start_response)
        exchange = Exchange(principal=principal)
        with self._lock:
            self._exchanges.add(exchange)
        try:
            response = self.server.handle(message, exchange)
        finally:
            self._forget(exchange)
        if response is None:
            return _plain(start_response, "500 Internal Server Error", b"no response")
        return _json(start_response, _response_status(response), response)

    def close(self) -> None:
        """Cancel every request still running (open streams too) and join the stream threads."""
        with self._lock:
            exchanges = list(self._exchanges)
            workers = list(self._workers)
        for exchange in exchanges:
            exchange.cancel()
        join_all(workers, 5.0)

    def _stream(self, message: dict[str, Any], principal: str | None, start_response: StartResponse) -> Iterable[bytes]:
        items: queue.Queue[Any] = queue.Queue()
        exchange = Exchange(items.put, principal)

        def run() -> None:
            try:
                response = self.server.handle(message, exchange)
                if response is not None:
                    items.put(response)
            finally:
                items.put(_END)

        with self._lock:
            self._exchanges.add(exchange)
            # Finished workers are dropped here, once they have ended, never by themselves (a
            # thread that removed itself would still be alive for a moment, and `close` miss it).
            self._workers = {worker for worker in self._workers if worker.is_alive()}
            self._workers.add(start_thread(f"server-http-stream-{next(self._numbers)}", run))
        first = items.get()
        if first is not _END and "id" in first and "error" in first:
            # Refused before the stream began: a plain JSON error with its HTTP status.
            self._forget(exchange)
            return _json(start_response, _status_for(first["error"].get("code", 0)), first)
        start_response(
            "200 OK",
            [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no")],
        )
        return self._events(first, items, exchange)

    def _events(self, first: Any, items: queue.Queue[Any], exchange: Exchange) -> Iterator[bytes]:
        try:
            item = first
            while item is not _END:
                yield b"data: " + dumps(item) + b"\n\n"
                while True:
                    try:
                        item = items.get(timeout=self.keepalive)
                        break
                    except queue.Empty:
                        yield b": keepalive\n\n"
        finally:
            exchange.cancel()
            self._forget(exchange)

    def _forget(self, exchange: Exchange) -> None:
        with self._lock:
            self._exchanges.discard(exchange)


def _check_param_headers(environ: Environ, params: dict[str, Any], tools: Mapping[str, Any]) -> McpError | None:
    """Each annotated argument of the tool must come in its Mcp-Param header, equal to the body."""
    tool = tools.get(params.get("name"))  # type: ignore[arg-type]
    if tool is None:
        return None
    try:
        annotated = param_headers(getattr(tool, "input_schema", None))
    except ValueError:
        return None
    arguments = params.get("arguments")
    for header, expected in param_header_values(annotated, arguments if isinstance(arguments, dict) else {}).items():
        sent = environ.get("HTTP_" + header.upper().replace("-", "_"))
        if sent is None:
            return McpError(HEADER_MISMATCH, f"Header mismatch: {header} header is missing")
        if decode_header_value(sent) != decode_header_value(expected):
            return McpError(HEADER_MISMATCH, f"Header mismatch: {header} does not match the argument")
    return None


def _check_headers(environ: Environ, message: dict[str, Any], server: ServesMessages) -> McpError | None:
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    meta = params.get("_meta")
    header_version = environ.get("HTTP_MCP_PROTOCOL_VERSION")
    if header_version is None:
        return McpError(HEADER_MISMATCH, "Header mismatch: MCP-Protocol-Version header is missing")
    body_version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    if isinstance(body_version, str) and body_version != header_version:
        return McpError(
            HEADER_MISMATCH,
            f"Header mismatch: MCP-Protocol-Version {header_version!r} does not match the body's {body_version!r}",
        )
    method = message.get("method")
    if not isinstance(method, str):
        return None
    try:
        header_method = _decoded(environ.get("HTTP_MCP_METHOD"))
        if header_method != method:
            return McpError(HEADER_MISMATCH, f"Header mismatch: Mcp-Method does not match the body's method {method!r}")
        key = NAME_PARAMS.get(method)
        if key is not None and isinstance(params.get(key), str):
            header_name = _decoded(environ.get("HTTP_MCP_NAME"))
            if header_name is None:
                return McpError(HEADER_MISMATCH, f"Header mismatch: Mcp-Name header is missing (params.{key})")
            if header_name != params.get(key):
                return McpError(HEADER_MISMATCH, f"Header mismatch: Mcp-Name does not match params.{key}")
        if method == "tools/call":
            return _check_param_headers(environ, params, getattr(server, "tools", {}))
    except ValueError as exc:
        return McpError(HEADER_MISMATCH, f"Header mismatch: {exc}")
    return None


def _decoded(value: str | None) -> str | None:
    if value is None:
        return None
    # WSGI carries header values as latin-1 strings; the base64 form carries anything else.
    return decode_header_value(value)


def _error(request_id: object, error: McpError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()}


def _response_status(response: dict[str, Any]) -> str:
    error = response.get("error")
    if isinstance(error, dict):
        return _status_for(error.get("code", 0))
    return "200 OK"


def _json(start_response: StartResponse, status: str, message: dict[str, Any]) -> list[bytes]:
    body = dumps(message)
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def _plain(
    start_response: StartResponse, status: str, body: bytes, extra: list[tuple[str, str]] | None = None
) -> list[bytes]:
    headers = [("Content-Type", "text/plain"), ("Content-Length", str(len(body))), *(extra or [])]
    start_response(status, headers)
    return [body]


# -- the small threaded HTTP/1.1 server ---------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body leave in one send, with Nagle off: no 40 ms delayed-ACK stalls.
    disable_nagle_algorithm = True
    wbufsize = 64 * 1024
    server: _ThreadedServer

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

    def run(self, app: Callable[[Environ, StartResponse], Iterable[bytes]]) -> None:
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


class _ThreadedServer(HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # 1,000 clients connecting at once are not reset

    def __init__(self, address: tuple[str, int], app: Callable[..., Iterable[bytes]]) -> None:
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


class HttpServer:
    """A `Server` on Streamable HTTP at ``http://host:port/mcp``, in threads of this process.

    `target` is a `Server` (served by a `McpWsgiApp` made with `app_opts`) or any WSGI app.
    Port 0 picks a free port; `url` says which. `close()` stops accepting, ends open streams,
    closes connections and joins every thread. A context manager.

    A WSGI app passed in is its owner's to close, before this server: a thread serving one of
    its streams ends only when the app ends the stream (a `McpWsgiApp` whose client went away
    notices at its next keep-alive), and `close()` waits for such threads 5 s at most.
    """

    def __init__(
        self,
        target: Server | Callable[[Environ, StartResponse], Iterable[bytes]],
        host: str = "127.0.0.1",
        port: int = 0,
        **app_opts: Any,
    ) -> None:
        self.app = McpWsgiApp(target, **app_opts) if isinstance(target, Server) else target
        self._httpd = _ThreadedServer((host, port), self.app)
        self.host, self.port = self._httpd.server_address[0], self._httpd.server_address[1]
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def url(self) -> str:
        """The endpoint's URL."""
        host = str(self.host)
        path = getattr(self.app, "path", "/mcp")
        return f"http://{host if ':' not in host else f'[{host}]'}:{self.port}{path}"

    def start(self) -> HttpServer:
        """Start accepting connections in a background thread."""
        if self._thread is None:
            self._thread = start_thread(f"server-http-accept-{self.port}", lambda: self._httpd.serve_forever(0.05))
        return self

    def close(self) -> None:
        """Stop the server and join its threads. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(5.0)
        close_app = getattr(self.app, "close", None)
        if close_app is not None:
            close_app()
        connections = self._httpd.close_connections()
        self._httpd.server_close()
        join_all(connections, 5.0)

    def __enter__(self) -> HttpServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def serve_http(server: Server, host: str = "127.0.0.1", port: int = 0, **app_opts: Any) -> HttpServer:
    """Serve `server` over HTTP in background threads; returns the started `HttpServer`."""
    return HttpServer(server, host, port, **app_opts).start()


def serve_forever(server: Server, host: str = "127.0.0.1", port: int = 0) -> None:
    """Serve over HTTP until interrupted (``python -m mcp_tasks.server … --http``)."""
    http_server = HttpServer(server, host, port)
    print(http_server.url, flush=True)
    http_server.start()
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        http_server.close()
        server.close()
