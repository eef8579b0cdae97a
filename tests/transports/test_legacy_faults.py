"""Legacy (2025-era) faults against a small socket-level HTTP server of our own
(tests/fixtures/legacy_http.py, no mcp_tasks code): an expired session, a GET stream that drops, a
server request the client has no handler for, a tasks/result that never answers, and the older
revisions' counter-offers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

import mcp_tasks as mt
from tests.fixtures.legacy_http import LegacyHttpServer


@pytest.fixture
def server() -> Iterator[LegacyHttpServer]:
    with LegacyHttpServer() as made:
        yield made


def test_an_expired_session_is_set_up_again_once_and_the_call_succeeds() -> None:
    with LegacyHttpServer(expire_after=2) as server, mt.Client.http(server.url, timeout=10) as client:
        assert client.era == "legacy"
        for _ in range(3):  # the third request of the session meets a 404
            result = mt.call_tool(client, "plain")
            assert isinstance(result, dict)
            assert result["content"][0]["text"] == "ran plain"
        assert server.initializes == 2
        assert server.expired_answers >= 1


def test_a_get_stream_that_drops_is_opened_again_with_the_last_event_id(
    server: LegacyHttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_tasks.server")
    with mt.Client.http(server.url, timeout=10) as client:
        assert client.era == "legacy"
        assert server.second_get.wait(10), "the client did not open the GET stream again"
        assert server.gets[1].get("last-event-id") == "g1"
        assert server.gets[0].get("mcp-session-id") == server.gets[1].get("mcp-session-id") == "session-1"
    messages = [r.getMessage() for r in caplog.records if r.name == "mcp_tasks.server"]
    assert "get 1" in messages


def test_a_server_request_without_a_handler_gets_an_error_back(server: LegacyHttpServer) -> None:
    with mt.Client.http(server.url, timeout=10) as client:  # no sampling handler
        result = mt.call_tool(client, "ask_sampling")
        assert isinstance(result, dict)
        assert result["content"][0]["text"] == "the client refused"
    answer = server.client_answers["srv-1"]
    assert answer["error"]["code"] == -32601
    assert "sampling" in answer["error"]["message"]


def test_a_tasks_result_that_never_answers_ends_at_the_wait_deadline(server: LegacyHttpServer) -> None:
    with mt.Client.http(server.url, timeout=10) as client:
        status = mt.call_tool(client, "as_task")
        assert isinstance(status, mt.Status)
        assert status.era == "legacy"
        with pytest.raises(mt.TaskTimeout) as late:
            mt.await_task(client, status, timeout=0.5)
        assert server.held.is_set()
        assert late.value.status is not None
        assert late.value.status.task_id == status.task_id


@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26"])
def test_an_older_counter_offer_gives_plain_tools_and_no_tasks(version: str) -> None:
    with LegacyHttpServer(version=version) as server, mt.Client.http(server.url, timeout=10) as client:
        assert client.protocol_version == version
        assert client.era == "legacy"
        result = mt.call_tool(client, "as_task")  # the tool allows tasks; the revision has none
        assert isinstance(result, dict)
        assert result["content"][0]["text"] == "ran as_task"
        assert mt.call_and_await(client, "plain", timeout=5)["content"][0]["text"] == "ran plain"


def test_a_pinned_protocol_skips_the_probe(server: LegacyHttpServer) -> None:
    with mt.Client.http(server.url, timeout=10, protocol="2025-11-25") as client:
        assert client.protocol_version == "2025-11-25"
        assert mt.call_tool(client, "plain")["content"][0]["text"] == "ran plain"  # type: ignore[index]
