"""What the socket-level servers of tests/foreign/ share (nothing of mcp_tasks): a listener on
127.0.0.1 whose connections are each served on a thread of their own, closed all at once; the
headers of an HTTP request; an answer trickled a byte at a time.
"""

from __future__ import annotations

import socket
import threading
from typing import Any, TypeVar

# A status line and endless headers: a trickled answer that never ends on its own.
ENDLESS_HEAD = b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 30) for i in range(400))

S = TypeVar("S", bound="SocketServer")


class SocketServer:
    """A server listening on 127.0.0.1 (`port`): each connection it accepts is served by `serve`
    (a subclass's) on a thread named ``<name>-conn``, then closed. `lock` guards what the threads share; `stop`
    is set once it closes. A context manager: closing it ends every connection and joins its
    threads (waiting `join` seconds for each at the most).
    """

    quiet: tuple[type[Exception], ...] = (OSError,)
    """What ends a connection's thread without a word: the client hung up, or the server closed."""

    def __init__(self, name: str, *, join: float = 10.0) -> None:
        self.name = name
        self.join = join
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.socks: list[socket.socket] = []
        self.threads: list[threading.Thread] = []
        self.acceptor = threading.Thread(target=self._accept, name=f"{name}-accept", daemon=True)
        self.acceptor.start()

    def __enter__(self: S) -> S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def accepted(self, sock: socket.socket) -> socket.socket | None:
        """The connection to serve, made of one just accepted (None drops it): `sock` itself here."""
        return sock

    def serve(self, sock: socket.socket, reader: Any) -> None:
        """Serve one connection, on its own thread (a subclass's); `reader` is its binary file for
        reading. The connection is closed once it returns (or raises one of `quiet`)."""
        raise NotImplementedError

    def close(self) -> None:
        """End every connection and join the threads."""
        self.stop.set()
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept (close alone does not)
        except OSError:
            pass
        self.acceptor.join(self.join)
        self.listener.close()
        with self.lock:
            socks = list(self.socks)
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in self.threads:
            thread.join(self.join)

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            sock = self.accepted(raw)
            if sock is None:
                continue
            with self.lock:
                self.socks.append(sock)
            thread = threading.Thread(target=self._serve, args=(sock,), name=f"{self.name}-conn", daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        reader = sock.makefile("rb")
        try:
            self.serve(sock, reader)
        except self.quiet:
            return
        finally:
            reader.close()
            try:
                sock.close()
            except OSError:
                pass


def read_headers(reader: Any) -> dict[str, str]:
    """An HTTP message's headers, read up to the blank line: lower-cased names, latin-1 text."""
    headers: dict[str, str] = {}
    while (header := reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = header.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers


def trickle(sock: socket.socket, data: bytes, pause: float, stop: threading.Event) -> None:
    """Send `data` a byte at a time, `pause` seconds apart, until done or `stop` is set (OSError
    once the client cut the connection)."""
    for i in range(len(data)):
        if stop.wait(pause):
            return
        sock.sendall(data[i : i + 1])
