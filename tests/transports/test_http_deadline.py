"""One deadline from connect to the last byte (issue 16): a 1 s call raises within 1.1 s whatever
the server trickles, on every path a message takes (straight to the pool, through
`Session.request` with an auth object, through a user's own session), for the resumption GET of a
2025-era answer, and `close()` ends a standing GET that has no answer yet. Each failed on main:
the trickled headers held a 1 s call for 9.7 s, the silent resumption past 8 s, and close() left
the GET thread alive.

The issue demands "raises within 1.1 s"; the bound asserted here is generous (`LIMIT`) for a
loaded machine, and far below what the old behaviour took.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from requests.auth import AuthBase

import mcp_tasks as mt
from mcp_tasks._clock import Deadline
from mcp_tasks.transports.http import HttpTransport
from tests.conftest import mcp_threads
from tests.foreign.hostile_http import SESSION, VERSION, ForeignServer, LegacyHostile, Trickler, never_accepting
from tests.foreign.http_servers import Conn, Request

LIMIT = 1.6  # seconds for a 1 s call; the old behaviour took 9.7 s (trickled headers)


class Bearer(AuthBase):
    """An auth object: makes every message take `Session.request`."""

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = "Bearer t"
        return request


def timed(call: Callable[[], Any]) -> float:
    started = time.monotonic()
    with pytest.raises(mt.RequestTimeout):
        call()
    return time.monotonic() - started


@pytest.fixture
def trickler() -> Iterator[tuple[Trickler, ForeignServer]]:
    handler = Trickler()
    with ForeignServer(handler) as server:
        try:
            yield handler, server
        finally:
            handler.stop.set()


PATHS: dict[str, Callable[[str], dict[str, Any]]] = {
    "direct": lambda url: {},
    "auth": lambda url: {"auth": Bearer()},
    "user session": lambda url: {"session": requests.Session()},
    "user session with hooks": lambda url: {"session": _hooked()},
}


def _hooked() -> requests.Session:
    session = requests.Session()
    session.hooks["response"].append(lambda response, **kwargs: response)
    return session


@pytest.mark.parametrize("path", sorted(PATHS))
def test_trickled_headers_cannot_stretch_a_call(path: str, trickler: tuple[Trickler, ForeignServer]) -> None:
    _, server = trickler
    options = PATHS[path](server.url)
    with mt.Client.http(server.url, retries=0, protocol="2026-07-28", **options) as client:
        took = timed(lambda: client.call_tool("slow", timeout=1.0))
    assert 1.0 <= took < LIMIT


def test_an_auth_objects_resend_is_within_the_call() -> None:
    """A 401 answered by re-sending from a response hook (as HTTPDigestAuth does): the re-sent
    request's trickled answer is cut at the call's deadline."""
    trickler = Trickler()
    resent = threading.Event()

    def handler(request: Request, conn: Conn) -> None:
        if "authorization" not in request.headers:
            conn.json({"error": "who?"}, "401 Unauthorized", [("WWW-Authenticate", 'Bearer realm="t"')])
        else:
            trickler(request, conn)

    class Resending(AuthBase):
        def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
            request.register_hook("response", self.again)
            return request

        def again(self, response: requests.Response, **kwargs: Any) -> requests.Response:
            if response.status_code != 401:
                return response
            response.content  # noqa: B018 - read the 401 so its connection can be reused
            retry = response.request.copy()
            retry.headers["Authorization"] = "Bearer t"
            resent.set()
            again: requests.Response = response.connection.send(retry, **kwargs)
            return again

    with ForeignServer(handler) as server:
        try:
            with mt.Client.http(server.url, retries=0, protocol="2026-07-28", auth=Resending()) as client:
                took = timed(lambda: client.call_tool("slow", timeout=1.0))
        finally:
            trickler.stop.set()
    assert resent.is_set()
    assert took < LIMIT


def test_a_server_that_never_accepts_cannot_stretch_a_call() -> None:
    with never_accepting() as url, mt.Client.http(url, retries=0, protocol="2026-07-28") as client:
        took = timed(lambda: client.call_tool("slow", timeout=1.0))
    assert took < LIMIT


def handshake(transport: HttpTransport) -> None:
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    transport.request({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}, Deadline(30))
    assert transport.session_id == SESSION


def test_a_silent_resumption_get_cannot_stretch_a_call() -> None:
    handler = LegacyHostile()
    with ForeignServer(handler) as server:
        transport = HttpTransport(server.url)
        transport.retry = mt.Retry(0)
        try:
            handshake(transport)
            message = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
            took = timed(lambda: transport.request(message, Deadline(1.0)))
            assert handler.got_get.is_set()  # it did resume
            assert took < LIMIT
        finally:
            handler.stop.set()
            transport.close()


def test_close_ends_a_get_stream_waiting_for_its_answer() -> None:
    handler = LegacyHostile()
    with ForeignServer(handler) as server:
        transport = HttpTransport(server.url)
        try:
            handshake(transport)
            transport.begin_session(VERSION)
            assert handler.got_get.wait(30)
            assert any(name.startswith("mcp_tasks-http-get-") for name in mcp_threads())
            started = time.monotonic()
            transport.close()
            took = time.monotonic() - started
            assert mcp_threads() == []
            assert took < 1.0
        finally:
            handler.stop.set()
            transport.close()


def test_the_watchdog_is_one_thread_that_sleeps_while_idle(trickler: tuple[Trickler, ForeignServer]) -> None:
    _, server = trickler
    with mt.Client.http(server.url, retries=0, protocol="2026-07-28") as client:
        for _ in range(3):
            timed(lambda: client.call_tool("slow", timeout=0.3))
        dogs = [name for name in mcp_threads() if name.startswith("mcp_tasks-http-watchdog-")]
        assert len(dogs) == 1
    assert mcp_threads() == []


def test_close_ends_a_get_stream_still_connecting() -> None:
    """A server whose backlog is full: the GET stream's connect waits (its SYN dropped); close()
    cuts it and joins the thread at once (main: 5 s, and the thread left alive)."""
    with never_accepting() as url:
        transport = HttpTransport(url, session_id=SESSION)
        try:
            transport.begin_session(VERSION)
            assert any(name.startswith("mcp_tasks-http-get-") for name in mcp_threads())
            started = time.monotonic()
            transport.close()
            took = time.monotonic() - started
            assert mcp_threads() == []
            assert took < 1.0
        finally:
            transport.close()
