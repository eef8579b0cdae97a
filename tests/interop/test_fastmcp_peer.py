"""The Tasks client against an independent server, fastmcp-tasks 4.1.4 (tests/interop/fastmcp_server.py),
over stdio and over HTTP.

What this peer does that our reference server does not is asserted here on purpose (server-minted
input keys, cancel acked on a finished task, no subscriptions/listen): if the peer changes, the
test says so.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

import mcp_tasks as mt
from tests.conftest import eventually
from tests.interop.conftest import Peer

pytestmark = pytest.mark.interop

TASKS = "io.modelcontextprotocol/tasks"
WAIT = 20.0  # seconds: a bound on every wait, never a measurement


def text_of(result: dict[str, Any]) -> str:
    """The text of a CallToolResult's single text block."""
    content = result["content"]
    assert len(content) == 1 and content[0]["type"] == "text", content
    text: str = content[0]["text"]
    return text


def started(client: mt.Client, name: str, arguments: dict[str, Any] | None = None) -> mt.Status:
    """A tool call the server made a task."""
    status = mt.call_tool(client, name, arguments or {}, follow=False)  # the shared client: no watch thread
    assert isinstance(status, mt.Status), status
    return status


class FormRecorder:
    """A form handler that confirms, and remembers what it was asked."""

    def __init__(self, confirmed: bool = True) -> None:
        self.asked: list[dict[str, Any]] = []
        self.confirmed = confirmed

    def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(params)
        return {"action": "accept", "content": {"confirmed": self.confirmed}}


# -- negotiation ---------------------------------------------------------------------------------


def test_server_supports_the_extension(peer: Peer) -> None:
    client = peer.client()
    assert mt.server_supports(client) is True
    discovered = client.discover()
    assert "2026-07-28" in discovered["supportedVersions"]
    assert discovered["capabilities"]["extensions"][TASKS] == {}


# -- calling tools -------------------------------------------------------------------------------


def test_a_task_tool_becomes_a_task_and_is_awaited_by_polling(peer: Peer) -> None:
    client = peer.client()
    status = started(client, "slow", {"seconds": 0.2, "label": "poll"})
    assert status.status is mt.TaskState.WORKING
    assert status.raw["resultType"] == "task"
    assert status.poll_interval_ms == 100
    assert isinstance(status.ttl_ms, int) and status.ttl_ms > 0
    assert (status.input_requests, status.result, status.error) == ({}, None, None)
    result = mt.await_task(client, status, timeout=WAIT)
    assert text_of(result) == "poll done after 0.2s"
    assert result["structuredContent"] == {"result": "poll done after 0.2s"}
    assert result.get("isError") is False


def test_a_task_awaited_by_id_reports_each_change(peer: Peer) -> None:
    client = peer.client()
    status = started(client, "slow", {"seconds": 0.2})
    seen: list[mt.Status] = []
    final = mt.wait_task(client, status.task_id, timeout=WAIT, on_status=seen.append)
    assert final.status is mt.TaskState.COMPLETED
    assert seen[-1] is final
    assert all(s.status is mt.TaskState.WORKING for s in seen[:-1])
    assert text_of(mt.outcome(final)) == "slow done after 0.2s"


def test_call_and_await_in_one_call(peer: Peer) -> None:
    result = mt.call_and_await(peer.client(), "slow", {"seconds": 0.1, "label": "one"}, timeout=WAIT)
    assert text_of(result) == "one done after 0.1s"


def test_a_tool_without_task_support_answers_inline_even_when_tasks_are_declared(peer: Peer) -> None:
    client = peer.client()
    called = mt.call_tool(client, "plain", {"x": 3})
    assert isinstance(called, dict)
    assert called["resultType"] == "complete"
    assert called["structuredContent"] == {"result": 4}
    assert mt.call_and_await(client, "plain", {"x": 41})["structuredContent"] == {"result": 42}


def test_an_optional_task_tool_runs_inline_without_the_declaration(peer: Peer) -> None:
    result = peer.client().call_tool("slow", {"seconds": 0, "label": "inline"})
    assert result["resultType"] == "complete"
    assert text_of(result) == "inline done after 0.0s"


def test_a_required_task_tool_without_the_declaration_is_refused(peer: Peer) -> None:
    client = peer.client()
    with pytest.raises(mt.McpError) as refused:
        client.call_tool("must_task")
    assert refused.value.code == -32021
    assert refused.value.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    assert text_of(mt.call_and_await(client, "must_task", timeout=WAIT)) == "ran as a task"


def test_task_methods_without_the_declaration_are_refused(peer: Peer) -> None:
    client = peer.client()
    status = started(client, "slow", {"seconds": 0})
    with pytest.raises(mt.McpError) as refused:
        client.request("tasks/get", {"taskId": status.task_id})
    assert refused.value.code == -32021
    assert mt.await_task(client, status, timeout=WAIT)["isError"] is False


# -- input -----------------------------------------------------------------------------------------


def test_input_is_answered_by_the_form_handler(peer: Peer) -> None:
    form = FormRecorder()
    client = peer.client(input_handlers=mt.InputHandlers(form=form))
    status = started(client, "confirm_delete", {"item": "a.txt"})
    result = mt.await_task(client, status, timeout=WAIT)
    assert text_of(result) == "deleted a.txt"
    assert len(form.asked) == 1
    assert form.asked[0]["message"] == "Delete a.txt?"
    assert form.asked[0]["requestedSchema"]["required"] == ["confirmed"]


def test_input_keys_are_minted_by_the_server_and_answered_by_hand(peer: Peer) -> None:
    client = peer.client()
    status = started(client, "confirm_delete", {"item": "b.txt"})
    asking = mt.wait_task(client, status, timeout=WAIT, input="return")
    assert asking.status is mt.TaskState.INPUT_REQUIRED
    (key,) = asking.input_requests
    # The tool asked under "confirm"; this peer surfaces "<taskId>:<16 hex>" instead.
    assert re.fullmatch(re.escape(status.task_id) + r":[0-9a-f]{16}", key), key
    assert asking.input_requests[key]["method"] == "elicitation/create"
    with pytest.raises(mt.InputRequired) as unanswered:
        mt.outcome(asking)
    assert unanswered.value.status is asking
    mt.update_task(client, asking, {key: {"action": "decline"}})
    mt.update_task(client, asking, {key: {"action": "accept", "content": {"confirmed": True}}})  # stale: a no-op
    assert text_of(mt.await_task(client, asking, timeout=WAIT, input="return")) == "kept b.txt"


def test_input_during_a_synchronous_call_is_answered_too(peer: Peer) -> None:
    form = FormRecorder(confirmed=False)
    result = peer.client(input_handlers=mt.InputHandlers(form=form)).call_tool("confirm_delete", {"item": "c.txt"})
    assert result["resultType"] == "complete"
    assert text_of(result) == "kept c.txt"
    assert [asked["message"] for asked in form.asked] == ["Delete c.txt?"]


# -- outcomes ------------------------------------------------------------------------------------


def test_a_protocol_error_fails_the_task(peer: Peer) -> None:
    client = peer.client()
    status = started(client, "protocol_error")
    with pytest.raises(mt.TaskFailed) as failed:
        mt.await_task(client, status, timeout=WAIT)
    error = failed.value
    assert (error.code, error.message, error.data) == (-32050, "quota exceeded on purpose", {"retryAfterMs": 1500})
    assert "quota exceeded on purpose" in str(error)
    assert error.status.status is mt.TaskState.FAILED
    assert error.status.status_message == "quota exceeded on purpose"
    assert error.status.result is None


def test_a_tool_error_is_a_completed_task_whose_result_is_returned(peer: Peer) -> None:
    client = peer.client()
    status = started(client, "tool_error")
    result = mt.await_task(client, status, timeout=WAIT)
    assert result["isError"] is True
    assert text_of(result) == "the tool failed on purpose"


def test_an_unexpected_exception_in_this_peer_is_a_tool_error_with_its_text(peer: Peer) -> None:
    client = peer.client()
    result = mt.await_task(client, started(client, "crash"), timeout=WAIT)
    assert result["isError"] is True
    assert text_of(result) == "Error calling tool 'crash': unexpected crash, private detail: /srv/secret"


def test_a_cancelled_task_raises_task_cancelled(peer: Peer) -> None:
    client = peer.client()
    status = started(client, "long")
    running = eventually(lambda: (s := mt.get_task(client, status)).status_message == "started" and s, WAIT)
    assert running.status is mt.TaskState.WORKING
    mt.cancel_task(client, status)
    with pytest.raises(mt.TaskCancelled) as cancelled:
        mt.await_task(client, status, timeout=WAIT)
    assert cancelled.value.status.status is mt.TaskState.CANCELLED
    mt.cancel_task(client, status)  # this peer acks a cancel of a finished task
    assert mt.get_task(client, status).status is mt.TaskState.CANCELLED


def test_a_finished_task_stays_finished_when_cancelled(peer: Peer) -> None:
    client = peer.client()
    status = started(client, "slow", {"seconds": 0})
    assert mt.wait_task(client, status, timeout=WAIT).status is mt.TaskState.COMPLETED
    mt.cancel_task(client, status)
    assert text_of(mt.await_task(client, status, timeout=WAIT)) == "slow done after 0.0s"


def test_a_wait_that_runs_out_of_time_leaves_the_task_running(peer: Peer) -> None:
    client = peer.client()
    status = started(client, "long")
    with pytest.raises(mt.TaskTimeout) as timed_out:
        mt.wait_task(client, status, timeout=0.3)
    assert timed_out.value.code == -32001
    assert timed_out.value.status is not None
    assert timed_out.value.status.status is mt.TaskState.WORKING
    assert mt.get_task(client, status).status is mt.TaskState.WORKING
    mt.cancel_task(client, status)


# -- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "send",
    [
        lambda client: mt.get_task(client, "no-such-task"),
        lambda client: mt.update_task(client, "no-such-task", {"k": {"action": "decline"}}),
        lambda client: mt.cancel_task(client, "no-such-task"),
        lambda client: mt.await_task(client, "no-such-task", timeout=WAIT),
    ],
    ids=["get", "update", "cancel", "await"],
)
def test_an_unknown_task_id_is_invalid_params(peer: Peer, send: Any) -> None:
    with pytest.raises(mt.McpError) as unknown:
        send(peer.client())
    assert unknown.value.code == -32602
    assert unknown.value.kind == "protocol"


def test_listening_is_not_served_by_this_peer(peer: Peer) -> None:
    # A client of its own: a listen wait starts the client's watch, whose thread lasts as long as
    # the client (issue 17), and the module's shared client outlives this test's thread check.
    client = peer.client(timeout=30.0)
    status = started(client, "slow", {"seconds": 0.1})
    # issue 9: a listen wait against a server without subscriptions/listen polls instead
    assert mt.wait_task(client, status, timeout=WAIT, listen=True).status is mt.TaskState.COMPLETED
    with pytest.raises(mt.McpError) as again:
        client.listen(
            {"taskIds": [status.task_id]}, meta={"io.modelcontextprotocol/clientCapabilities": mt.capabilities()}
        )
    assert again.value.code == -32601
    assert mt.await_task(client, status, timeout=WAIT)["isError"] is False
    client.close()
