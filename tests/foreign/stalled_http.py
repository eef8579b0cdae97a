"""A stalled HTTP server at the socket level (sharing nothing with mcp_tasks): it reads each
request whole, then stalls its answer in one of three ways, and it is just as slow to answer the
``notifications/cancelled`` that tells it a request was abandoned.

- ``"silent"``: accepts, reads, never answers;
- ``"headers"``: trickles a status line and endless headers, a byte at a time;
- ``"body"``: sends whole headers with a ``Content-Length``, then trickles the JSON body.

A ``notifications/cancelled`` is recorded at once (`cancelled`, `noticed`), and its answer (a 202)
is held until the test calls `release`. Then, before answering, the server looks whether the
client is still waiting on that connection: `client_waited` is True when it was (the notice went
out on a time of the transport's own), False when the client had given up on it already (it was
sent on the caller's time, and cut when the caller's budget for it ran out).
"""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

from tests.foreign.sockets import ENDLESS_HEAD, SocketServer, read_headers, trickle

MODES = ("silent", "headers", "body")
PAUSE = 0.05  # seconds between two trickled bytes
HOLD = 120.0  # the most a connection is held (a test that is done closes the server first)


class StalledServer(SocketServer):
    """See the module's docstring; `url` is its endpoint. A context manager: closing it ends every
    connection and joins its threads.
    """

    def __init__(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        super().__init__("stalled")
        self.mode = mode
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.methods: list[str] = []  # every JSON-RPC method received, in order
        self.stalled = threading.Event()  # set once a request's answer is being stalled
        self.noticed = threading.Event()  # set once a notifications/cancelled arrived
        self.cancelled: list[dict[str, Any]] = []
        self.client_waited: bool | None = None  # see the module's docstring (None: not released yet)
        self.answered = threading.Event()  # set once the held notice was looked at and answered
        self._release = threading.Event()

    def release(self) -> None:
        """Let the held notice be answered (after the server looked whether the client waits)."""
        self._release.set()

    def close(self) -> None:
        """End every connection and join the threads."""
        self.stop.set()
        self._release.set()
        super().close()

    # -- serving --------------------------------------------------------------------------------

    def serve(self, sock: socket.socket, reader: Any) -> None:
        """Read each request; hold a cancellation notice, stall any other request's answer."""
        while not self.stop.is_set():
            message = _read_request(reader)
            if message is None:
                return
            method = str(message.get("method"))
            with self.lock:
                self.methods.append(method)
            if method == "notifications/cancelled":
                self._hold_notice(sock, message)
                continue
            self._stall(sock)
            return

    def _hold_notice(self, sock: socket.socket, message: dict[str, Any]) -> None:
        with self.lock:
            self.cancelled.append(message.get("params") or {})
        self.noticed.set()
        self._release.wait(HOLD)
        waited = _still_waiting(sock)
        with self.lock:
            if self.client_waited is None:
                self.client_waited = waited
        self.answered.set()
        if waited:
            sock.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")

    def _stall(self, sock: socket.socket) -> None:
        self.stalled.set()
        if self.mode == "silent":
            self.stop.wait(HOLD)
            return
        if self.mode == "headers":
            trickle(sock, ENDLESS_HEAD, PAUSE, self.stop)
            return
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"pad": "a" * 4000}}).encode()
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
        sock.sendall(head)
        trickle(sock, body, PAUSE, self.stop)


def _read_request(reader: Any) -> dict[str, Any] | None:
    """One request's JSON body (None at the end of the connection)."""
    line = reader.readline()
    if not line:
        return None
    length = int(read_headers(reader).get("content-length") or 0)
    body = reader.read(length) if length else b"{}"
    found = json.loads(body or b"{}")
    return found if isinstance(found, dict) else {}


def _still_waiting(sock: socket.socket) -> bool:
    """Whether the client still has this connection open (nothing to read, no end seen)."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
