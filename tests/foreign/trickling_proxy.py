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

PAUSE = 0.05
HOLD = 60.0


class TricklingProxy:
    """See the module's docstring; `url` is the proxy's (``http://127.0.0.1:port``)."""

    def __init__(self, mode: str = "trickle") -> None:
        if mode not in ("trickle", "answer"):
            raise ValueError(f"mode must be 'trickle' or 'answer', got {mode!r}")
        self.mode = mode
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.lock = threading.Lock()
        self.lines: list[str] = []
        self.got = threading.Event()
        self.stop = threading.Event()
        self._socks: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, name="proxy-accept", daemon=True)
        self._acceptor.start()

    def __enter__(self) -> TricklingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End every connection and join the threads."""
        self.stop.set()
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._acceptor.join(10)
        self.listener.close()
        with self.lock:
            socks = list(self._socks)
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in self._threads:
            thread.join(10)

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self._socks.append(sock)
            thread = threading.Thread(target=self._serve, args=(sock,), name="proxy-conn", daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        reader = sock.makefile("rb")
        try:
            while not self.stop.is_set():
                line = reader.readline()
                if not line:
                    return
                length = 0
                while (header := reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = header.decode("latin-1").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                body = reader.read(length) if length else b""
                with self.lock:
                    self.lines.append(line.decode("latin-1").strip())
                self.got.set()
                if self.mode == "trickle" or line.startswith(b"CONNECT "):
                    self._trickle(sock)
                    return
                sock.sendall(_answer(body))
        except OSError:
            return
        finally:
            reader.close()
            try:
                sock.close()
            except OSError:
                pass

    def _trickle(self, sock: socket.socket) -> None:
        head = b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 30) for i in range(400))
        for i in range(len(head)):
            if self.stop.wait(PAUSE):
                return
            sock.sendall(head[i : i + 1])  # OSError once the client cut the connection


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
