"""The Tasks client over direct, stdio and HTTP: the seed library's scenarios 1-47
(snodo-behaviour.md §5A and §5B), each named in its docstring."""

from __future__ import annotations

import itertools
import sys
from typing import Any

import pytest

import mcp_tasks as mt
from tests.conftest import STREAM_GONE, Background, Harness, accept_form, eventually, open_streams, release

FORM_REQUEST = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Confirm delete",
        "requestedSchema": {
            "type": "object",
            "properties": {"confirmed": {"type": "boolean"}},
            "required": ["confirmed"],
        },
    },
}


def gets(client: mt.Client) -> list[float]:
    """When the server received each tasks/get (its monotonic clock)."""
    times: list[float] = client.call_tool("stats", {"method": "tasks/get"})["structuredContent"]["times"]
    return times


def waiting(client: mt.Client, gate: str = "slow") -> int:
    count: int = client.call_tool("waiting", {"gate": gate})["structuredContent"]["waiting"]
    return count


def started(client: mt.Client, **arguments: Any) -> mt.Status:
    """A slow_compute task held at its gate."""
    status = mt.call_tool(client, "slow_compute", {"block": True, **arguments})
    assert isinstance(status, mt.Status)
    return status


# -- negotiation --------------------------------------------------------------------------------


def test_capabilities_adds_the_extension_and_keeps_the_rest() -> None:
    """Scenario 1: capabilities() declares Tasks and keeps other entries."""
    assert mt.capabilities() == {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    caps = {"elicitation": {"form": {}}, "extensions": {"example.com/other": {"a": 1}}}
    assert mt.capabilities(caps) == {
        "elicitation": {"form": {}},
        "extensions": {"example.com/other": {"a": 1}, "io.modelcontextprotocol/tasks": {}},
    }
    assert caps == {"elicitation": {"form": {}}, "extensions": {"example.com/other": {"a": 1}}}


def test_server_supports(harness: Harness) -> None:
    """Scenario 2: true against a Tasks server, false against a plain one."""
    assert mt.server_supports(harness.client()) is True
    assert mt.server_supports(harness.client(server={"tasks": False})) is False


def test_the_client_itself_is_not_changed_by_the_helpers(client: mt.Client) -> None:
    """Scenario 3: plain calls stay synchronous; the helpers' calls become tasks."""
    plain = client.call_tool("slow_compute", {"label": "sync"})
    assert plain["structuredContent"] == {"label": "sync", "computed": True}
    with pytest.raises(mt.McpError) as refused:
        client.call_tool("failing_job")
    assert refused.value.code == -32021
    assert refused.value.data == {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
    status = mt.call_tool(client, "slow_compute")
    assert isinstance(status, mt.Status)
    assert status.status is mt.TaskState.WORKING
    assert isinstance(mt.call_tool(client, "failing_job"), mt.Status)


def test_a_client_that_declares_tasks_itself(harness: Harness) -> None:
    """Scenario 4: built with capabilities(), a plain call returns the raw task; await by id."""
    client = harness.client(client_capabilities=mt.capabilities())
    raw = client.call_tool("slow_compute", {"label": "declared"})
    assert raw["resultType"] == "task"
    result = mt.await_task(client, raw["taskId"], timeout=5)
    assert result["structuredContent"] == {"label": "declared", "computed": True}


# -- calling a tool ----------------------------------------------------------------------------


def test_a_synchronous_tool_is_returned_as_it_is(client: mt.Client) -> None:
    """Scenario 5: greet runs synchronously through call_tool and call_and_await."""
    expected = [{"type": "text", "text": "Hello, Ada!"}]
    called = mt.call_tool(client, "greet", {"name": "Ada"})
    assert isinstance(called, dict)
    assert called["content"] == expected
    assert mt.call_and_await(client, "greet", {"name": "Ada"})["content"] == expected


def test_the_creation_result_decodes(client: mt.Client) -> None:
    """Scenario 6: the fields of a creation result."""
    status = mt.call_tool(client, "slow_compute", {"block": True})
    assert isinstance(status, mt.Status)
    assert status.status is mt.TaskState.WORKING
    assert status.status_message == "Task accepted"
    assert (status.ttl_ms, status.poll_interval_ms) == (60000, 5)
    assert (status.input_requests, status.result, status.error) == ({}, None, None)
    assert status.raw["resultType"] == "task"
    assert isinstance(status.created_at, str)
    assert isinstance(status.last_updated_at, str)
    release(client)


def test_call_and_await_returns_the_result(client: mt.Client) -> None:
    """Scenario 7."""
    result = mt.call_and_await(client, "slow_compute", {"label": "done"})
    assert result["structuredContent"] == {"label": "done", "computed": True}


def test_a_tool_error_is_a_completed_task_with_is_error(client: mt.Client) -> None:
    """Scenario 8: a tool-domain error is returned, not raised."""
    result = mt.call_and_await(client, "failing_job")
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": "Actionable task failure"}]


def test_a_failed_task_raises_task_failed(client: mt.Client) -> None:
    """Scenario 9: TaskFailed carries the task's error and status."""
    with pytest.raises(mt.TaskFailed) as failed:
        mt.call_and_await(client, "protocol_error_job")
    error = failed.value
    assert isinstance(error, mt.McpError)
    assert (error.code, error.kind) == (-32603, "execution")
    assert error.cause == ("task_failed", error.status)
    assert error.status.status is mt.TaskState.FAILED
    assert error.status.error is not None and error.status.error["code"] == -32603
    assert "hunter2" not in str(error)


# -- task methods ------------------------------------------------------------------------------


def test_get_task(client: mt.Client) -> None:
    """Scenario 10: get by status; an unknown id is -32602."""
    status = started(client)
    again = mt.get_task(client, status)
    assert again.status is mt.TaskState.WORKING
    assert again.task_id == status.task_id
    assert again.raw["resultType"] == "complete"
    with pytest.raises(mt.McpError) as unknown:
        mt.get_task(client, "no-such-task")
    assert unknown.value.code == -32602
    release(client)


def test_cancel_task(client: mt.Client) -> None:
    """Scenario 11: cancel, wait -> TaskCancelled; cancel again is fine; unknown is -32602."""
    status = started(client)
    assert mt.cancel_task(client, status) is None
    with pytest.raises(mt.TaskCancelled) as cancelled:
        mt.await_task(client, status, timeout=5)
    assert cancelled.value.status.status is mt.TaskState.CANCELLED
    mt.cancel_task(client, status.task_id)
    with pytest.raises(mt.McpError) as unknown:
        mt.cancel_task(client, "no-such-task")
    assert unknown.value.code == -32602


def test_input_by_hand_with_update_task(client: mt.Client) -> None:
    """Scenario 12: no handlers -> InputRequired; update by hand; wait again."""
    with pytest.raises(mt.InputRequired) as needed:
        mt.call_and_await(client, "confirm_delete", timeout=5)
    status = needed.value.status
    assert status.input_requests == {"confirmation": FORM_REQUEST}
    response = {"action": "accept", "content": {"confirmed": True}}
    assert mt.update_task(client, status, {"confirmation": response}) is None
    result = mt.await_task(client, status, timeout=5)
    assert result["structuredContent"] == {"confirmation": response}


# -- waiting -----------------------------------------------------------------------------------


def test_a_form_handler_answers_the_task(harness: Harness) -> None:
    """Scenario 13."""
    messages = []

    def form(params: dict[str, Any]) -> dict[str, Any]:
        messages.append(params["message"])
        return accept_form(params)

    client = harness.client(input_handlers=mt.InputHandlers(form=form))
    result = mt.call_and_await(client, "confirm_delete", timeout=5)
    assert result["structuredContent"]["confirmation"]["action"] == "accept"
    assert messages == ["Confirm delete"]


def test_input_return_stops_at_the_request(harness: Harness) -> None:
    """Scenario 14: a handler is installed but input="return"."""
    client = harness.client(input_handlers=mt.InputHandlers(form=accept_form))
    with pytest.raises(mt.InputRequired) as needed:
        mt.call_and_await(client, "confirm_delete", input="return", timeout=5)
    assert set(needed.value.status.input_requests) == {"confirmation"}
    status = mt.wait_task(client, needed.value.status, input="return", timeout=5)
    assert status.status is mt.TaskState.INPUT_REQUIRED


def test_an_input_function_answers_every_key(client: mt.Client) -> None:
    """Scenario 15."""
    calls = []

    def answer(status: mt.Status) -> dict[str, Any]:
        calls.append(sorted(status.input_requests))
        return {key: {"action": "accept"} for key in status.input_requests}

    result = mt.call_and_await(client, "multi_input", input=answer, timeout=5)
    assert result["structuredContent"] == {"first": {"action": "accept"}, "second": {"action": "accept"}}
    assert calls == [["first", "second"]]


def test_a_handler_that_cannot_answer(harness: Harness) -> None:
    """Scenario 16: InputError -> -32603 with cause (input_handler, key, reason, status)."""

    def decline(params: dict[str, Any]) -> dict[str, Any]:
        raise mt.InputError("declined")

    client = harness.client(input_handlers=mt.InputHandlers(form=decline))
    with pytest.raises(mt.McpError) as error:
        mt.call_and_await(client, "confirm_delete", timeout=5)
    assert (error.value.code, error.value.kind) == (-32603, "execution")
    tag, key, reason, status = error.value.cause
    assert (tag, key, reason) == ("input_handler", "confirmation", "declined")
    assert status.status is mt.TaskState.INPUT_REQUIRED


def test_no_handler_for_the_kind_returns_the_request(harness: Harness) -> None:
    """Scenario 17: only a url handler, the task needs a form."""
    called = []
    client = harness.client(input_handlers=mt.InputHandlers(url=lambda p: called.append(p) or {"action": "accept"}))
    with pytest.raises(mt.InputRequired):
        mt.call_and_await(client, "confirm_delete", timeout=5)
    assert called == []


def test_a_wait_that_runs_out_of_time(client: mt.Client) -> None:
    """Scenario 18: TaskTimeout with the last status; the task keeps running."""
    status = started(client, label="slow")
    with pytest.raises(mt.TaskTimeout) as timed_out:
        mt.await_task(client, status, timeout=0.1)
    error = timed_out.value
    assert isinstance(error, TimeoutError)
    assert (error.code, error.kind) == (-32001, "extension")  # the wait's own deadline, not a TransportError
    assert error.data == {"taskId": status.task_id, "timeoutMs": 100}
    assert error.cause == ("timeout", error.status)
    assert error.status is not None and error.status.status is mt.TaskState.WORKING
    release(client)
    assert mt.await_task(client, status.task_id, timeout=5)["structuredContent"]["label"] == "slow"


def test_the_servers_poll_interval_is_honoured(harness: Harness) -> None:
    """Scenario 19: with pollIntervalMs 300 the first two polls are at least 300 ms apart."""
    client = harness.client(server={"poll_interval": 0.3})
    status = started(client)
    waiter = Background(lambda: mt.await_task(client, status, timeout=10))
    times = eventually(lambda: (t := gets(client)) and len(t) >= 2 and t, message="two polls")
    release(client)
    assert waiter.result()["structuredContent"]["computed"] is True
    assert times[1] - times[0] >= 0.3


def test_listen_against_a_server_without_subscriptions(harness: Harness) -> None:
    """Scenario 20, as issue 9 has it: -32601 for subscriptions/listen makes the wait poll."""
    client = harness.client(server={"listen": False})
    status = started(client)
    waiter = Background(lambda: mt.await_task(client, status, listen=True, timeout=10, poll_interval=0.05))
    eventually(lambda: gets(client), message="a poll")
    release(client)
    assert waiter.result()["structuredContent"]["computed"] is True


@pytest.mark.parametrize(
    ("options", "kind"),
    [
        ({"timeout": 0}, ValueError),
        ({"timeout": -5}, ValueError),
        ({"input": "ask"}, ValueError),
        ({"input": 42}, TypeError),
        ({"listen": "yes"}, TypeError),
        ({"poll_interval": -1}, ValueError),
        ({"min_poll_interval": 0}, ValueError),
        ({"request_timeout": 0}, ValueError),
        ({"request_timeout": "1"}, TypeError),
        ({"on_status": "print"}, TypeError),
        ({"no_such_option": 1}, TypeError),
    ],
)
def test_bad_options_raise_before_anything_is_sent(client: mt.Client, options: dict[str, Any], kind: type) -> None:
    """Scenarios 21 and 42: bad options raise; nothing reaches the server."""
    with pytest.raises(kind):
        mt.wait_task(client, "some-task", **options)
    with pytest.raises(kind):
        mt.call_and_await(client, "slow_compute", **options)
    calls = client.call_tool("stats", {"method": "tools/call"})["structuredContent"]["times"]
    assert len(calls) == 1  # only this stats call itself
    assert gets(client) == []


@pytest.mark.parametrize(("ref", "kind"), [("", ValueError), (None, TypeError), (7, TypeError), ({}, TypeError)])
def test_bad_task_references(client: mt.Client, ref: Any, kind: type) -> None:
    """Scenarios 21 and 42: an empty id, or something that is neither an id nor a Status."""
    for call in (mt.get_task, mt.cancel_task, mt.wait_task, mt.await_task):
        with pytest.raises(kind):
            call(client, ref)
    with pytest.raises(kind):
        mt.update_task(client, ref, {})
    with pytest.raises(TypeError):
        mt.update_task(client, "some-task", ["not", "a", "dict"])  # type: ignore[arg-type]


# -- waiting on a listen stream ----------------------------------------------------------------


def test_a_notification_completes_the_wait(harness: Harness) -> None:
    """Scenario 22: only a notification can finish in time (the poll interval is 600 s)."""
    client = harness.client(server={"poll_interval": 600})
    status = started(client, label="via notification")
    waiter = Background(lambda: mt.await_task(client, status, listen=True, timeout=10))
    eventually(lambda: open_streams(client) == 1, message="stream open")
    eventually(lambda: len(gets(client)) == 1, message="the read after the acknowledgement")
    release(client)
    assert waiter.result()["structuredContent"] == {"label": "via notification", "computed": True}
    assert len(gets(client)) == 1  # no poll: the notification did it
    eventually(lambda: open_streams(client) == 0, timeout=STREAM_GONE, message="stream closed")


@pytest.mark.parametrize("error", [False, True])
def test_when_the_stream_ends_the_wait_polls(harness: Harness, error: bool) -> None:
    """Scenarios 23 and 45: the server ends the stream, cleanly or with an error; polling
    finishes the wait."""
    client = harness.client()
    status = started(client, label="ended")
    waiter = Background(lambda: mt.await_task(client, status, listen=True, timeout=10))
    eventually(lambda: open_streams(client) == 1, message="stream open")
    before = len(gets(client))
    client.call_tool("end_streams", {"error": error})
    eventually(lambda: len(gets(client)) > before, message="a poll after the stream ended")
    release(client)
    assert waiter.result()["structuredContent"]["label"] == "ended"


def test_listening_for_an_unknown_task(client: mt.Client) -> None:
    """Scenario 24: -32602 made by the client from the accepted filter (it comes with the
    acknowledgement; the timeout, which also covers a stdio server's start, only bounds a hang).
    """
    with pytest.raises(mt.McpError) as error:
        mt.await_task(client, "no-such-task", listen=True, timeout=60)
    assert error.value.code == -32602
    assert error.value.message.startswith("Unknown or inaccessible taskId (no such task on this server:")


def test_listen_then_cancel(harness: Harness) -> None:
    """Scenarios 25-26: the whole flow on one client, listening, then a cancel."""
    client = harness.client(input_handlers=mt.InputHandlers(form=accept_form))
    assert mt.server_supports(client)
    assert (
        mt.call_and_await(client, "slow_compute", {"label": "streamed"}, listen=True, timeout=10)["structuredContent"][
            "label"
        ]
        == "streamed"
    )
    assert (
        mt.call_and_await(client, "confirm_delete", listen=True, timeout=10)["structuredContent"]["confirmation"][
            "action"
        ]
        == "accept"
    )
    with pytest.raises(mt.TaskFailed):
        mt.call_and_await(client, "protocol_error_job", listen=True, timeout=10)
    status = started(client)
    mt.cancel_task(client, status)
    with pytest.raises(mt.TaskCancelled):
        mt.await_task(client, status, listen=True, timeout=10)


def test_task_methods_work_over_every_transport(client: mt.Client) -> None:
    """Scenario 27, done better: get, update and cancel work over HTTP too (Mcp-Name is sent)."""
    status = started(client)
    assert mt.get_task(client, status).status is mt.TaskState.WORKING
    mt.update_task(client, status, {"unknown-key": {"action": "accept"}})
    mt.cancel_task(client, status)
    assert mt.get_task(client, status).status is mt.TaskState.CANCELLED


# -- derived behaviours ------------------------------------------------------------------------


def test_a_terminal_detailed_status_returns_without_a_request(client: mt.Client) -> None:
    """Scenario 28."""
    done = mt.Status.from_map(
        {"taskId": "never-asked", "status": "completed", "result": {"content": [], "isError": False}}
    )
    seen: list[mt.Status] = []
    assert mt.wait_task(client, done, on_status=seen.append) is done
    assert mt.await_task(client, done) == {"content": [], "isError": False}
    assert gets(client) == []
    assert seen == [done]


def test_a_terminal_status_without_its_payload_is_read_again(client: mt.Client) -> None:
    """Scenario 29: a creation result that says completed carries no result."""
    created = mt.call_tool(client, "slow_compute", {"label": "reread"})
    assert isinstance(created, mt.Status)
    mt.wait_task(client, created, timeout=5)
    bare = mt.Status.from_map({**created.raw, "status": "completed"})
    assert bare.terminal and not bare.detailed
    before = len(gets(client))
    assert mt.await_task(client, bare, timeout=5)["structuredContent"]["label"] == "reread"
    assert len(gets(client)) == before + 1


def test_outcome_refuses_what_is_not_final() -> None:
    """Scenario 30."""
    base = {"taskId": "t", "resultType": "task"}
    for status in ("working", "completed", "failed"):
        with pytest.raises(ValueError):
            mt.outcome(mt.Status.from_map({**base, "status": status}))
    with pytest.raises(ValueError):
        mt.outcome(mt.Status.from_map({"taskId": "t", "status": "mystery"}))
    with pytest.raises(TypeError):
        mt.outcome({"status": "completed"})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "handler_kind", "bad"),
    [
        ("form", "form", {"action": "perhaps"}),
        ("form", "form", {1: "x", "action": "accept"}),
        ("url", "url", {"content": {}}),
        ("sampling", "sampling", {"role": "robot", "model": "m", "content": {"type": "text", "text": "x"}}),
        ("sampling", "sampling", {"role": "assistant", "model": "m", "content": []}),
        ("roots", "roots", {"roots": [{"uri": "/not/a/file/uri"}]}),
        ("roots", "roots", {"roots": "none"}),
    ],
)
def test_handler_responses_are_checked(harness: Harness, kind: str, handler_kind: str, bad: Any) -> None:
    """Scenario 31: a response that fails its check -> (invalid_response, response)."""
    client = harness.client(input_handlers=mt.InputHandlers(**{handler_kind: lambda p: bad}))
    with pytest.raises(mt.McpError) as error:
        mt.call_and_await(client, "ask_kinds", {"kinds": [kind]}, timeout=5)
    assert error.value.code == -32603
    assert error.value.cause[:3] == ("input_handler", kind, ("invalid_response", bad))
    assert set(error.value.cause[3].input_requests) == {kind}


def test_a_handler_that_returns_something_else(harness: Harness) -> None:
    """Scenario 32: (invalid_return, value)."""
    client = harness.client(input_handlers=mt.InputHandlers(form=lambda p: "yes"))
    with pytest.raises(mt.McpError) as error:
        mt.call_and_await(client, "confirm_delete", timeout=5)
    assert error.value.cause[:3] == ("input_handler", "confirmation", ("invalid_return", "yes"))


def test_the_input_function_errors_and_is_not_checked(client: mt.Client) -> None:
    """Scenario 33: InputError -> key None; another return -> invalid_return; no checks."""

    def refuse(status: mt.Status) -> dict[str, Any]:
        raise mt.InputError("nope")

    with pytest.raises(mt.McpError) as refused:
        mt.call_and_await(client, "confirm_delete", input=refuse, timeout=5)
    assert refused.value.cause[:3] == ("input_handler", None, "nope")
    with pytest.raises(mt.McpError) as odd:
        mt.call_and_await(client, "confirm_delete", input=lambda s: 42, timeout=5)  # type: ignore[arg-type, return-value]
    assert odd.value.cause[:3] == ("input_handler", None, ("invalid_return", 42))
    unchecked = {"confirmation": {"anything": "goes"}}
    result = mt.call_and_await(client, "confirm_delete", input=lambda s: unchecked, timeout=5)
    assert result["structuredContent"] == unchecked


def test_exceptions_from_handlers_and_functions_reach_the_caller(harness: Harness) -> None:
    """Scenario 34."""

    class Oops(Exception):
        pass

    def explode(_: Any) -> dict[str, Any]:
        raise Oops()

    client = harness.client(input_handlers=mt.InputHandlers(form=explode))
    with pytest.raises(Oops):
        mt.call_and_await(client, "confirm_delete", timeout=5)
    with pytest.raises(Oops):
        mt.call_and_await(client, "confirm_delete", input=explode, timeout=5)


def test_a_key_is_answered_once_per_wait(harness: Harness) -> None:
    """Scenario 35: the server applies updates late and keeps listing the key for a while."""
    client = harness.client(server={"update_delay": 0.3})
    asked: list[list[str]] = []

    class Counting:
        def answer(self, client: Any, status: mt.Status, pending: dict[str, Any]) -> dict[str, Any]:
            asked.append(sorted(pending))
            return {key: {"action": "accept"} for key in pending}

    result = mt.call_and_await(client, "multi_input", input=Counting(), timeout=10)
    assert set(result["structuredContent"]) == {"first", "second"}
    assert asked == [["first", "second"]]
    updates = client.call_tool("stats", {"method": "tasks/update"})["structuredContent"]["times"]
    assert len(updates) == 1
    assert len(gets(client)) > 2  # it did see the lagging status and kept waiting


def test_handlers_are_all_or_nothing_and_run_in_key_order(harness: Harness) -> None:
    """Scenario 36."""
    order: list[str] = []
    client = harness.client(
        input_handlers=mt.InputHandlers(form=lambda p: order.append("form") or {"action": "accept"}),
        client_capabilities={"sampling": {}},
    )
    with pytest.raises(mt.InputRequired) as needed:
        mt.call_and_await(client, "ask_kinds", {"kinds": ["form", "sampling"]}, timeout=5)
    assert order == []
    assert set(needed.value.status.input_requests) == {"form", "sampling"}
    sampling = {"role": "assistant", "model": "m", "content": {"type": "text", "text": "4"}}
    client = harness.client(
        input_handlers=mt.InputHandlers(
            form=lambda p: order.append("form") or {"action": "accept"},
            sampling=lambda p: order.append("sampling") or sampling,
            roots=lambda p: order.append("roots") or {"roots": []},
        )
    )
    mt.call_and_await(client, "ask_kinds", {"kinds": ["sampling", "roots", "form"]}, timeout=5)
    assert order == ["form", "roots", "sampling"]


def test_each_kind_goes_to_its_handler(harness: Harness) -> None:
    """Scenario 37: sampling, roots (params default {}), url; an unknown mode is unhandled."""
    seen: dict[str, Any] = {}

    def record(kind: str, response: dict[str, Any]) -> Any:
        def handler(params: dict[str, Any]) -> dict[str, Any]:
            seen[kind] = params
            return response

        return handler

    client = harness.client(
        input_handlers=mt.InputHandlers(
            form=record("form", {"action": "accept"}),
            url=record("url", {"action": "accept"}),
            sampling=record("sampling", {"role": "assistant", "model": "m", "content": {"type": "text", "text": "4"}}),
            roots=record("roots", {"roots": []}),
        )
    )
    result = mt.call_and_await(client, "ask_kinds", {"kinds": ["url", "sampling", "roots"]}, timeout=5)
    assert set(result["structuredContent"]) == {"url", "sampling", "roots"}
    assert seen["roots"] == {}
    assert seen["url"]["url"] == "https://example.com/login"
    assert "form" not in seen
    with pytest.raises(mt.InputRequired):
        mt.call_and_await(client, "ask_kinds", {"kinds": ["odd_mode"]}, timeout=5)
    with pytest.raises(mt.InputRequired):
        mt.call_and_await(client, "ask_kinds", {"kinds": ["unknown_method"]}, timeout=5)


def test_a_timeout_before_any_status(harness: Harness) -> None:
    """Scenarios 38-40: every tasks/get stalls; the wait ends at its deadline with status None,
    not after the client's 30 s request timeout (the direct transport abandons the request)."""
    client = harness.client(server={"latency": {"tasks/get": 30}})
    status = started(client)
    with pytest.raises(mt.TaskTimeout) as timed_out:
        mt.await_task(client, status.task_id, timeout=0.3)
    assert timed_out.value.status is None
    assert timed_out.value.cause == ("timeout", None)
    release(client)


def test_a_shorter_request_timeout_is_returned_as_it_is(harness: Harness) -> None:
    """Scenario 41: the per-request -32001 ends the wait; it is not retried."""
    client = harness.client(server={"latency": {"tasks/get": 30}})
    status = started(client)
    with pytest.raises(mt.RequestTimeout) as timed_out:
        mt.await_task(client, status.task_id, timeout=20, request_timeout=0.2)
    assert not isinstance(timed_out.value, mt.TaskTimeout)
    assert timed_out.value.message == "tasks/get: No answer within 0.2 s"
    assert timed_out.value.data == {"timeoutMs": 200}
    release(client)


def test_a_wait_held_by_on_status_loses_nothing(harness: Harness) -> None:
    """Scenario 43, since issue 17: the stream is drained by the client's watch, which keeps the
    latest status of each task, so a wait held by on_status while 150 notifications come neither
    overflows a queue nor needs a read to catch up: it sees the last step, then the result.
    """
    client = harness.client(server={"poll_interval": 600})
    status = mt.call_tool(client, "chatter", {"count": 150}, follow=False)  # the wait's own stream only
    assert isinstance(status, mt.Status)
    seen: list[str | None] = []

    def hold(current: mt.Status) -> None:
        seen.append(current.status_message)
        if len(seen) == 1:  # the status the wait starts from: let all the steps go by, unseen
            release(client, "chatter-start")
            eventually(lambda: mt.get_task(client, status).status_message == "step 149", message="step 149")
            release(client, "chatter")

    result = mt.await_task(client, status, listen=True, timeout=20, on_status=hold)
    assert result["structuredContent"] == {"steps": 150}
    assert len(seen) <= 4 and "step 0" not in seen


def test_other_tasks_and_methods_on_the_stream_are_ignored(harness: Harness) -> None:
    """Scenario 44."""
    client = harness.client(server={"poll_interval": 600})
    status = started(client, label="mine")
    waiter = Background(lambda: mt.await_task(client, status, listen=True, timeout=10))
    eventually(lambda: open_streams(client) == 1, message="stream open")
    client.call_tool("spam_listeners")
    assert waiter.running
    release(client)
    assert waiter.result()["structuredContent"]["label"] == "mine"


def test_the_stream_is_closed_on_every_exit(harness: Harness) -> None:
    """Scenario 46: success, error (from on_status), timeout; the thread check runs after."""
    client = harness.client()

    mt.call_and_await(client, "slow_compute", listen=True, timeout=10)
    eventually(lambda: open_streams(client) == 0, timeout=STREAM_GONE, message="closed after success")

    def boom(status: mt.Status) -> None:
        raise KeyError("from on_status")

    with pytest.raises(KeyError):
        mt.call_and_await(client, "slow_compute", {"block": True}, listen=True, timeout=10, on_status=boom)
    eventually(lambda: open_streams(client) == 0, timeout=STREAM_GONE, message="closed after an error")
    with pytest.raises(mt.TaskTimeout):
        mt.call_and_await(client, "slow_compute", {"block": True}, listen=True, timeout=0.3)
    eventually(lambda: open_streams(client) == 0, timeout=STREAM_GONE, message="closed after a timeout")
    release(client)


def test_the_poll_interval_rules(harness: Harness) -> None:
    """Scenario 47: max(pollIntervalMs or poll_interval, min_poll_interval); the last sleep is
    cut to the deadline (a 600 s interval does not hold a 0.3 s wait)."""
    client = harness.client(server={"poll_interval": None})
    status = started(client)
    waiter = Background(lambda: mt.wait_task(client, status, poll_interval=0.2, timeout=10))
    times = eventually(lambda: (t := gets(client)) and len(t) >= 2 and t, message="two polls")
    release(client)
    waiter.result()
    assert times[1] - times[0] >= 0.2
    fast = harness.client()  # the server suggests 5 ms
    status = started(fast, gate="fast")
    waiter = Background(lambda: mt.wait_task(fast, status, min_poll_interval=0.2, timeout=10))
    times = eventually(lambda: (t := gets(fast)) and len(t) >= 2 and t, message="two polls")
    release(fast, "fast")
    waiter.result()
    assert times[1] - times[0] >= 0.2
    slow = harness.client(server={"poll_interval": 600})
    status = started(slow, gate="slow-server")
    with pytest.raises(mt.TaskTimeout):
        mt.wait_task(slow, status, timeout=0.3)
    release(slow, "slow-server")


# -- beyond the seed ---------------------------------------------------------------------------


def test_on_status_sees_each_change_once(harness: Harness) -> None:
    client = harness.client(input_handlers=mt.InputHandlers(form=accept_form))
    seen: list[tuple[str, str | None, list[str]]] = []

    def record(status: mt.Status) -> None:
        seen.append((status.wire_status, status.status_message, sorted(status.input_requests)))

    mt.call_and_await(client, "confirm_delete", timeout=5, on_status=record)
    assert ("input_required", "Waiting for input", ["confirmation"]) in seen
    assert seen[-1][0] == "completed"
    assert all(a != b for a, b in itertools.pairwise(seen))


def test_an_unknown_status_is_waited_on_like_working(client: mt.Client) -> None:
    status = mt.Status.from_map({"taskId": "x", "status": "paused"})
    assert status.status is mt.TaskState.UNKNOWN
    assert not status.terminal


def test_call_and_await_checks_call_opts(client: mt.Client) -> None:
    with pytest.raises(TypeError):
        mt.call_and_await(client, "greet", {"name": "x"}, call_opts=["timeout"])  # type: ignore[arg-type]
    result = mt.call_and_await(client, "greet", {"name": "x"}, call_opts={"timeout": 5})
    assert result["content"][0]["text"] == "Hello, x!"


def test_logs_and_reprs_never_hold_a_full_task_id(harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG", logger="mcp_tasks")
    client = harness.client(input_handlers=mt.InputHandlers(form=accept_form))
    status = mt.call_tool(client, "confirm_delete")
    assert isinstance(status, mt.Status)
    mt.await_task(client, status, listen=True, timeout=5)
    with pytest.raises(mt.TaskCancelled) as cancelled:
        blocked = started(client)
        mt.cancel_task(client, blocked)
        mt.await_task(client, blocked, timeout=5)
    for text in (repr(status), str(cancelled.value), repr(cancelled.value.status), caplog.text):
        assert status.task_id not in text
        assert blocked.task_id not in text


def test_an_interrupted_wait_says_the_task_goes_on(client: mt.Client) -> None:
    status = started(client)

    def interrupt(seen: mt.Status) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as interrupted:
        mt.wait_task(client, status, on_status=interrupt)
    notes = getattr(interrupted.value, "__notes__", None)
    if sys.version_info >= (3, 11):
        assert notes and "still running on the server" in notes[0]
        assert status.task_id not in notes[0]
    assert mt.get_task(client, status).status is mt.TaskState.WORKING
    release(client)
