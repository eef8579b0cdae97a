"""Input after a restart on a 2025-11-25 server (the foreign socket-level server of that era): a
client without input handlers declares the input a later process will answer (`declare_input`,
or by having a store), its wait leaves the server's request where it is, and a process with
handlers joins the session and answers it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._input import declared_kinds
from tests.conftest import ROOT
from tests.foreign.legacy_http_tasks import LegacyHttpTasksServer


def accept_ada(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


HANDLERS = mt.InputHandlers(form=accept_ada)

# The batch job: its own process, a store, no input handlers; it waits a little and leaves.
BATCH = """
import sys
import mcp_tasks as mt
store = mt.SqliteTaskStore(sys.argv[2])
client = mt.Client.http(sys.argv[1], store=store)
assert "form" in client.client_capabilities["elicitation"], client.client_capabilities
task = mt.call_tool(client, "ask_task")
stopped = mt.wait_task(client, task, timeout=30)
print(stopped.status)
client.close(end_session=False)
"""


def test_declare_input_declares_what_no_handler_here_answers(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/mcp"
    with mt.Client.http(url, declare_input=["form", "sampling"]) as client:
        assert client.client_capabilities == {"elicitation": {"form": {}}, "sampling": {}}
    with mt.Client.http(url, store=mt.SqliteTaskStore(tmp_path / "tasks.db")) as client:
        assert client.client_capabilities == {"elicitation": {"form": {}, "url": {}}}
    with mt.Client.http(url, store=mt.SqliteTaskStore(tmp_path / "tasks.db"), declare_input=()) as client:
        assert client.client_capabilities == {}
    with mt.Client.http(url) as client:
        assert client.client_capabilities == {}
    with pytest.raises(ValueError, match="declare_input takes 'form', 'url', 'sampling', 'roots', got 'forms'"):
        mt.Client.http(url, declare_input=["forms"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="declare_input must be a list of input kinds"):
        mt.Client.http(url, declare_input="form")  # type: ignore[arg-type]


def test_a_task_started_in_a_batch_job_is_answered_by_a_later_process(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with LegacyHttpTasksServer() as server:
        batch = subprocess.run(
            [sys.executable, "-c", BATCH, server.url, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert batch.returncode == 0, batch.stderr
        assert batch.stdout.strip() == "input_required"  # the wait came back, the task still asks
        asked = server.journal.events(lambda e: e.get("method") == "tasks/result")
        assert asked == []  # nobody here could answer: the server's request was left on the server
        store = mt.SqliteTaskStore(path)
        (ref,) = store.unfinished()
        assert ref.tool == "ask_task" and ref.session_id is not None
        result = mt.resume(ref, store=store, input_handlers=HANDLERS, timeout=30)
    assert result["content"][0]["text"] == "hello Ada (accept)"
    assert store.unfinished() == []


def test_resume_takes_input_handlers_only_for_the_client_it_opens() -> None:
    ref = mt.TaskRef("http://127.0.0.1:9/mcp", "task-0123456789abcdef", "legacy")
    with mt.Client.http("http://127.0.0.1:9/mcp") as client, pytest.raises(TypeError, match="give them to your client"):
        mt.resume(ref, client=client, input_handlers=HANDLERS)


def test_undeclared_input_on_a_legacy_server_says_why_and_what_to_do() -> None:
    error = {"code": -32603, "message": "Client does not support elicitation capability"}
    failed = mt.TaskFailed(mt.Status(task_id="t" * 20, status=mt.TaskState.FAILED, error=error, era="legacy"))
    assert "did not declare elicitation" in str(failed) and 'declare_input=["form", "url"]' in str(failed)
    plain = mt.TaskFailed(mt.Status(task_id="t" * 20, status=mt.TaskState.FAILED, error={"code": 1, "message": "x"}))
    assert str(plain).endswith("failed: x (error 1)")


def sample(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "model": "test", "content": {"type": "text", "text": "sampled"}}


def test_a_wait_without_a_handler_for_a_kind_declared_for_later_leaves_the_request(tmp_path: Path) -> None:
    with LegacyHttpTasksServer() as server:
        # Sampling is answered here; forms are declared for a later process to answer.
        client = mt.Client.http(server.url, input_handlers=mt.InputHandlers(sampling=sample), declare_input=["form"])
        with client:
            assert client.client_capabilities == {"elicitation": {"form": {}}, "sampling": {}}
            task = mt.call_tool(client, "ask_task")
            assert isinstance(task, mt.Status) and task.session_id is not None
            stopped = mt.wait_task(client, task, timeout=30)
            assert stopped.status is mt.TaskState.INPUT_REQUIRED
            with pytest.raises(mt.InputRequired):
                mt.await_task(client, task, timeout=30)
            client.close(end_session=False)
        # Never fetched to be refused (which failed the task): the request waits on the server.
        assert server.journal.events(lambda e: e.get("method") == "tasks/result") == []
        assert server.journal.events(lambda e: e.get("event") == "ask_task_answer") == []
        with mt.Client.http(server.url, session_id=task.session_id, input_handlers=HANDLERS) as later:
            result = mt.await_task(later, task.task_id, timeout=30)
    assert result["content"][0]["text"] == "hello Ada (accept)"


def test_a_client_with_handlers_and_a_store_declares_what_they_answer_and_answers_it(tmp_path: Path) -> None:
    store = mt.SqliteTaskStore(tmp_path / "tasks.db")
    with LegacyHttpTasksServer() as server, mt.Client.http(server.url, store=store, input_handlers=HANDLERS) as client:
        assert client.client_capabilities == {"elicitation": {"form": {}}}
        result = mt.call_and_await(client, "ask_task", timeout=30)
    assert result["content"][0]["text"] == "hello Ada (accept)"


def test_the_kinds_a_session_declared_are_read_from_its_capabilities() -> None:
    assert declared_kinds({}) == frozenset()
    assert declared_kinds({"elicitation": {}}) == {"form"}  # an empty elicitation means form
    assert declared_kinds({"elicitation": {"url": {}}, "sampling": {}, "tasks": {}}) == {"url", "sampling"}
    assert declared_kinds({"elicitation": {"form": {}, "url": {}}, "roots": {"listChanged": False}}) == {
        "form",
        "url",
        "roots",
    }
