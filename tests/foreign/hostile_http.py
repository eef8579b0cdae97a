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
