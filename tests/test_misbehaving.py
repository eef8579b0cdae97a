"""A real server that misbehaves on purpose: every bad answer is a clear McpError, never a
KeyError, a hang or a leaked thread."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

import mcp_tasks as mt
from mcp_tasks._errors import PROTOCOL_VIOLATION
from mcp_tasks.server import HttpServer, McpWsgiApp
from tests.conftest import ROOT, eventually, stdio_env
from tests.fixtures.rogue import Rogue


@pytest.fixture(params=["direct", "stdio", "http"])
def rogue(request: pytest.FixtureRequest) -> Iterator[mt.Client]:
    if request.param == "direct":
        client = mt.Client.direct(Rogue(), timeout=10)
        yield client
        client.close()
    elif request.param == "stdio":
        client = mt.Client.stdio(sys.executable, ["-m", "tests.fixtures.rogue"], env=stdio_env(), cwd=ROOT, timeout=10)
        yield client
        client.close()
    else:
        http = HttpServer(McpWsgiApp(Rogue())).start()
        client = mt.Client.http(http.url, timeout=10)
        yield client
        client.close()
        http.close()


@pytest.mark.parametrize("tool", ["both", "neither", "result_not_object", "bad_error"])
def test_malformed_responses_are_protocol_errors(rogue: mt.Client, tool: str) -> None:
    with pytest.raises(mt.ProtocolError) as error:
        rogue.call_tool(tool)
    assert error.value.code == PROTOCOL_VIOLATION
    assert error.value.kind == "protocol"


def test_a_refused_version_that_the_server_lists_is_tried_once_more(rogue: mt.Client) -> None:
    assert rogue.call_tool("refuse_version_once")["content"][0]["text"] == "ok"
    with pytest.raises(mt.McpError) as refused:
        rogue.call_tool("refuse_version")
    assert refused.value.code == -32022
    assert refused.value.data == {"supported": ["1999-01-01"], "requested": "2026-07-28"}


def test_an_unknown_result_type_is_refused(rogue: mt.Client) -> None:
    with pytest.raises(mt.McpError, match="unknown resultType 'mystery'"):
        rogue.call_tool("weird_type")


def test_a_task_result_is_accepted_only_when_the_extension_was_declared(rogue: mt.Client) -> None:
    with pytest.raises(mt.McpError, match="unknown resultType 'task'"):
        rogue.call_tool("task")
    status = mt.call_tool(rogue, "task")
    assert isinstance(status, mt.Status)
    assert status.task_id == "rogue-task"


def test_a_creation_result_that_does_not_decode_is_a_protocol_error(rogue: mt.Client) -> None:
    """Scenario 48 (call_tool): an invalid creation result is a ProtocolError (the seed said -32000
    kind transport; issue 15: the server broke the protocol, a retry would not help), cause the map.
    """
    with pytest.raises(mt.ProtocolError) as error:
        mt.call_tool(rogue, "invalid_task")
    assert error.value.code == -32090
    assert error.value.kind == "protocol"
    assert error.value.cause["taskId"] == 5
    assert isinstance(error.value.__cause__, mt.InvalidStatus)
    assert error.value.__cause__.field == "taskId"


@pytest.mark.parametrize("task_id", ["missing-payload", "input-shaped", "other-task"])
def test_task_reads_that_do_not_decode_are_protocol_errors(rogue: mt.Client, task_id: str) -> None:
    """Scenario 48: get given an input_required-shaped or undecodable result: a ProtocolError."""
    with pytest.raises(mt.ProtocolError) as error:
        mt.get_task(rogue, task_id)
    assert error.value.code == -32090
    assert error.value.kind == "protocol"
    assert isinstance(error.value.cause, dict)


def test_a_status_this_client_does_not_know_is_unknown_not_an_error(rogue: mt.Client) -> None:
    status = mt.get_task(rogue, "strange-status")
    assert status.status is mt.TaskState.UNKNOWN
    assert status.wire_status == "paused"
    assert not status.terminal


def test_a_server_that_never_acknowledges_a_listen_times_out(rogue: mt.Client) -> None:
    with pytest.raises(mt.RequestTimeout):
        rogue.listen({"taskIds": ["no-ack"]}, timeout=0.3)


def test_a_refused_listen_raises_its_error(rogue: mt.Client) -> None:
    with pytest.raises(mt.McpError) as error:
        rogue.listen({"taskIds": ["refuse"]})
    assert error.value.code == -32602


def test_a_listen_that_ends_before_its_acknowledgement_is_an_error(rogue: mt.Client) -> None:
    with pytest.raises(mt.McpError, match="before acknowledging"):
        rogue.listen({"taskIds": ["end-before-ack"]})


class Seen(Exception):
    """Raised by an `on_status` callback to end a wait on the first status it gets."""


def first_status(status: mt.Status) -> None:
    raise Seen(status)


def test_a_listen_wait_polls_when_the_stream_ends_before_its_acknowledgement(rogue: mt.Client) -> None:
    # The stream never carries a status, so the first one the wait reports was polled. (No total to
    # race against: the callback ends the wait, however slowly the machine runs.)
    with pytest.raises(Seen) as seen:
        mt.wait_task(rogue, "end-before-ack", listen=True, timeout=60, poll_interval=0.05, on_status=first_status)
    (status,) = seen.value.args
    assert status.wire_status == "working"


def test_a_server_cancelling_the_stream_ends_it_normally(rogue: mt.Client) -> None:
    with rogue.listen({"taskIds": ["server-cancels"]}) as sub:
        events = list(sub)
    assert [e.params["n"] for e in events if isinstance(e, mt.Notification)] == [0, 1, 2]
    assert events[-1] == mt.Closed(None)


def test_a_stream_that_ends_with_an_error_response_closes_with_that_error(rogue: mt.Client) -> None:
    with rogue.listen({"taskIds": ["error-end"]}) as sub:
        events = list(sub)
    closed = events[-1]
    assert isinstance(closed, mt.Closed)
    assert closed.error is not None
    assert closed.error.code == -32603


def stdio_rogue(*args: str, timeout: float = 10) -> mt.Client:
    return mt.Client.stdio(
        sys.executable, ["-m", "tests.fixtures.rogue", *args], env=stdio_env(), cwd=ROOT, timeout=timeout
    )


def test_stdio_skips_lines_that_are_not_json_objects(caplog: pytest.LogCaptureFixture) -> None:
    with stdio_rogue() as client:
        assert client.call_tool("garbage_then_ok")["content"][0]["text"] == "ok"
    assert any("not JSON" in r.message for r in caplog.records)


def test_stdio_a_server_that_dies_fails_the_request_and_every_later_one() -> None:
    with stdio_rogue() as client:
        with pytest.raises(mt.TransportError, match="exit code 7"):
            client.call_tool("die")
        with pytest.raises(mt.TransportError, match="exit code 7"):
            client.call_tool("anything")


def test_stdio_a_request_from_the_server_is_refused_with_method_not_found() -> None:
    with stdio_rogue() as client:
        client.call_tool("ask_client")
        # The refusal is sent from the transport's delivery thread: it may follow the answer.
        refusals = eventually(lambda: client.call_tool("refusals")["refusals"])
    assert refusals[0]["code"] == -32601


def test_stdio_a_timed_out_request_is_cancelled_on_the_wire() -> None:
    with stdio_rogue() as client:
        assert client.era == "modern"  # the probe first (the server may take longer than 0.2 s to start)
        with pytest.raises(mt.RequestTimeout):
            client.call_tool("never", timeout=0.2)
        cancelled = client.call_tool("cancelled")["cancelled"]
    assert cancelled == [2]  # request 1 was the server/discover probe


def test_stdio_a_response_nobody_waits_for_is_dropped() -> None:
    with stdio_rogue() as client:
        assert client.call_tool("stray_response")["content"] == []


def test_stdio_a_listen_stream_whose_server_dies_closes_with_an_error() -> None:
    with stdio_rogue() as client, client.listen({"taskIds": ["die"]}) as sub:
        events = list(sub)
    closed = events[-1]
    assert isinstance(closed, mt.Closed)
    assert isinstance(closed.error, mt.TransportError)


def test_stdio_close_terminates_a_server_that_ignores_the_end_of_stdin() -> None:
    client = stdio_rogue("--ignore-eof")
    client.call_tool("ok")
    transport = client.transport
    client.close()
    assert transport._proc.poll() is not None  # type: ignore[attr-defined]
