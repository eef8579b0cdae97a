"""The reference server's side of the Tasks extension: the §5C scenarios of snodo-behaviour.md
that concern it (numbers in the docstrings), over every transport where it matters."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks.server import Exchange
from tests.conftest import Background, Harness, eventually, release
from tests.fixtures.servers import make_server

DECLARED = {"io.modelcontextprotocol/clientCapabilities": mt.capabilities()}
UNDECLARED: dict[str, Any] = {"io.modelcontextprotocol/clientCapabilities": {}}
UNKNOWN = {"code": -32602, "message": "Unknown or inaccessible taskId"}


def raw(client: mt.Client, method: str, params: dict[str, Any], meta: dict[str, Any] = DECLARED) -> dict[str, Any]:
    return client.request(method, params, meta=meta, answer_input=False)


def error_of(call: Any) -> dict[str, Any]:
    with pytest.raises(mt.McpError) as error:
        call()
    return error.value.to_wire()


def create(client: mt.Client, tool: str = "slow_compute", **arguments: Any) -> dict[str, Any]:
    result = raw(client, "tools/call", {"name": tool, "arguments": arguments})
    assert result["resultType"] == "task"
    return result


def creates(client: mt.Client) -> bool:
    """Whether a task can be created now (capacity allowing)."""
    try:
        create(client)
    except mt.McpError:
        return False
    return True


def test_the_creation_result_is_flat(harness: Harness) -> None:
    """Scenario 61."""
    client = harness.client()
    created = create(client, block=True)
    assert created["status"] == "working"
    assert (created["ttlMs"], created["pollIntervalMs"]) == (60000, 5)
    for forbidden in ("task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval"):
        assert forbidden not in created
    iso = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
    assert re.fullmatch(iso, created["createdAt"]) and re.fullmatch(iso, created["lastUpdatedAt"])
    task_id = created["taskId"]
    assert re.fullmatch(r"[A-Za-z0-9_-]{32}", task_id)  # unguessable: 192 random bits
    read = raw(client, "tasks/get", {"taskId": task_id})
    assert (read["resultType"], read["status"]) == ("complete", "working")
    release(client)
    done = eventually(lambda: (r := raw(client, "tasks/get", {"taskId": task_id}))["status"] == "completed" and r)
    assert done["result"]["isError"] is False
    assert done["result"]["structuredContent"] == {"label": "slow", "computed": True}
    assert "_meta" not in done["result"]
    assert "inputRequests" not in done and "error" not in done


def test_a_task_without_a_ttl(harness: Harness) -> None:
    client = harness.client(server={"task_ttl": None})
    assert create(client)["ttlMs"] is None


def test_tool_errors_and_crashes(harness: Harness) -> None:
    """Scenario 62: a tool error completes with isError; a crash fails with -32603 and no detail."""
    client = harness.client()
    failing = create(client, "failing_job")["taskId"]
    done = eventually(lambda: (r := raw(client, "tasks/get", {"taskId": failing}))["status"] != "working" and r)
    assert done["status"] == "completed"
    assert done["result"] == {"content": [{"type": "text", "text": "Actionable task failure"}], "isError": True}
    assert "error" not in done
    crashing = create(client, "protocol_error_job")["taskId"]
    done = eventually(lambda: (r := raw(client, "tasks/get", {"taskId": crashing}))["status"] != "working" and r)
    assert done["status"] == "failed"
    assert done["error"]["code"] == -32603
    assert "hunter2" not in str(done)
    assert "result" not in done


def test_a_synchronous_crash_leaks_nothing(client: mt.Client) -> None:
    error = error_of(lambda: raw(client, "tools/call", {"name": "protocol_error_job"}, meta=UNDECLARED))
    assert error == {"code": -32603, "message": "Internal error"}


def test_a_non_json_result_fails_the_task(harness: Harness) -> None:
    """Scenario 64: the same error on every read."""
    client = harness.client()
    task_id = create(client, "non_json")["taskId"]
    expected = {"code": -32603, "message": "Task worker returned a non-JSON result"}
    done = eventually(lambda: (r := raw(client, "tasks/get", {"taskId": task_id}))["status"] == "failed" and r)
    assert done["error"] == expected
    assert raw(client, "tasks/get", {"taskId": task_id})["error"] == expected


def test_negotiation(harness: Harness) -> None:
    """Scenario 65."""
    client = harness.client()
    discovered = client.discover()
    assert discovered["capabilities"]["extensions"] == {"io.modelcontextprotocol/tasks": {}}
    assert "tasks" not in discovered["capabilities"]
    assert (discovered["ttlMs"], discovered["cacheScope"]) == (0, "public")
    greet = raw(client, "tools/call", {"name": "greet", "arguments": {"name": "x"}})
    assert greet["resultType"] == "complete"
    optional = raw(client, "tools/call", {"name": "slow_compute", "arguments": {}}, meta=UNDECLARED)
    assert optional["resultType"] == "complete"
    required = error_of(lambda: raw(client, "tools/call", {"name": "failing_job"}, meta=UNDECLARED))
    assert required["code"] == -32021
    assert required["data"] == {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
    task_id = create(client)["taskId"]
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        refused = error_of(lambda m=method: raw(client, m, {"taskId": task_id, "inputResponses": {}}, UNDECLARED))
        assert refused["code"] == -32021


def test_removed_and_ignored_legacy_parts(harness: Harness) -> None:
    """Scenario 66: params.task is ignored; tasks/result and tasks/list are gone; unknown ids."""
    client = harness.client()
    hinted = raw(client, "tools/call", {"name": "slow_compute", "arguments": {}, "task": {"ttl": 1000}}, UNDECLARED)
    assert hinted["resultType"] == "complete"
    for method in ("tasks/result", "tasks/list"):
        assert error_of(lambda m=method: raw(client, m, {"taskId": "x"}))["code"] == -32601
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        assert error_of(lambda m=method: raw(client, m, {"taskId": "nope", "inputResponses": {}})) == UNKNOWN


def test_update_resumes_a_parked_task(harness: Harness) -> None:
    """Scenario 67."""
    client = harness.client()
    task_id = create(client, "confirm_delete")["taskId"]
    parked = eventually(
        lambda: (r := raw(client, "tasks/get", {"taskId": task_id}))["status"] == "input_required" and r
    )
    assert parked["inputRequests"]["confirmation"]["method"] == "elicitation/create"
    response = {"action": "accept", "content": {"confirmed": True}}
    ack = raw(client, "tasks/update", {"taskId": task_id, "inputResponses": {"confirmation": response}})
    assert ack == {"resultType": "complete"}
    done = eventually(lambda: (r := raw(client, "tasks/get", {"taskId": task_id}))["status"] == "completed" and r)
    assert done["result"]["structuredContent"] == {"confirmation": response}
    assert "inputRequests" not in done


def test_several_inputs_partial_answers_and_unknown_keys(harness: Harness) -> None:
    """Scenario 68."""
    client = harness.client()
    task_id = create(client, "multi_input")["taskId"]

    def read() -> dict[str, Any]:
        return raw(client, "tasks/get", {"taskId": task_id})

    parked = eventually(lambda: (r := read())["status"] == "input_required" and r)
    assert set(parked["inputRequests"]) == {"first", "second"}
    raw(client, "tasks/update", {"taskId": task_id, "inputResponses": {"first": {"action": "accept"}}})
    assert set(read()["inputRequests"]) == {"second"}
    raw(client, "tasks/update", {"taskId": task_id, "inputResponses": {"nobody-asked": {"action": "accept"}}})
    assert set(read()["inputRequests"]) == {"second"}
    raw(client, "tasks/update", {"taskId": task_id, "inputResponses": {"second": {"action": "decline"}}})
    done = eventually(lambda: (r := read())["status"] == "completed" and r)
    assert done["result"]["structuredContent"] == {"first": {"action": "accept"}, "second": {"action": "decline"}}


def test_a_task_that_reuses_an_input_key_fails(harness: Harness) -> None:
    """Scenario 68: keys are unique for the lifetime of a task."""
    client = harness.client()
    task_id = create(client, "reuse_key")["taskId"]
    eventually(lambda: raw(client, "tasks/get", {"taskId": task_id})["status"] == "input_required")
    raw(client, "tasks/update", {"taskId": task_id, "inputResponses": {"again": {"action": "accept"}}})
    done = eventually(lambda: (r := raw(client, "tasks/get", {"taskId": task_id}))["status"] == "failed" and r)
    assert done["error"]["code"] == -32603


@pytest.mark.parametrize("responses", [{"": {}}, {"approval": []}, {"approval": "yes"}, [], "x", None])
def test_malformed_input_responses(harness: Harness, responses: Any) -> None:
    """Scenario 60."""
    client = harness.client()
    task_id = create(client, "confirm_delete")["taskId"]
    error = error_of(lambda: raw(client, "tasks/update", {"taskId": task_id, "inputResponses": responses}))
    assert error["code"] == -32602


def test_scope_isolation() -> None:
    """Scenario 69: tenant B cannot get, update or cancel tenant A's task; A can."""
    server = make_server()
    with mt.Client.direct(server, principal="A") as tenant_a, mt.Client.direct(server, principal="B") as tenant_b:
        task_id = create(tenant_a, block=True)["taskId"]
        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            refused = error_of(lambda m=method: raw(tenant_b, m, {"taskId": task_id, "inputResponses": {}}))
            assert refused == UNKNOWN
        raw(tenant_a, "tasks/cancel", {"taskId": task_id})
        assert raw(tenant_a, "tasks/get", {"taskId": task_id})["status"] == "cancelled"
    server.close()


def test_cancel_is_acknowledged_even_when_the_task_is_done(harness: Harness) -> None:
    client = harness.client()
    task_id = create(client, "slow_compute")["taskId"]
    eventually(lambda: raw(client, "tasks/get", {"taskId": task_id})["status"] == "completed")
    assert raw(client, "tasks/cancel", {"taskId": task_id}) == {"resultType": "complete"}
    assert raw(client, "tasks/get", {"taskId": task_id})["status"] == "completed"


def test_tasks_beyond_max_jobs_queue_as_working(harness: Harness) -> None:
    """Scenario 70, since issue 17: a task beyond max_jobs is not refused: it waits, working, until
    a worker is free; one cancelled in the queue never runs."""
    client = harness.client(server={"max_jobs": 1})
    first = create(client, block=True, label="first")["taskId"]
    queued = create(client, label="queued")["taskId"]
    dropped = create(client, label="dropped")["taskId"]
    assert raw(client, "tasks/cancel", {"taskId": dropped}) == {"resultType": "complete"}
    assert raw(client, "tasks/get", {"taskId": queued})["status"] == "working"
    assert client.call_tool("waiting")["structuredContent"] == {"waiting": 1}
    release(client)
    eventually(lambda: raw(client, "tasks/get", {"taskId": queued})["status"] == "completed", message="ran")
    assert raw(client, "tasks/get", {"taskId": first})["status"] == "completed"
    assert raw(client, "tasks/get", {"taskId": queued})["result"]["structuredContent"]["label"] == "queued"
    assert raw(client, "tasks/get", {"taskId": dropped})["status"] == "cancelled"


def test_capacity_max_tasks_until_reaped(harness: Harness) -> None:
    """Scenario 73."""
    client = harness.client(server={"max_tasks": 1, "task_ttl": 0.3})
    create(client)
    refused = error_of(lambda: create(client))
    assert refused["data"] == {"retryable": True, "limit": "max_tasks", "max": 1}
    eventually(lambda: creates(client), message="capacity freed")


def test_a_task_past_its_maximum_runtime_fails(harness: Harness) -> None:
    """Scenario 71."""
    client = harness.client(server={"max_runtime": 0.2})
    task_id = create(client, block=True)["taskId"]
    done = eventually(lambda: (r := raw(client, "tasks/get", {"taskId": task_id}))["status"] == "failed" and r)
    assert done["statusMessage"] == "Task exceeded its maximum runtime"
    assert done["error"]["code"] == -32603


def test_an_expired_task_is_unknown(harness: Harness) -> None:
    """Scenario 74: unknown to get, update and cancel, and left out of listen filters."""
    client = harness.client(server={"task_ttl": 0.2})
    task_id = create(client, block=True)["taskId"]

    def gone() -> bool:
        try:
            raw(client, "tasks/get", {"taskId": task_id})
        except mt.McpError as error:
            return error.to_wire() == UNKNOWN
        return False

    eventually(gone, message="the task expired")
    for method in ("tasks/update", "tasks/cancel"):
        assert error_of(lambda m=method: raw(client, m, {"taskId": task_id, "inputResponses": {}})) == UNKNOWN
    with client.listen({"taskIds": [task_id]}, meta=DECLARED) as sub:
        assert sub.accepted == {"taskIds": []}


def test_task_id_length_limits(harness: Harness) -> None:
    """Scenario 76."""
    client = harness.client()
    long_id = "x" * 257
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        error = error_of(lambda m=method: raw(client, m, {"taskId": long_id, "inputResponses": {}}))
        assert error == {"code": -32602, "message": "taskId is longer than 256 bytes"}
    assert error_of(lambda: raw(client, "tasks/get", {"taskId": "x" * 256})) == UNKNOWN
    assert error_of(lambda: raw(client, "tasks/get", {"taskId": 5}))["code"] == -32602
    assert error_of(lambda: raw(client, "tasks/get", {}))["code"] == -32602


def test_synchronous_calls_when_tasks_are_off(harness: Harness) -> None:
    client = harness.client(server={"tasks": False})
    assert raw(client, "tools/call", {"name": "slow_compute", "arguments": {}})["resultType"] == "complete"
    assert error_of(lambda: raw(client, "tasks/get", {"taskId": "x"}))["code"] == -32601


def test_removing_a_tool_tells_the_listeners() -> None:
    server = make_server()
    with mt.Client.direct(server) as client, client.listen({"toolsListChanged": True}) as sub:
        server.remove_tool("greet")
        event = sub.next(5)
        assert isinstance(event, mt.Notification)
        assert event.method == "notifications/tools/list_changed"
        assert "greet" not in {tool["name"] for tool in client.list_tools()}
    server.close()


def listen_message(key: str, task_ids: list[str]) -> dict[str, Any]:
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": mt.capabilities(),
    }
    params = {"notifications": {"taskIds": task_ids}, "_meta": envelope}
    return {"jsonrpc": "2.0", "id": key, "method": "subscriptions/listen", "params": params}


def test_a_stuck_listener_stalls_no_other_task_and_no_other_listener() -> None:
    server = make_server()
    client = mt.Client.direct(server)
    stuck_in_send = threading.Event()
    unstick = threading.Event()
    heard: list[dict[str, Any]] = []
    cancelled_heard = threading.Event()

    def stuck(message: dict[str, Any]) -> None:
        stuck_in_send.set()
        unstick.wait(60)

    def hear(message: dict[str, Any]) -> None:
        heard.append(message)
        if message.get("params", {}).get("status") == "cancelled":
            cancelled_heard.set()

    task_id = create(client, block=True)["taskId"]
    other = create(client, block=True)["taskId"]
    blocked, listening = Exchange(stuck), Exchange(hear)
    streams = [
        Background(lambda: server.handle(listen_message("stuck", [task_id, other]), blocked)),
        Background(lambda: server.handle(listen_message("live", [task_id]), listening)),
    ]
    try:
        assert stuck_in_send.wait(30)  # the stuck stream's client reads nothing from here on
        eventually(lambda: heard)  # the live stream's acknowledgement
        # Changes to both tasks go through while one of their listeners is stuck.
        assert raw(client, "tasks/cancel", {"taskId": task_id}) == {"resultType": "complete"}
        assert raw(client, "tasks/get", {"taskId": task_id})["status"] == "cancelled"
        assert raw(client, "tasks/cancel", {"taskId": other}) == {"resultType": "complete"}
        assert raw(client, "tasks/get", {"taskId": other})["status"] == "cancelled"
        assert cancelled_heard.wait(30)  # and the other listener heard
    finally:
        unstick.set()
        blocked.cancel()
        listening.cancel()
        for stream in streams:
            stream.result()
        client.close()
        server.close()
