"""The error types: codes, kinds, builtins they also are, and what str() shows."""

from __future__ import annotations

import pytest

import mcp_tasks as mt


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (-32700, "json_rpc"),
        (-32600, "json_rpc"),
        (-32601, "protocol"),
        (-32602, "protocol"),
        (-32603, "execution"),
        (-32021, "protocol"),
        (-32000, "protocol"),
        (42, "protocol"),
    ],
)
def test_kind_follows_the_code(code: int, kind: str) -> None:
    assert mt.McpError.from_wire({"code": code, "message": "m"}).kind == kind


def test_from_wire_keeps_code_message_data() -> None:
    error = mt.McpError.from_wire({"code": -32602, "message": "bad", "data": {"x": 1}})
    assert (error.code, error.message, error.data, str(error)) == (-32602, "bad", {"x": 1}, "bad")
    assert error.to_wire() == {"code": -32602, "message": "bad", "data": {"x": 1}}


@pytest.mark.parametrize(
    "bad", [None, "oops", {"code": "1", "message": "m"}, {"code": 1}, {"code": True, "message": "m"}]
)
def test_a_malformed_error_object_is_a_transport_error(bad: object) -> None:
    error = mt.McpError.from_wire(bad)
    assert (error.code, error.kind) == (-32000, "transport")
    assert error.cause == bad


def test_timeouts_are_timeout_errors_and_print_only_their_message() -> None:
    request = mt.RequestTimeout(1.5)
    assert isinstance(request, TimeoutError) and isinstance(request, mt.McpError)
    assert str(request) == "Request timed out"
    assert request.data == {"timeoutMs": 1500}
    assert request.errno is None
    task = mt.TaskTimeout("task-123456789", 2.0, None)
    assert isinstance(task, TimeoutError)
    assert str(task) == "The task did not finish within the wait"
    assert task.data == {"taskId": "task-123456789", "timeoutMs": 2000}
    assert "task-123456789" not in repr(task)


def test_transport_errors_are_connection_errors() -> None:
    error = mt.TransportError("gone")
    assert isinstance(error, ConnectionError)
    assert (error.code, error.kind, str(error)) == (-32000, "transport", "gone")


def test_task_failed_takes_its_error_from_the_status() -> None:
    status = mt.Status.from_map(
        {"taskId": "t-abcdefgh", "status": "failed", "error": {"code": -32050, "message": "nope", "data": [1]}}
    )
    failed = mt.TaskFailed(status)
    assert (failed.code, failed.message, failed.data, failed.kind) == (-32050, "nope", [1], "protocol")
    assert failed.cause == ("task_failed", status)


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError):
        mt.McpError(1, "m", kind="weird")
