"""A TCP proxy at the socket level for the fault benchmarks (it knows nothing of HTTP, PostgreSQL
or mcp_tasks): it forwards each connection to one upstream address, can hold what comes back for
`delay` seconds (a slow link: every answer late by that much, in order), and can `cut` every
connection it carries at once (a network that drops them; new ones are forwarded again).
"""

from __future__ import annotations

import queue
import socket
import threading
import time

CHUNK = 65536


class Proxy:
    """Listens on 127.0.0.1 (`port`) and forwards to `upstream` (host, port). A context manager."""

    def __init__(self, upstream: tuple[str, int], name: str = "proxy") -> None:
        self.upstream = upstream
        self.name = name
        self.delay = 0.0
        self.cuts = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._socks: set[socket.socket] = set()
        self._closed = False
        threading.Thread(target=self._accept, name=f"{name}-accept", daemon=True).start()

    def __enter__(self) -> Proxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def cut(self) -> int:
        """Shut every connection carried now (both ends); returns how many were cut."""
        with self._lock:
            socks = list(self._socks)
            self.cuts += 1
        for sock in socks:
            _shut(sock)
        return len(socks) // 2

    def close(self) -> None:
        """Stop accepting and cut what is left."""
        self._closed = True
        _shut(self._listener)
        self._listener.close()
        self.cut()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=10)
                server.settimeout(None)
            except OSError:
                client.close()  # the upstream is down: the client sees the connection refused
                continue
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._socks.update((client, server))
            threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, answers: bool) -> None:
        """Copy `source` to `sink`; answers (upstream to client) are held `delay` seconds first."""
        held: queue.Queue[tuple[float, bytes]] = queue.Queue()
        sender = threading.Thread(target=self._send_held, args=(held, sink), daemon=True)
        sender.start()
        try:
            while True:
                data = source.recv(CHUNK)
                if not data:
                    break
                held.put((time.monotonic() + (self.delay if answers else 0.0), data))
        except OSError:
            pass
        held.put((0.0, b""))
        sender.join()
        for sock in (source, sink):
            _shut(sock)
            with self._lock:
                self._socks.discard(sock)
            sock.close()

    @staticmethod
    def _send_held(held: queue.Queue[tuple[float, bytes]], sink: socket.socket) -> None:
        while True:
            due, data = held.get()
            if not data:
                return
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            try:
                sink.sendall(data)
            except OSError:
                return


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
