"""A TCP proxy at the socket level (sharing nothing with mcp_tasks) whose answers come `delay`
seconds late: every chunk the upstream sends is held that long, in order, as on a slow link (a
request takes one delay more, whatever its size). `url_of` turns a PostgreSQL URL into one that
goes through it.
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from urllib.parse import urlsplit, urlunsplit


class SlowLink:
    """Listens on 127.0.0.1 (`port`), forwards to `upstream` (host, port); a context manager."""

    def __init__(self, upstream: tuple[str, int], delay: float) -> None:
        self.upstream = upstream
        self.delay = delay
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._socks: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._start(self._accept)

    def url_of(self, url: str) -> str:
        """`url` (a PostgreSQL URL to `upstream`) through this link."""
        parts = urlsplit(url)
        netloc = parts.netloc.rsplit("@", 1)
        where = f"127.0.0.1:{self.port}"
        return urlunsplit(parts._replace(netloc=f"{netloc[0]}@{where}" if len(netloc) == 2 else where))

    def __enter__(self) -> SlowLink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop listening and shut every connection; the threads are joined."""
        with self._lock:
            socks, self._socks = [self._listener, *self._socks], []
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        for thread in self._threads:
            thread.join(10)

    def _start(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name="slow-link", daemon=True)  # type: ignore[arg-type]
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
                upstream = socket.create_connection(self.upstream)
            except OSError:
                return
            with self._lock:
                self._socks += [client, upstream]
            self._start(self._pump, client, upstream, None)
            held: queue.Queue[tuple[float, bytes] | None] = queue.Queue()
            self._start(self._pump, upstream, client, held)
            self._start(self._send_held, held, client)

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, held: queue.Queue[tuple[float, bytes] | None] | None) -> None:
        try:
            while data := source.recv(65536):
                if held is None:
                    sink.sendall(data)
                else:
                    held.put((time.monotonic(), data))
        except OSError:
            pass
        finally:
            if held is not None:
                held.put(None)
            else:
                try:
                    sink.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

    def _send_held(self, held: queue.Queue[tuple[float, bytes] | None], sink: socket.socket) -> None:
        while (item := held.get()) is not None:
            at, data = item
            time.sleep(max(0.0, at + self.delay - time.monotonic()))  # a link's latency, not a test's wait
            try:
                sink.sendall(data)
            except OSError:
                return
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass
