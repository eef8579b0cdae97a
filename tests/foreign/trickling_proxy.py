"""An HTTP proxy at the socket level (sharing nothing with mcp_tasks) that trickles.

It takes what a client sends a proxy: a ``CONNECT host:port`` (a tunnel, for an ``https`` URL) or
a request in absolute form (``POST http://host/path``, for an ``http`` URL). In ``"trickle"`` mode
it answers either with a status line and endless headers, a byte every `PAUSE` seconds, until
`stop` is set; in ``"answer"`` mode it answers an absolute-form request itself as an MCP server
would (a JSON result), so a test can see a proxied request go through. `lines` has each request
line it received; `got` is set at the first.
"""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

from tests.foreign.sockets import ENDLESS_HEAD, SocketServer, read_headers, trickle

PAUSE = 0.05
HOLD = 60.0


class TricklingProxy(SocketServer):
    """See the module's docstring; `url` is the proxy's (``http://127.0.0.1:port``)."""

    def __init__(self, mode: str = "trickle") -> None:
        if mode not in ("trickle", "answer"):
            raise ValueError(f"mode must be 'trickle' or 'answer', got {mode!r}")
        super().__init__("proxy")
        self.mode = mode
        self.url = f"http://127.0.0.1:{self.port}"
        self.lines: list[str] = []
        self.got = threading.Event()

    def serve(self, sock: socket.socket, reader: Any) -> None:
        """Note each request line; trickle, or answer an absolute-form request (see the module)."""
        while not self.stop.is_set():
            line = reader.readline()
            if not line:
                return
            length = int(read_headers(reader).get("content-length") or 0)
            body = reader.read(length) if length else b""
            with self.lock:
                self.lines.append(line.decode("latin-1").strip())
            self.got.set()
            if self.mode == "trickle" or line.startswith(b"CONNECT "):
                trickle(sock, ENDLESS_HEAD, PAUSE, self.stop)
                return
            sock.sendall(_answer(body))


def _answer(body: bytes) -> bytes:
    """A JSON-RPC result for the request in `body` (a 202 for a notification)."""
    try:
        message: Any = json.loads(body or b"{}")
    except ValueError:
        message = {}
    if not isinstance(message, dict) or "id" not in message:
        return b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
    answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"via": "proxy"}}).encode()
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(answer), answer)
