"""The private plumbing of requests, urllib3 and http.client, all in transports/_plumbing.py,
checked here where it is used: at the current versions and at the declared floors (.ci/floors.txt,
``python3 .ci/dev.py floors``). And a user's `requests.Session` shared with other origins (eleven
pools, more than requests keeps by default) leaves the client's pool alone: on main, at the floors,
the session evicted and closed it, and every later request failed with ClosedPoolError.
"""

from __future__ import annotations

import http.client
import socket
from collections.abc import Callable

import pytest
import requests

import mcp_tasks as mt
from mcp_tasks._clock import Deadline
from mcp_tasks.transports._plumbing import WatchedAdapter, http_response, socket_of
from mcp_tasks.transports._watchdog import Watchdog, watching
from tests.foreign.http_servers import Conn, ForeignServer, Request, tool_result


def answer(request: Request, conn: Conn) -> None:
    if request.method == "GET":
        conn.body(b"other origin", headers=[("Content-Type", "text/plain")])
    else:
        conn.json(tool_result(request, "ok"))


def test_the_watched_adapter_attaches_new_and_reused_sockets() -> None:
    dog = Watchdog("t")
    session = requests.Session()
    session.mount("http://", WatchedAdapter())
    with ForeignServer(answer) as server:
        seen: list[socket.socket | None] = []
        for _ in range(2):
            watch = dog.watch(Deadline(30))
            with watching(watch):
                response = session.get(server.url, stream=True)
            seen.append(watch.sock)
            assert isinstance(watch.sock, socket.socket)
            fp = http_response(response.raw)
            assert isinstance(fp, http.client.HTTPResponse)
            assert socket_of(fp) is watch.sock
            assert response.raw.read() == b"other origin"
            assert not watch.detach(watch.sock)
            watch.close()
            response.close()
        assert seen[0] is seen[1]  # the second request reused the connection, and attached it
        assert server.connections == 1
    session.close()
    dog.close()


def test_a_fired_watch_cuts_a_socket_attached_later() -> None:
    dog = Watchdog("t")
    session = requests.Session()
    session.mount("http://", WatchedAdapter())
    with ForeignServer(answer) as server:
        watch = dog.watch(None)
        watch.fire()
        with watching(watch), pytest.raises(requests.ConnectionError):
            session.get(server.url)
    session.close()
    dog.close()


def other_origins(count: int) -> list[ForeignServer]:
    return [ForeignServer(answer) for _ in range(count)]


def hooked() -> requests.Session:
    session = requests.Session()
    session.hooks["response"].append(lambda response, **kwargs: response)
    return session


SESSIONS: dict[str, Callable[[], requests.Session]] = {"plain": requests.Session, "with a hook": hooked}


@pytest.mark.parametrize("kind", sorted(SESSIONS))
def test_a_shared_session_that_talks_to_other_origins_leaves_our_pool_alone(kind: str) -> None:
    session = SESSIONS[kind]()
    others = other_origins(11)
    try:
        with ForeignServer(answer) as server:
            with mt.Client.http(server.url, session=session, protocol="2026-07-28", retries=0) as client:
                assert client.call_tool("a")["content"][0]["text"] == "ok"
                for other in others:
                    assert session.get(other.url).text == "other origin"
                assert client.call_tool("b")["content"][0]["text"] == "ok"
            assert session.get(others[0].url).text == "other origin"  # the user's session still works
    finally:
        for other in others:
            other.close()
        session.close()
