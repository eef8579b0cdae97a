"""The MCP endpoint as a WSGI application (usable under any WSGI server): the HTTP-level gate
(path, method, origin, content type, accept, body size, the MCP headers), a JSON response for a
request, and an SSE stream for ``subscriptions/listen`` (or every request, with `sse_responses`)
that ends when the client goes. Each request is one `Exchange` with the served messages.
"""

from __future__ import annotations

import itertools
import queue
import threading
import urllib.parse
from collections.abc import Iterable, Iterator
from typing import Any

from mcp_tasks._errors import INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, McpError
from mcp_tasks._exchange import Exchange, ServesMessages
from mcp_tasks._threads import join_all, start_thread
from mcp_tasks._wire import dumps, loads
from mcp_tasks.server._http_headers import check_headers
from mcp_tasks.server._wsgi_types import Environ, StartResponse

__all__ = ["MAX_BODY", "McpWsgiApp"]

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
        mismatch = check_headers(environ, message, self.server)
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
