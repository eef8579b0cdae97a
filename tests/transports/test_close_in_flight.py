"""Regression tests for issue 33 step 6: `close()` aborts what is in flight, on every transport.

Each test blocks a thread in a wait (or a plain request) against a server gone dark, a foreign one
of the tests' own that reads a request and never answers it (tests/foreign/dark_http.py over HTTP,
tests/foreign_stdio/server.py ``--dark`` over stdio), closes the client from the test thread once
the server holds the request, and then asserts that `close()` returned, that no ``mcp_tasks-``
thread is alive at that moment (close joins them all), and that the wait ended with the one
closed error. The client has no request timeout of its own: only the close can end the wait.

What failed before: a polling wait whose ``tasks/get`` was in flight over HTTP ran on until its
request timeout (none here: for ever), on the plain path and through ``Session.request`` alike, and
so did a plain request; with a listen wait whose stream was opening (its POST unanswered) `close()`
gave the ``mcp_tasks-watch`` thread 5 s and returned with it still running; a request that close
ended over stdio or HTTP said "the client is closed", a wait "the client was closed".

No timing is asserted: `Background.result` (a join with a generous bound) and pytest-timeout
catch a hang.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import mcp_tasks as mt
from tests.conftest import ROOT, Background, mcp_threads
from tests.foreign.dark_http import DarkServer

FAILSAFE = 60.0
CLOSED = "the client was closed"
TASK = "task-0123456789abcdef"
MODERN = "2026-07-28"
DARK_STDIO = [str(ROOT / "tests" / "foreign_stdio" / "server.py"), "--dark"]

Wait = Callable[[mt.Client], object]

WAITS: dict[str, Wait] = {
    "polling": lambda client: mt.wait_task(client, TASK, timeout=None, listen=False),
    "listening": lambda client: mt.wait_task(client, TASK, timeout=None, listen=True),
    "request": lambda client: client.request("tasks/get", {"taskId": TASK}, timeout=None),
}


def close_under(client: mt.Client, wait: Wait, held: threading.Event) -> None:
    """Run `wait` on a thread of its own; once the server holds what it sent, close the client
    from this thread: close returns with no library thread left, and the wait ends with the one
    closed error.
    """
    running = Background(lambda: wait(client))
    assert held.wait(FAILSAFE), "the server never got the request"
    client.close()
    assert mcp_threads() == []  # joined by close, not left to end later
    with pytest.raises(mt.TransportError) as raised:
        running.result(FAILSAFE)
    assert raised.value.message == CLOSED, repr(raised.value)


@pytest.fixture
def dark() -> Iterator[Callable[[str], DarkServer]]:
    made: list[DarkServer] = []

    def make(mode: str) -> DarkServer:
        server = DarkServer(mode)
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


def http_client(server: DarkServer, path: str) -> mt.Client:
    """A client of `server` with no request timeout; `path` "session" sends through
    `Session.request` (an auth object makes it), "plain" straight to the kept connections.
    """
    auth = ("user", "pass") if path == "session" else None
    return mt.Client.http(server.url, protocol=MODERN, timeout=None, auth=auth)


@pytest.mark.parametrize("path", ["plain", "session"])
@pytest.mark.parametrize("kind", ["polling", "request"])
def test_close_ends_a_request_in_flight_to_a_dark_http_server(
    dark: Callable[[str], DarkServer], kind: str, path: str
) -> None:
    """Before: the request's socket was left alone (the pool closed idle connections only)."""
    server = dark("get")
    client = http_client(server, path)
    try:
        close_under(client, WAITS[kind], server.dark)
    finally:
        client.close()
    assert server.methods == ["tasks/get"]


@pytest.mark.parametrize("mode", ["listen", "listen_head"])
def test_close_ends_a_listen_wait_whose_stream_is_opening(dark: Callable[[str], DarkServer], mode: str) -> None:
    """The stream's POST unanswered ("listen"), or answered with its headers and then nothing
    ("listen_head"). Before: close gave the watch thread 5 s, and returned with it running, while
    the POST was unanswered.
    """
    server = dark(mode)
    client = http_client(server, "plain")
    try:
        close_under(client, WAITS["listening"], server.dark)
    finally:
        client.close()
    assert "subscriptions/listen" in server.methods


@pytest.mark.parametrize("kind", ["polling", "listening", "request"])
def test_close_ends_a_request_in_flight_to_a_dark_stdio_server(kind: str) -> None:
    """Before: a plain request said "the client is closed" (a wait already ended at once)."""
    held = threading.Event()

    def noticed(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/dark":
            held.set()

    client = mt.Client.stdio(sys.executable, DARK_STDIO, protocol=MODERN, timeout=None, on_notification=noticed)
    try:
        close_under(client, WAITS[kind], held)
    finally:
        client.close()
