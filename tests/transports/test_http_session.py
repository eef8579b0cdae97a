"""The HTTP side of a 2025-era session, at the transport level, against socket-level servers
(tests/fixtures/legacy_http.py and tests/foreign): the DELETE that ends a session, joining a
session another process owns, a new session after an expiry, where the server's messages came
from, and an answer the server sends on the session's GET stream.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._clock import Deadline
from mcp_tasks._errors import SessionExpired
from mcp_tasks.transports._base import RequestId
from mcp_tasks.transports.direct import DirectTransport
from mcp_tasks.transports.http import HttpTransport
from mcp_tasks.transports.stdio import StdioTransport
from tests.conftest import ROOT
from tests.fixtures.legacy_http import LegacyHttpServer
from tests.foreign.http_servers import Conn, ForeignServer, Hangup, Request, result

PATIENT = 60.0
VERSION = "2025-11-25"


def message(key: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": key, "method": method, "params": params or {}}


def initialize(key: int = 1) -> dict[str, Any]:
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    return message(key, "initialize", params)


def handshake(transport: HttpTransport) -> None:
    """What the client does for a 2025-era session: initialize, then the session begins."""
    transport.request(initialize(), Deadline(PATIENT))
    transport.begin_session(VERSION)


@pytest.fixture
def legacy() -> Iterator[LegacyHttpServer]:
    with LegacyHttpServer() as server:
        yield server


def gets_for(server: LegacyHttpServer, session: str) -> list[dict[str, str]]:
    """The GETs the server got for `session`, once there is one."""
    with server.got_get:
        server.got_get.wait_for(lambda: any(g.get("mcp-session-id") == session for g in server.gets), PATIENT)
        return [g for g in server.gets if g.get("mcp-session-id") == session]


# -- the DELETE ----------------------------------------------------------------------------------


def test_the_delete_that_ends_a_session_carries_its_protocol_version(legacy: LegacyHttpServer) -> None:
    with mt.Client.http(legacy.url, timeout=30) as client:
        client.list_tools()
    [delete] = legacy.deletes
    assert delete["mcp-session-id"] == "session-1"
    assert delete["mcp-protocol-version"] == VERSION


def test_close_gives_up_on_a_delete_the_server_never_answers() -> None:
    """A server gone dark at the end: `close()` returns while the DELETE is still held (its bound,
    measured in bench/close_in_flight.py, is DELETE_TIMEOUT), and leaves no thread behind."""
    with LegacyHttpServer(dark_delete=True) as server:
        client = mt.Client.http(server.url, timeout=30)
        client.list_tools()
        client.close()
        assert not server.stopping.is_set()
        assert server.delete_held.wait(PATIENT)
        [delete] = server.deletes
        assert delete["mcp-session-id"] == "session-1"


# -- session_id, and joining a session ------------------------------------------------------------


class Silent:
    """A direct server object that answers nothing."""

    def handle(self, message: dict[str, Any], exchange: Any) -> dict[str, Any] | None:
        return None


def test_only_http_has_a_session_id(legacy: LegacyHttpServer) -> None:
    direct = DirectTransport(Silent())
    stdio = StdioTransport(sys.executable, [str(ROOT / "tests" / "foreign_stdio" / "server.py")])
    http = HttpTransport(legacy.url)
    try:
        assert direct.session_id is None and stdio.session_id is None
        assert http.session_id is None  # no handshake yet
        handshake(http)
        assert http.session_id == "session-1"
    finally:
        for transport in (direct, stdio, http):
            transport.close()


def test_a_joined_session_is_carried_from_the_first_request_and_never_deleted(legacy: LegacyHttpServer) -> None:
    owner = HttpTransport(legacy.url)
    try:
        handshake(owner)
        joined = HttpTransport(legacy.url, session_id="session-1")
        try:
            assert joined.session_id == "session-1"
            # The fixture refuses a request without a session (400) or with one it does not know (404).
            assert joined.request(message(2, "tools/list"), Deadline(PATIENT))["result"]["tools"]
            joined.begin_session(VERSION)
            assert joined.session_id == "session-1"
            assert joined.request(message(3, "tools/list"), Deadline(PATIENT))["result"]["tools"]
        finally:
            joined.close()
        assert legacy.deletes == []  # not the joiner's to end
        assert owner.request(message(4, "tools/list"), Deadline(PATIENT))["result"]["tools"]
    finally:
        owner.close()
    assert [d["mcp-session-id"] for d in legacy.deletes] == ["session-1"]  # the owner's


def test_a_session_id_must_be_visible_ascii() -> None:
    with pytest.raises(ValueError, match="session_id"):
        HttpTransport("http://127.0.0.1:9/mcp", session_id="not ascii é")


# -- a new session after an expiry -----------------------------------------------------------------


def test_begin_session_after_an_expiry_moves_to_the_new_session() -> None:
    with LegacyHttpServer(expire_after=3) as server:
        transport = HttpTransport(server.url)
        try:
            handshake(transport)
            assert gets_for(server, "session-1")
            with pytest.raises(SessionExpired):
                for key in range(2, 10):
                    transport.request(message(key, "tools/list"), Deadline(PATIENT))
            forgotten = transport.session_id
            assert forgotten is None
            transport.request(initialize(20), Deadline(PATIENT))
            transport.begin_session(VERSION)
            assert transport.session_id == "session-2"
            [first, *_] = gets_for(server, "session-2")  # the GET stream of the new session
            assert first["mcp-protocol-version"] == VERSION
            assert transport.request(message(21, "tools/list"), Deadline(PATIENT))["result"]["tools"]
        finally:
            transport.close()
        assert [d["mcp-session-id"] for d in server.deletes] == ["session-2"]


# -- where a server's message came from, and an answer on the GET stream ---------------------------


Handler = Callable[[Request, Conn], None]


class Session:
    """A socket-level 2025-era server: a session from initialize, a GET stream that stays open,
    and a tools/call answered by `on_call` (by default: a notification, then the response, on the
    POST's SSE answer)."""

    def __init__(self, on_call: Handler | None = None) -> None:
        self.on_call: Handler = on_call or self.answer_on_the_post
        self.get_conn: Conn | None = None
        self.get_open = threading.Event()
        self.order: list[str] = []
        self.lock = threading.Lock()
        self.server = ForeignServer(self.handle)

    def handle(self, request: Request, conn: Conn) -> None:
        with self.lock:
            self.order.append(request.rpc_method or request.method)
        if request.method == "GET":
            conn.sse_head()
            conn.event({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "on the GET"}})
            self.get_conn = conn
            self.get_open.set()
            conn.wait_hangup(PATIENT)
            raise Hangup
        if request.method == "DELETE":
            conn.empty("200 OK")
        elif request.rpc_method == "initialize":
            answer = {"protocolVersion": VERSION, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
            conn.json(result(request, answer), headers=[("Mcp-Session-Id", "s-1")])
        elif request.rpc_method == "tools/call":
            self.on_call(request, conn)
        elif request.id is None:
            conn.empty()
        else:
            conn.json(result(request, {}))

    def answer_on_the_post(self, request: Request, conn: Conn) -> None:
        conn.sse_head()
        conn.event({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "on the POST"}})
        conn.event(result(request, {"content": []}))
        conn.sse_end()


def test_a_message_on_a_posts_answer_names_the_post_and_one_on_the_get_stream_names_none() -> None:
    session = Session()
    transport = HttpTransport(session.server.url)
    got: list[tuple[Any, RequestId | None]] = []
    on_the_get = threading.Event()

    def receiver(message: dict[str, Any], origin: RequestId | None) -> None:
        got.append((message["params"]["data"], origin))
        if message["params"]["data"] == "on the GET":
            on_the_get.set()

    transport.attach(receiver=receiver)
    try:
        handshake(transport)
        transport.request(message(5, "tools/call", {"name": "x"}), Deadline(PATIENT))
        assert on_the_get.wait(PATIENT)
        assert sorted(got, key=str) == [("on the GET", None), ("on the POST", 5)]
    finally:
        transport.close()
        session.server.close()


def test_the_first_request_of_a_session_goes_once_its_get_stream_is_open() -> None:
    session = Session()
    transport = HttpTransport(session.server.url)
    try:
        handshake(transport)
        transport.request(message(2, "tools/list"), Deadline(PATIENT))
        assert session.order == ["initialize", "GET", "tools/list"]
    finally:
        transport.close()
        session.server.close()


def test_an_answer_the_server_sends_on_the_get_stream_answers_the_request_waiting_for_it() -> None:
    """As the conformance suite's sse-retry server does: the POST's SSE answer ends after a priming
    event (resumable), and the response comes on the session's GET stream, not on the resumption."""

    def answer_on_the_get(request: Request, conn: Conn) -> None:
        conn.sse_head()
        conn.sse_raw(b"id: e1\nretry: 600000\ndata: \n\n")  # resume after ten minutes
        assert session.get_conn is not None
        session.get_conn.event(result(request, {"content": [{"type": "text", "text": "via GET"}]}), "g9")
        conn.sse_end()

    session = Session(answer_on_the_get)
    transport = HttpTransport(session.server.url)
    try:
        handshake(transport)
        assert session.get_open.wait(PATIENT)
        answer = transport.request(message(7, "tools/call", {"name": "x"}), Deadline(PATIENT))
        assert answer["result"]["content"][0]["text"] == "via GET"
        assert transport.in_flight == frozenset()
    finally:
        transport.close()
        session.server.close()
