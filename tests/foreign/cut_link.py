"""A TCP link at the socket level (sharing nothing with mcp_tasks) that a test can cut and mend,
as a network that goes away for a moment: while cut (`down`), every connection through it is shut
and each new one is reset as soon as it is accepted; once mended (`up`), new connections reach
`upstream` again, on the same port. `url_of` turns an HTTP URL of `upstream` into one through it.
"""

from __future__ import annotations

import socket
import struct
import threading
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tests.foreign.sockets import SocketServer


class CutLink(SocketServer):
    """Listens on 127.0.0.1 (`port`), forwards to `upstream` (host, port); `resets` counts the
    connections reset while cut. A context manager.
    """

    def __init__(self, upstream: tuple[str, int]) -> None:
        super().__init__("cut-link")
        self.upstream = upstream
        self.cut = threading.Event()
        self.resets = 0
        self._upstreams: list[socket.socket] = []

    def url_of(self, url: str) -> str:
        """`url` (an HTTP URL of `upstream`) through this link."""
        return urlunsplit(urlsplit(url)._replace(netloc=f"127.0.0.1:{self.port}"))

    def down(self) -> None:
        """Cut the link: shut every connection through it; new ones are reset from now on."""
        self.cut.set()
        self._shut_all()

    def up(self) -> None:
        """Mend the link: new connections reach `upstream` again."""
        self.cut.clear()

    def close(self) -> None:
        """Shut every connection (both sides) and join the threads."""
        self.stop.set()
        self._shut_all()
        super().close()

    def accepted(self, sock: socket.socket) -> socket.socket | None:
        """The connection, or None once it is reset (the link is cut)."""
        if not self.cut.is_set():
            return sock
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST
        sock.close()
        with self.lock:
            self.resets += 1
        return None

    def serve(self, sock: socket.socket, reader: Any) -> None:
        """Pump the bytes both ways until either side ends (or the link is cut)."""
        upstream = socket.create_connection(self.upstream)
        with self.lock:
            self._upstreams.append(upstream)
        try:
            if self.cut.is_set() or self.stop.is_set():  # cut as it was accepted: down() may have missed it
                return
            back = threading.Thread(target=_pump, args=(upstream, sock), name="cut-link-back", daemon=True)
            self.threads.append(back)
            back.start()
            _pump(sock, upstream)
            back.join(self.join)
        finally:
            upstream.close()

    def _shut_all(self) -> None:
        with self.lock:
            socks = [*self.socks, *self._upstreams]
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # closed already
                pass


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy what `source` sends to `sink` until it ends; then end `sink`'s sending side."""
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass
