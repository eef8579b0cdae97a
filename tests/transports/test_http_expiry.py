"""A 2025-era session the server expires while the client posts a message that is not a request
(here the answer to the server's own request): the 404 goes through the client's one expiry path,
so the next call sets up a new session (initialize once) and goes through. On main the session was
forgotten without a new handshake, and every later request failed (400, no session) until a new
Client was made. Against the socket-level `ExpiringSession` of tests/foreign/hostile_http.py.
"""

from __future__ import annotations

import pytest

import mcp_tasks as mt
from mcp_tasks._clock import Deadline
from mcp_tasks._errors import SessionExpired
from mcp_tasks.transports.http import HttpTransport
from tests.foreign.hostile_http import VERSION, ExpiringSession, ForeignServer


def test_a_404_to_a_posted_answer_leads_to_a_new_session() -> None:
    handler = ExpiringSession()
    with (
        ForeignServer(handler) as server,
        mt.Client.http(server.url, retries=0, timeout=30, protocol=VERSION) as client,
    ):
        first = client.call_tool("expire")
        assert first["content"][0]["text"] == "expired"
        assert handler.answers == [("s-1", 404)]  # the answer to the ping came after the expiry
        after = client.call_tool("again")
        assert after["content"][0]["text"] == "ok on s-2"
        assert handler.sessions == 2
        assert client.call_tool("more")["content"][0]["text"] == "ok on s-2"
        assert handler.sessions == 2  # once


def test_the_transport_reports_an_expiry_on_a_notification_to_the_next_sender() -> None:
    handler = ExpiringSession()
    with ForeignServer(handler) as server:
        transport = HttpTransport(server.url)
        try:
            params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
            transport.request({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}, Deadline(30))
            transport.begin_session(VERSION)
            handler.live = None  # the server expires the session
            with pytest.raises(SessionExpired):
                transport.notify({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}})
            with pytest.raises(SessionExpired):  # not sent without its session: the caller sets up a new one
                transport.request({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}, Deadline(30))
            transport.request({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": params}, Deadline(30))
            assert transport.session_id == "s-2"
        finally:
            transport.close()
