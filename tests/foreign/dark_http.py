"""A 2026-07-28 HTTP server gone dark, at the socket level (nothing of mcp_tasks): it accepts, reads
each request whole, and then, in one of two ways, never answers what a wait is blocked on.

- ``"get"``: a ``tasks/get`` is read and never answered (the connection stays open, silent);
- ``"listen"``: ``tasks/get`` is answered (the task is working, with a poll interval no test
  sleeps out), and a ``subscriptions/listen`` is read and never answered;
- ``"listen_head"``: the same, but the ``subscriptions/listen`` is answered with the headers of an
  SSE stream and then nothing: no acknowledgement, no keep-alive, no end.

`dark` is set once a request is being held (the wait is then blocked in it); `methods` lists the
JSON-RPC methods received, in order. A context manager: closing it ends every connection and
joins its threads.
"""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

from tests.foreign.sockets import SocketServer, read_headers

MODES = ("get", "listen", "listen_head")
HOLD = 120.0  # the most a request is held (a test that is done closes the server first)
STAMP = "2026-12-01T10:00:00Z"
SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"


class DarkServer(SocketServer):
    """See the module's docstring; `url` is its endpoint."""

    def __init__(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        super().__init__("dark")
        self.mode = mode
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.methods: list[str] = []
        self.dark = threading.Event()

    def serve(self, sock: socket.socket, reader: Any) -> None:
        """Answer what keeps the client going; hold the request the mode is about, for ever."""
        while not self.stop.is_set():
            message = _read_request(reader)
            if message is None:
                return
            method = str(message.get("method"))
            with self.lock:
                self.methods.append(method)
            if "id" not in message:
                sock.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
                continue
            if self.mode == "listen_head" and method == "subscriptions/listen":
                sock.sendall(SSE_HEAD)
            elif self.mode != "get" and method == "tasks/get":
                _answer(sock, message["id"], _working(message))
                continue
            self.dark.set()
            self.stop.wait(HOLD)
            return


def _working(message: dict[str, Any]) -> dict[str, Any]:
    params = message.get("params") or {}
    return {
        "resultType": "complete",
        "taskId": str(params.get("taskId")),
        "status": "working",
        "createdAt": STAMP,
        "lastUpdatedAt": STAMP,
        "pollIntervalMs": 600_000,
    }


def _answer(sock: socket.socket, request_id: object, result: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    sock.sendall(head + body)


def _read_request(reader: Any) -> dict[str, Any] | None:
    """One request's JSON body (None at the end of the connection)."""
    line = reader.readline()
    if not line:
        return None
    length = int(read_headers(reader).get("content-length") or 0)
    body = reader.read(length) if length else b"{}"
    found = json.loads(body or b"{}")
    return found if isinstance(found, dict) else {}
