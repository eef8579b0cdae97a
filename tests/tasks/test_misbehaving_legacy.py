"""A 2025-11-25 server that misbehaves as ``mcp-celery`` 0.2.0 does (tests/foreign/celery_like.py,
a socket-level server of the tests' own): a task nobody asked for is followed, never handed back
as the tool's result; a result the server refuses after saying completed is not a lost task; and
after the server restarts, no advice to join a session that died with it.
"""

from __future__ import annotations

import pytest

import mcp_tasks as mt
from tests.foreign.celery_like import NAME, REFUSAL, celery_like_server, restart


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "did not ask" in r.getMessage()]


@pytest.mark.parametrize("shape", ["nested", "flat"])
def test_a_task_nobody_asked_for_is_followed_not_returned(shape: str, caplog: pytest.LogCaptureFixture) -> None:
    with (
        caplog.at_level("WARNING", logger="mcp_tasks"),
        celery_like_server(shape=shape) as server,
        mt.Client.http(server.url) as client,
    ):
        assert not mt.may_create_task(client, "quick")  # tools/list gives it no taskSupport
        called = mt.call_tool(client, "quick")
        assert isinstance(called, mt.Status), called  # not {"task": {...}} as if it were the result
        assert mt.await_task(client, called, timeout=30)["content"][0]["text"] == "quick done"
        result = mt.call_and_await(client, "quick", raise_on_error=True, timeout=30)
        assert result["content"][0]["text"] == "quick done"
        assert server.journal.events(lambda e: e.get("event") == "task_asked") == []  # nobody asked
        said = _warnings(caplog)
    assert len(said) == 1, said  # once for the server, not once per call
    assert NAME in said[0] and called.task_id not in said[0] and called.task_id[-8:] not in said[0]


def test_a_result_refused_after_completed_is_no_lost_task() -> None:
    with celery_like_server(refuse_results=True, advertise=True) as server, mt.Client.http(server.url) as client:
        task = mt.call_tool(client, "quick")
        assert isinstance(task, mt.Status)
        read = mt.get_task(client, task)  # it must not raise: the task completed
        assert read.status is mt.TaskState.COMPLETED and read.result is None
        with pytest.raises(mt.McpError) as raised:
            mt.call_and_await(client, "quick", raise_on_error=True, timeout=30)
        with pytest.raises(mt.McpError) as waited:
            mt.await_task(client, task, timeout=30)
        assert server.journal.events(lambda e: e.get("method") == "tasks/result")  # it was asked
        assert server.journal.events(lambda e: e.get("event") == "task_unasked") == []  # one habit only
    for error in (raised.value, waited.value):
        message = str(error)
        assert "completed, but its result could not be fetched" in message, message
        assert REFUSAL in message and "-32602" in message
        assert "no longer known" not in message and "lost" not in message
        assert not isinstance(error, ValueError)


def test_after_the_server_restarts_no_advice_to_join_the_session_that_died() -> None:
    with celery_like_server(advertise=True) as server, mt.Client.http(server.url) as client:
        task = mt.call_tool(client, "hold")
        assert isinstance(task, mt.Status) and task.session_id is not None
        restart(server)
        with pytest.raises(mt.McpError) as raised:
            mt.get_task(client, task)
        assert server.initializes == 2  # the old session was gone: a new one asked
    message = str(raised.value)
    assert "not found" in message.lower(), message
    assert "session_id" not in message and "join that session" not in message
    assert "ended this connection's earlier session" in message
