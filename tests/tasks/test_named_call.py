"""A task this client created is named by its call where the client shows it: the errors of
`call_and_await`, `await_task` and `wait_task` (`TaskFailed`, `TaskCancelled`, `TaskTimeout`)
and a `StatusDisplay`'s line say ``export {"report": "q3"} e294…b175``, never the whole id nor a
secret-looking value; a task the client did not create keeps its bare short id.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator

import pytest

import mcp_tasks as mt
from mcp_tasks._redact import short_id
from mcp_tasks.server import Server, ToolContext


@pytest.fixture
def gate() -> threading.Event:
    return threading.Event()


@pytest.fixture
def server(gate: threading.Event) -> Iterator[Server]:
    def export(ctx: ToolContext, report: str, token: str = "") -> dict[str, str]:
        raise RuntimeError(f"no such report: {report}")

    def hold(ctx: ToolContext, report: str, password: str = "") -> dict[str, str]:
        gate.wait()
        return {"report": report}

    made = Server(poll_interval=0.02)
    made.add_tool(export, name="export", task="required")
    made.add_tool(hold, name="hold", task="required")
    yield made
    gate.set()  # a held task ends
    made.close()


def test_a_failure_names_the_call_and_hides_secrets(server: Server) -> None:
    with mt.Client.direct(server) as client, pytest.raises(mt.TaskFailed) as caught:
        mt.call_and_await(client, "export", {"report": "q3", "token": "hunter2"})
    error = caught.value
    task_id = error.status.task_id
    assert str(error).startswith(f'Task export {{"report": "q3", "token": "***"}} {short_id(task_id)} failed: ')
    assert "hunter2" not in str(error) and task_id not in str(error) and task_id not in repr(error)
    assert error.label is not None


def test_await_task_on_a_task_this_client_created_names_it(server: Server) -> None:
    with mt.Client.direct(server) as client:
        task = mt.call_tool(client, "export", {"report": "q3"})
        assert isinstance(task, mt.Status)
        with pytest.raises(mt.TaskFailed, match=rf'^Task export {{"report": "q3"}} {short_id(task.task_id)} failed'):
            mt.await_task(client, task.task_id)
        with mt.Client.direct(server) as other, pytest.raises(mt.TaskFailed) as bare:
            mt.await_task(other, task.task_id)  # not created by this one: its call is not known
    assert str(bare.value).startswith(f"Task {short_id(task.task_id)} failed: ")


def test_a_cancelled_task_names_its_call(server: Server) -> None:
    with mt.Client.direct(server) as client:
        task = mt.call_tool(client, "hold", {"report": "q4"})
        assert isinstance(task, mt.Status)
        mt.cancel_task(client, task)
        with pytest.raises(mt.TaskCancelled) as caught:
            mt.await_task(client, task, timeout=60)
    assert str(caught.value).startswith(f'Task hold {{"report": "q4"}} {short_id(task.task_id)} was cancelled')


@pytest.mark.parametrize("cancel", [False, True])
def test_a_timeout_names_the_call(server: Server, cancel: bool) -> None:
    with mt.Client.direct(server) as client:
        with pytest.raises(mt.TaskTimeout) as called:
            mt.call_and_await(client, "hold", {"report": "q5"}, timeout=0.05, cancel_on_timeout=cancel)
        task_id = called.value.data["taskId"]
        named = f'Task hold {{"report": "q5"}} {short_id(task_id)} did not finish within'
        assert str(called.value).startswith(named) and called.value.cancelled is cancel
        if not cancel:
            with pytest.raises(mt.TaskTimeout) as waited:
                mt.wait_task(client, task_id, timeout=0.05)
            assert str(waited.value).startswith(named) and task_id not in str(waited.value)
            mt.cancel_task(client, task_id)


def test_a_status_display_names_the_call_of_a_single_task(server: Server, gate: threading.Event) -> None:
    shown = io.StringIO()
    with mt.Client.direct(server) as client:
        task = mt.call_tool(client, "hold", {"report": "q6", "password": "hunter2"})
        assert isinstance(task, mt.Status)
        gate.set()
        with mt.StatusDisplay(shown) as display:
            mt.wait_task(client, task, timeout=60, on_status=display)
    lines = shown.getvalue().splitlines()
    label = f'hold {{"report": "q6", "password": "***"}} {short_id(task.task_id)}'
    assert lines and all(f" · {label}" in line for line in lines), lines
    assert "hunter2" not in shown.getvalue() and task.task_id not in shown.getvalue()
