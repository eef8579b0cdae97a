"""The pool never lends a dirty connection (issue 16): a connection goes back only after its answer
was read to a clean end, and is closed otherwise. One transport is shared by threads while every
kind of half-read happens (a body that timed out half read, an SSE answer whose stream stays open
past the drain, a body over the size cap, an error answer cut short, a body that does not
decompress); the server notes any request that arrives on a connection whose answer was left half
read, and every ordinary request must succeed. And what a server sent reaches errors and logs
only as a short, redacted excerpt.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest
import requests

import mcp_tasks as mt
from mcp_tasks._clock import Deadline
from mcp_tasks.transports.http import HttpTransport
from tests.foreign.http_servers import Conn, ForeignServer, Request, tool_result

SECRET = "task-7f3a9c1e5b2d4f6a8c0e1b3d5f7a9c1e"


def message(key: int, name: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": key, "method": "tools/call", "params": {"name": name, "arguments": {}}}


def poison(conn: Conn) -> None:
    """Leave the rest of an answer unsent; a request that arrives on this connection anyway means
    the client reused it dirty: it gets the old answer's rest (with a full task id) as its own."""
    data = conn.sock.recv(65536)
    if data:
        with conn.server.lock:
            conn.server.dirty += 1  # type: ignore[attr-defined]
        conn.send(b"x" * 64 + f"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{SECRET}".encode())
    conn.keep_alive = False


HALF: dict[str, Callable[[Request, Conn], None]] = {}


def half_json(request: Request, conn: Conn) -> None:
    conn.head("200 OK", [("Content-Type", "application/json"), ("Content-Length", "500")])
    conn.send(b'{"jsonrpc": "2.0", ')
    poison(conn)


def open_sse(request: Request, conn: Conn) -> None:
    conn.sse_head()
    conn.event(tool_result(request))
    conn.comment("still open " + "y" * 70000)  # more than the drain keeps reading
    poison(conn)


def oversized(request: Request, conn: Conn) -> None:
    conn.head("200 OK", [("Content-Type", "application/json"), ("Content-Length", "5000")])
    conn.send(b" " * 4500)
    poison(conn)


def error_cut_short(request: Request, conn: Conn) -> None:
    conn.head("500 Internal Server Error", [("Content-Type", "text/plain"), ("Content-Length", "500")])
    conn.send(b"it broke")
    poison(conn)


def bad_gzip(request: Request, conn: Conn) -> None:
    conn.head("200 OK", [("Content-Type", "application/json"), ("Content-Encoding", "gzip"), ("Content-Length", "400")])
    conn.send(b"\x1f\x8b\x08\x00" + b"\xff" * 60)
    poison(conn)


HALF.update(half_json=half_json, open_sse=open_sse, oversized=oversized, error_cut_short=error_cut_short)
HALF["bad_gzip"] = bad_gzip


def handler(request: Request, conn: Conn) -> None:
    name = request.params.get("name")
    if name in HALF:
        HALF[name](request, conn)
    else:
        conn.json(tool_result(request, f"ok {request.id}"))


def bearer(request: requests.PreparedRequest) -> requests.PreparedRequest:
    request.headers["Authorization"] = "Bearer t"
    return request


PATHS: dict[str, Callable[[], dict[str, Any]]] = {
    "direct": dict,
    "auth": lambda: {"auth": bearer},
    "user session": lambda: {"session": requests.Session()},
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_no_request_after_a_half_read_fails(path: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_tasks")
    with ForeignServer(handler) as server:
        server.dirty = 0  # type: ignore[attr-defined]
        transport = HttpTransport(server.url, **PATHS[path]())
        transport.retry = mt.Retry(0)
        transport.max_message = 4096
        failures: list[BaseException] = []
        half_errors: list[BaseException] = []
        keys = iter(range(1, 10_000))
        lock = threading.Lock()

        def key() -> int:
            with lock:
                return next(keys)

        def worker(kind: str) -> None:
            try:
                for _ in range(3):
                    try:
                        transport.request(message(key(), kind), Deadline(0.5))
                    except mt.McpError as exc:
                        half_errors.append(exc)
                    for _ in range(2):
                        answer = transport.request(message(key(), "ok"), Deadline(30))
                        assert answer["result"]["content"][0]["text"].startswith("ok")
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=worker, args=(kind,)) for kind in sorted(HALF) for _ in range(2)]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
        finally:
            transport.close()
        assert failures == []
        assert server.dirty == 0  # type: ignore[attr-defined]
        assert len(half_errors) == 3 * 2 * (len(HALF) - 1)  # each half-read but the SSE answer fails
    everything = " ".join(str(e) for e in half_errors) + " ".join(r.getMessage() for r in caplog.records)
    assert SECRET not in everything


def test_a_bad_status_line_is_quoted_short_and_redacted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_tasks")

    def garbage(request: Request, conn: Conn) -> None:
        conn.send(f"SPDY/9 {SECRET} {'z' * 300}\r\n\r\n".encode())
        conn.keep_alive = False

    with (
        ForeignServer(garbage) as server,
        mt.Client.http(server.url, retries=0, protocol="2026-07-28") as client,
        pytest.raises(mt.TransportError) as caught,
    ):
        client.call_tool("x", timeout=10)
    text = str(caught.value)
    assert SECRET not in text
    assert "task…9c1e" in text  # the short form: enough to recognise, not to use
    assert len(text) < 400
    assert all(SECRET not in r.getMessage() for r in caplog.records)
