"""``raise_on_error=True``: the opt-in check for a tool's own error (a result with ``isError:
true``, as requests' ``raise_for_status()``), on `call_and_await`, `await_task` and `resume`, raising
`mt.ToolError` that carries the result; the default still returns the result. Against the reference
server (a task whose tool raised) and a foreign one (an error result without a task).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import mcp_tasks as mt
from mcp_tasks._redact import short_id
from mcp_tasks.server import Server, ToolContext, serve_http
from mcp_tasks.server import ToolError as ServerToolError
from tests.foreign.modern_http_tasks import ModernHttpTasksServer


def refuse(ctx: ToolContext, report: str) -> dict[str, str]:
    raise ServerToolError(f"no such report: {report}")


def export(ctx: ToolContext, report: str) -> dict[str, str]:
    return {"report": report}


@pytest.fixture
def server() -> Iterator[Server]:
    made = Server(poll_interval=0.02)
    made.add_tool(refuse, name="refuse", task="required")
    made.add_tool(export, name="export", task="required")
    yield made
    made.close()


def test_call_and_await_raises_tool_error_carrying_the_result(server: Server) -> None:
    with mt.Client.direct(server) as client:
        kept = mt.call_and_await(client, "refuse", {"report": "q9"})
        assert kept["isError"] is True  # the default: a result, as MCP has it
        with pytest.raises(mt.ToolError) as caught:
            mt.call_and_await(client, "refuse", {"report": "q9"}, raise_on_error=True)
        fine = mt.call_and_await(client, "export", {"report": "q3"}, raise_on_error=True)
    error = caught.value
    assert isinstance(error, mt.McpError) and error.kind == "execution" and error.code == -32603
    assert error.result["isError"] is True and error.result["content"][0]["text"] == "no such report: q9"
    assert error.status is not None and error.status.status is mt.TaskState.COMPLETED
    assert error.tool == "refuse"
    assert error.arguments == {"report": "q9"}  # the call named in the message
    shown = f"""Tool 'refuse' {{"report": "q9"}} (task {short_id(error.status.task_id)})"""
    assert str(error) == f"{shown} reported an error: no such report: q9"
    assert error.status.task_id not in repr(error)
    assert fine["structuredContent"] == {"report": "q3"}


def test_await_task_and_resume_raise_it_too(server: Server, tmp_path: Path) -> None:
    store = mt.SqliteTaskStore(tmp_path / "tasks.sqlite3")
    with serve_http(server) as http:
        with mt.Client.http(http.url, store=store) as client:
            task = mt.call_tool(client, "refuse", {"report": "q1"})
            assert isinstance(task, mt.Status)
            with pytest.raises(mt.ToolError, match=r"The tool \(task .*\) reported an error: no such report: q1"):
                mt.await_task(client, task, raise_on_error=True)
            second = mt.call_tool(client, "refuse", {"report": "q2"})
        assert isinstance(second, mt.Status)
        (ref,) = [r for r in store.unfinished() if r.task_id == second.task_id]
        with pytest.raises(mt.ToolError, match=r"""Tool 'refuse' \{"report": "q2"\} .*no such report: q2""") as caught:
            mt.resume(ref, store=store, timeout=60, raise_on_error=True)
    assert caught.value.result["isError"] is True
    assert store.unfinished() == []  # the end was recorded before it raised


def test_a_tool_error_without_a_task_and_bad_values() -> None:
    foreign = ModernHttpTasksServer()
    foreign.start()
    try:
        with mt.Client.http(foreign.url) as client:
            assert mt.call_and_await(client, "refuse")["isError"] is True
            with pytest.raises(mt.ToolError, match=r"^Tool 'refuse' reported an error: no such report$") as caught:
                mt.call_and_await(client, "refuse", raise_on_error=True)
            assert caught.value.status is None
            with pytest.raises(TypeError, match="raise_on_error must be True or False, got str"):
                mt.call_and_await(client, "plain", raise_on_error="yes")  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="raise_on_error"):
                mt.await_task(client, "some-task", raise_on_error=1)  # type: ignore[arg-type]
    finally:
        foreign.close()


def test_the_message_of_a_result_without_text() -> None:
    error = mt.ToolError({"content": [{"type": "image", "data": "", "mimeType": "image/png"}], "isError": True})
    assert str(error) == "The tool reported an error: (its result has no text)"
    result = {"content": [{"type": "text", "text": "no"}], "isError": True}
    called = mt.ToolError(result, None, "login", {"user": "ann", "password": "hunter2"})
    assert str(called) == """Tool 'login' {"user": "ann", "password": "***"} reported an error: no"""
    long = mt.ToolError({"content": [{"type": "text", "text": "x" * 5000}], "isError": True})
    assert len(str(long)) < 2100 and long.result["content"][0]["text"] == "x" * 5000
