"""An HTTP replay server at the socket level: one thread per connection, HTTP/1.1 parsed by hand.
One answer line is sent as an ``application/json`` body; several, or any answer to a listen, as an
SSE stream ended by closing the connection."""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

from tests.fuzz.script import Script


class ReplayHttp:
    """Listens on 127.0.0.1; `url` is its endpoint. `close()` stops it and its connections."""

    def __init__(self) -> None:
        self.script = Script()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/mcp"
        self._connections: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False
        self._accepter = threading.Thread(target=self._accept, name="fuzz-http-accept", daemon=True)
        self._accepter.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                self._connections.append(conn)
                thread = threading.Thread(target=self._serve, args=(conn,), name="fuzz-http-conn", daemon=True)
                self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        try:
            while True:
                head = reader.readline()
                if not head:
                    return
                length = 0
                while (line := reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = line.decode("latin-1").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                body = reader.read(length)
                request: Any = json.loads(body) if body else {}
                lines = self.script.answer(request) if isinstance(request, dict) else []
                if not lines:
                    conn.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
                    continue
                if len(lines) == 1 and request.get("method") != "subscriptions/listen":
                    data = lines[0]
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        + f"Content-Length: {len(data)}\r\n\r\n".encode()
                        + data
                    )
                    continue
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
                for answer in lines:
                    conn.sendall(b"event: message\ndata: " + answer.replace(b"\n", b"") + b"\n\n")
                return
        except (OSError, ValueError):
            return
        finally:
            reader.close()
            conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            connections = list(self._connections)
            threads = list(self._threads)
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accept (closing alone does not)
        except OSError:
            pass
        self._sock.close()
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._accepter.join(5)
        for thread in threads:
            thread.join(5)


class ReplayDirect:
    """The same script for the direct transport: lines are parsed (a line that is not JSON, or
    too deep for the stdlib, is passed on as a string), all but the last sent as notifications."""

    def __init__(self) -> None:
        self.script = Script()

    def handle(self, message: dict[str, Any], exchange: Any) -> Any:
        lines = self.script.answer(message)
        values = [_value(line) for line in lines]
        for value in values[:-1]:
            exchange.notify(value)
        if message.get("method") == "subscriptions/listen" and values:
            exchange.notify(values[-1])
            exchange.cancelled.wait(5)
            return None
        return values[-1] if values else None


def _value(line: bytes) -> Any:
    text = line.decode("utf-8", "surrogatepass")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text
