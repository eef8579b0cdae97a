"""Input after a restart against the official SDK's last 1.x (mcp 1.30.0, Streamable HTTP): the
server asks only what the session declared at ``initialize`` ("Client does not support
elicitation capability" otherwise), so the process that starts a task declares what a later one
will answer (a store, or ``declare_input``); the later one joins the session and answers.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from tests.conftest import ROOT
from tests.interop.test_legacy_peers import HANDLERS, LegacyHttpServer, text

pytestmark = pytest.mark.interop

# The batch job: its own process, a task store, no input handlers. It waits a little and leaves
# the session open for whoever resumes its tasks.
BATCH = """
import sys
import mcp_tasks as mt
store = mt.SqliteTaskStore(sys.argv[2])
client = mt.Client.http(sys.argv[1], store=store)
task = mt.call_tool(client, "confirm_delete", {"item": "old.log"})
print(mt.wait_task(client, task, timeout=30).status)
client.close(end_session=False)
"""


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = LegacyHttpServer("mcp1", tmp_path_factory.mktemp("mcp1") / "http.log")
    try:
        yield server.start()
    finally:
        server.stop()


def test_a_store_backed_batch_job_leaves_its_task_for_a_process_with_handlers(url: str, tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    batch = subprocess.run(
        [sys.executable, "-c", BATCH, url, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert batch.returncode == 0, batch.stderr
    assert batch.stdout.strip() == "input_required"
    store = mt.SqliteTaskStore(path)
    (ref,) = store.unfinished()
    assert ref.era == "legacy" and ref.session_id is not None
    result = mt.resume(ref, store=store, input_handlers=HANDLERS, timeout=30)
    assert text(result) == "deleted old.log"


def test_declare_input_without_a_store(url: str) -> None:
    starter = mt.Client.http(url, declare_input=["form"])
    status = mt.call_tool(starter, "confirm_delete", {"item": "new.log"})
    assert isinstance(status, mt.Status)
    starter.close(end_session=False)
    with mt.Client.http(url, session_id=status.session_id, input_handlers=HANDLERS) as later:
        assert text(mt.await_task(later, status.task_id, timeout=30)) == "deleted new.log"


def test_a_session_that_declared_nothing_gets_a_failure_that_says_why(url: str) -> None:
    with mt.Client.http(url) as client:
        status = mt.call_tool(client, "confirm_delete", {"item": "any.log"})
        assert isinstance(status, mt.Status)
        with pytest.raises(mt.TaskFailed) as failed:
            mt.await_task(client, status, timeout=30)
    message: Any = str(failed.value)
    assert "Client does not support elicitation capability" in message
    assert "did not declare elicitation" in message and "declare_input" in message


@pytest.fixture(scope="module")
def fastmcp3_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = LegacyHttpServer("fastmcp3", tmp_path_factory.mktemp("fastmcp3") / "http.log")
    try:
        yield server.start()
    finally:
        server.stop()


def test_where_it_cannot_a_server_that_asks_at_once_gets_the_starting_clients_refusal(
    fastmcp3_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """fastmcp 3.4.11 pushes its request on the session's GET stream as soon as the tool asks,
    naming no task: the client that holds the session then, without a handler, refuses it (the
    legacy guide says so). Nothing is left for a later process to answer."""
    with mt.Client.http(fastmcp3_url, declare_input=["form"]) as starter:
        status = mt.call_tool(starter, "confirm_delete", {"item": "old.log"})
        assert isinstance(status, mt.Status)
        assert text(mt.await_task(starter, status, timeout=30)) == "kept old.log"
    assert "no input handler for the server's form request" in caplog.text
