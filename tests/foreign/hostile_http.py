"""HTTP servers with bad habits that per-step timeouts cannot bound, at the socket level (built on
`ForeignServer`, sharing nothing with mcp_tasks): status lines and headers trickled a byte at a
time, an SSE answer cut before its response whose resumption GET is accepted and never answered,
a GET stream that never answers, and a listener that never accepts (its backlog full).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

from tests.foreign.http_servers import Conn, ForeignServer, Request, result, trickle

SESSION = "session-hostile-0001"
VERSION = "2025-11-25"
TRICKLED_HEAD = b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 20) for i in range(40))


class Trickler:
    """Answers every POST with a status line and headers trickled a byte every `pause` seconds
    (a slow proxy); `stop` ends the trickles."""

    def __init__(self, pause: float = 0.3) -> None:
        self.pause = pause
        self.stop = threading.Event()

    def __call__(self, request: Request, conn: Conn) -> None:
        trickle(conn, TRICKLED_HEAD, self.pause, self.stop)
        conn.keep_alive = False


class LegacyHostile:
    """A 2025-era server: ``initialize`` gives a session; ``tools/list`` is answered on an SSE
    stream that gives an event id and a short ``retry:``, then ends before the response; every
    GET (a resumption, or the session's stream) is accepted and never answered. `got_get` is
    set at the first GET.
    """

    def __init__(self) -> None:
        self.got_get = threading.Event()
        self.stop = threading.Event()

    def __call__(self, request: Request, conn: Conn) -> None:
        if request.method == "GET":
            self.got_get.set()
            self.stop.wait(30)
            conn.keep_alive = False
            return
        if request.method == "DELETE":
            conn.empty("200 OK")
            return
        method = request.rpc_method
        if method == "initialize":
            answer = result(request, {"protocolVersion": VERSION, "capabilities": {}, "serverInfo": _info()})
            conn.json(answer, headers=[("Mcp-Session-Id", SESSION)])
        elif request.id is None:
            conn.empty()
        else:
            conn.sse_head(close_delimited=True)
            conn.sse_raw(b"id: ev-1\nretry: 10\ndata: \n\n")


def _info() -> dict[str, Any]:
    return {"name": "hostile", "version": "1"}


@contextlib.contextmanager
def never_accepting() -> Iterator[str]:
    """The URL of a listener that never accepts, with its backlog full: a connect to it waits
    (its SYN dropped) until the client gives up.
    """
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers: list[socket.socket] = []
    try:
        for _ in range(8):
            filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            filler.setblocking(False)
            fillers.append(filler)
            with contextlib.suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


__all__ = ["SESSION", "VERSION", "ForeignServer", "LegacyHostile", "Trickler", "never_accepting"]


class ExpiringSession:
    """A 2025-era server whose sessions expire: ``initialize`` gives ``s-1``, ``s-2``…; a tools/call
    named ``expire`` expires the session and asks the client a ``ping`` on its SSE answer, so the
    client's posted answer gets 404; a message with an expired session
    id gets 404, one without a session id 400 (as real servers do). No GET stream (405).
    `answers` counts the client's posted answers.
    """

    def __init__(self) -> None:
        self.sessions = 0
        self.live: str | None = None
        self.answers: list[tuple[str | None, int]] = []
        self.lock = threading.Lock()

    def __call__(self, request: Request, conn: Conn) -> None:
        session = request.headers.get("mcp-session-id")
        if request.method == "GET":
            conn.empty("405 Method Not Allowed")
            return
        if request.method == "DELETE":
            conn.empty("200 OK")
            return
        if request.rpc_method == "initialize":
            with self.lock:
                self.sessions += 1
                self.live = f"s-{self.sessions}"
            answer = result(request, {"protocolVersion": VERSION, "capabilities": {}, "serverInfo": _info()})
            conn.json(answer, headers=[("Mcp-Session-Id", self.live)])
            return
        if session is None:
            conn.json(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "no session"}}, "400 Bad Request"
            )
            return
        if session != self.live:
            if isinstance(request.json, dict) and "result" in request.json:
                with self.lock:  # noted before the answer, which the client may act on at once
                    self.answers.append((session, 404))
            conn.json({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "gone"}}, "404 Not Found")
            return
        if isinstance(request.json, dict) and ("result" in request.json or "error" in request.json):
            with self.lock:
                self.answers.append((session, 202))
            conn.empty()
            return
        if request.id is None:
            conn.empty()
            return
        name = request.params.get("name")
        if request.rpc_method == "tools/call" and name == "expire":
            conn.sse_head()
            with self.lock:  # expired before the ping goes out, so its answer (however quick) gets 404
                self.live = None
            conn.event({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
            conn.event(result(request, {"content": [{"type": "text", "text": "expired"}]}))
            conn.sse_end()
            return
        text = f"ok on {session}"
        conn.json(result(request, {"content": [{"type": "text", "text": text}], "tools": []}))
