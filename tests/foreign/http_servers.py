"""HTTP servers written at the socket level, sharing no code with mcp_tasks.server, that behave
as real ones do: keep-alive comments, gzip, priming events, trickled bodies, idle connections
dropped, 502s and 503s with Retry-After, 401 challenges.

`ForeignServer(handler)` accepts on 127.0.0.1, reads HTTP/1.1 requests (keep-alive, one thread
per connection) and calls ``handler(request, conn)``, which answers with `Conn`'s helpers. It
counts connections and requests per method, and records when a client hangs up. As real servers
do, it answers ``server/discover`` (a 2026-07-28 server) and takes ``notifications/cancelled``
(202) itself; the cancellations are kept in `cancelled` (their params, in arrival order).
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import zlib
from collections import Counter
from collections.abc import Callable
from typing import Any

from tests.foreign.sockets import SocketServer

ENVELOPE_VERSION = "2026-07-28"


class Request:
    """One request as it arrived: method line, headers (lower-case names), body."""

    def __init__(
        self, method: str, path: str, headers: dict[str, str], body: bytes, number: int, names: list[str] | None = None
    ) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.names = names or list(headers)  # every header name as sent (lower-case), repeats included
        self.body = body
        self.number = number  # 1 for the first request on its connection
        try:
            self.json: Any = json.loads(body) if body else None
        except ValueError:
            self.json = None

    @property
    def rpc_method(self) -> str | None:
        return self.json.get("method") if isinstance(self.json, dict) else None

    @property
    def id(self) -> Any:
        return self.json.get("id") if isinstance(self.json, dict) else None

    @property
    def params(self) -> dict[str, Any]:
        params = self.json.get("params") if isinstance(self.json, dict) else None
        return params if isinstance(params, dict) else {}


class Hangup(Exception):
    """The handler closes the connection without answering."""


class Conn:
    """The server's side of one connection, with helpers that write HTTP answers."""

    def __init__(self, sock: socket.socket, server: ForeignServer) -> None:
        self.sock = sock
        self.server = server
        self.keep_alive = True

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def head(self, status: str, headers: list[tuple[str, str]]) -> None:
        lines = [f"HTTP/1.1 {status}"] + [f"{k}: {v}" for k, v in headers]
        self.send(("\r\n".join(lines) + "\r\n\r\n").encode())

    def json(
        self, message: Any, status: str = "200 OK", headers: list[tuple[str, str]] | None = None, encoding: str = ""
    ) -> None:
        body = json.dumps(message).encode()
        extra = list(headers or [])
        if encoding == "gzip":
            body = gzip.compress(body)
            extra.append(("Content-Encoding", "gzip"))
        elif encoding == "deflate":
            body = zlib.compress(body)
            extra.append(("Content-Encoding", "deflate"))
        self.body(body, status, [("Content-Type", "application/json"), *extra])

    def body(self, body: bytes, status: str = "200 OK", headers: list[tuple[str, str]] | None = None) -> None:
        self.head(status, [*(headers or []), ("Content-Length", str(len(body)))])
        self.send(body)

    def empty(self, status: str = "202 Accepted") -> None:
        self.head(status, [("Content-Length", "0")])

    def sse_head(self, *, close_delimited: bool = False) -> None:
        """Start an SSE answer: chunked, or delimited by the connection's close."""
        framing = ("Connection", "close") if close_delimited else ("Transfer-Encoding", "chunked")
        self.chunked = not close_delimited
        if close_delimited:
            self.keep_alive = False
        self.head("200 OK", [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), framing])

    def sse_raw(self, data: bytes) -> None:
        if self.chunked:
            self.send(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        else:
            self.send(data)

    def event(self, message: Any, event_id: str | None = None) -> None:
        prefix = f"id: {event_id}\n".encode() if event_id else b""
        self.sse_raw(prefix + b"data: " + json.dumps(message).encode() + b"\n\n")

    def comment(self, text: str = "keepalive") -> None:
        self.sse_raw(f": {text}\n\n".encode())

    def sse_end(self) -> None:
        if self.chunked:
            self.send(b"0\r\n\r\n")

    def wait_hangup(self, timeout: float = 30.0) -> bool:
        """Block until the client closes its side (True), or `timeout` passes."""
        self.sock.settimeout(timeout)
        try:
            while True:
                data = self.sock.recv(4096)
                if not data:
                    return True
        except OSError:
            return True
        finally:
            self.server.hangups.release()


def result(request: Request, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.id, "result": value}


def task(task_id: str, status: str = "working", **extra: Any) -> dict[str, Any]:
    return {
        "taskId": task_id,
        "status": status,
        "createdAt": "2026-01-01T00:00:00Z",
        "lastUpdatedAt": "2026-01-01T00:00:00Z",
        "ttlMs": 60000,
        "pollIntervalMs": 5000,
        **extra,
    }


def created(request: Request, task_id: str) -> dict[str, Any]:
    return result(request, {"resultType": "task", **task(task_id)})


def completed(task_id: str, value: str = "done") -> dict[str, Any]:
    return task(task_id, "completed", result={"content": [{"type": "text", "text": value}], "isError": False})


def tool_result(request: Request, text: str = "ok") -> dict[str, Any]:
    return result(request, {"content": [{"type": "text", "text": text}], "isError": False})


class ForeignServer(SocketServer):
    """A socket-level HTTP/1.1 server on 127.0.0.1; ``handler(request, conn)`` answers."""

    quiet = (OSError, ValueError)  # a request line that does not parse ends its connection too

    def __init__(self, handler: Callable[[Request, Conn], None], *, name: str = "foreign") -> None:
        super().__init__(name, join=5.0)
        self.handler = handler
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.connections = 0
        self.requests: Counter[str] = Counter()
        self.seen: list[Request] = []
        self.hangups = threading.Semaphore(0)
        self.cancelled: list[dict[str, Any]] = []  # the params of each notifications/cancelled
        self.cancel_arrived = threading.Condition(self.lock)

    def count(self, method: str) -> int:
        with self.lock:
            return self.requests[method]

    def wait_cancelled(self, timeout: float = 30.0) -> list[dict[str, Any]]:
        """The notifications/cancelled params so far, once there is at least one (or `timeout`)."""
        with self.cancel_arrived:
            self.cancel_arrived.wait_for(lambda: bool(self.cancelled), timeout)
            return list(self.cancelled)

    def accepted(self, sock: socket.socket) -> socket.socket | None:
        """`sock`, counted, its answers sent without delay (TCP_NODELAY)."""
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.lock:
            self.connections += 1
        return sock

    def serve(self, sock: socket.socket, reader: Any) -> None:
        """Read each request of the connection and have the handler answer it."""
        conn = Conn(sock, self)
        number = 0
        while conn.keep_alive and not self.stop.is_set():
            line = reader.readline()
            if not line:
                return
            method, path, _ = line.decode().split(" ", 2)
            headers: dict[str, str] = {}
            names: list[str] = []
            while (header := reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = header.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
                names.append(name.strip().lower())
            body = reader.read(int(headers.get("content-length", "0")))
            request = Request(method, path, headers, body, number + 1, names)
            if request.rpc_method == "server/discover":  # the client's era probe: a 2026-07-28 server
                conn.json(result(request, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}))
                continue  # not numbered: handlers see the requests after it
            if request.rpc_method == "notifications/cancelled":
                with self.cancel_arrived:
                    self.cancelled.append(request.params)
                    self.cancel_arrived.notify_all()
                conn.empty()
                continue
            number += 1
            with self.lock:
                self.requests[request.rpc_method or method] += 1
                self.seen.append(request)
            try:
                self.handler(request, conn)
            except Hangup:
                return


def reset(conn: Conn) -> None:
    """Close the connection with a RST (as a crashed or impatient server does)."""
    conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    raise Hangup


def trickle(conn: Conn, data: bytes, pause: float, stop: threading.Event) -> None:
    """Send `data` a byte at a time, `pause` seconds apart, until done or `stop` is set."""
    for i in range(len(data)):
        if stop.wait(pause):
            return
        conn.send(data[i : i + 1])
