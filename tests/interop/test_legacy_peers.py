"""The legacy era against independent 2025-11-25 servers: the official SDK's last 1.x (mcp 1.30.0)
and fastmcp 3.4.11 (its own task engine), each over stdio and Streamable HTTP, through the same
public helpers a script uses against a 2026-07-28 server. The era is detected, not configured.

What differs between them (and is worked around in mcp_tasks, not here): mcp 1.30.0 sends its
elicitation request only inside a pending tasks/result and reports input_required on tasks/get;
fastmcp 3.4.11 pushes the request on its own (stdout, or the HTTP GET stream) while tasks/get
still says working, and its tasks/result does not block (-32602 until the task is done).
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._clock import Deadline
from mcp_tasks._errors import SessionExpired
from mcp_tasks.transports.http import HttpTransport
from tests.conftest import ROOT
from tests.interop.conftest import HERE, STARTUP_DEADLINE, require, stop_process, tail

pytestmark = pytest.mark.interop

BIN = "Scripts" if os.name == "nt" else "bin"
PEERS = {
    "mcp1": (ROOT / ".venv-peers-mcp1" / BIN / "python", HERE / "mcp1_server.py"),
    "fastmcp3": (ROOT / ".venv-peers-fastmcp3" / BIN / "python", HERE / "fastmcp3_server.py"),
}


def confirm(params: dict[str, Any]) -> dict[str, Any]:
    """Accept a confirmation form: every boolean the schema asks for is True."""
    properties = params.get("requestedSchema", {}).get("properties", {})
    return {"action": "accept", "content": {key: True for key in properties}}


HANDLERS = mt.InputHandlers(form=confirm)


class LegacyHttpServer:
    """A legacy peer serving Streamable HTTP on 127.0.0.1 (it prints the port it bound)."""

    def __init__(self, peer: str, log: Path) -> None:
        python, script = PEERS[peer]
        require(python, f"the {peer} peer")
        self.log = log
        self._log_file = log.open("wb")
        self.process = subprocess.Popen(
            [str(python), str(script), "http", "0"],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
        )

    def start(self) -> str:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        line = b""
        deadline = time.monotonic() + STARTUP_DEADLINE
        while not line.endswith(b"\n"):
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                pytest.fail(f"the legacy peer did not start; its log:\n{tail(self.log)}", pytrace=False)
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                chunk = os.read(fd, 256)
                if not chunk:
                    continue
                line += chunk
        return f"http://127.0.0.1:{int(line.split()[2])}/mcp"

    def stop(self) -> None:
        stop_process(self.process, self._log_file)


@pytest.fixture(scope="module")
def http_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    servers = {name: LegacyHttpServer(name, tmp_path_factory.mktemp(name) / "http.log") for name in PEERS}
    try:
        yield {name: server.start() for name, server in servers.items()}
    finally:
        for server in servers.values():
            server.stop()


@pytest.fixture(params=[(peer, transport) for peer in PEERS for transport in ("stdio", "http")], ids=str)
def client(request: pytest.FixtureRequest) -> Iterator[mt.Client]:
    peer, transport = request.param
    python, script = PEERS[peer]
    if transport == "stdio":
        made = mt.Client.stdio(
            str(require(python, f"the {peer} peer")), [str(script), "stdio"], cwd=ROOT, input_handlers=HANDLERS
        )
    else:
        made = mt.Client.http(request.getfixturevalue("http_urls")[peer], input_handlers=HANDLERS)
    try:
        yield made
    finally:
        with contextlib.suppress(mt.McpError):
            made.close()


def text(result: dict[str, Any]) -> str:
    content = result["content"]
    assert isinstance(content, list) and content
    value = content[0]["text"]
    assert isinstance(value, str)
    return value


def test_the_era_is_detected_and_the_capabilities_come_from_initialize(client: mt.Client) -> None:
    assert client.protocol_version == "2025-11-25"
    assert client.era == "legacy"
    assert "call" in client.server_capabilities["tasks"]["requests"]["tools"]
    assert mt.server_supports(client) is True  # capabilities.tasks.requests.tools.call
    assert mt.may_create_task(client, "slow") is True
    assert mt.may_create_task(client, "plain") is False
    names = {tool["name"] for tool in client.list_tools()}
    assert {"slow", "confirm_delete", "failing", "long", "must_task", "plain"} <= names


def test_a_task_tool_becomes_a_legacy_task_and_its_result_comes_from_tasks_result(client: mt.Client) -> None:
    status = mt.call_tool(client, "slow", {"seconds": 0.2, "label": "legacy"})
    assert isinstance(status, mt.Status)
    assert status.era == "legacy"
    assert status.ttl_ms == 60000
    assert status.poll_interval_ms is not None
    assert text(mt.await_task(client, status, timeout=30)) == "legacy done after 0.2s"


def test_call_and_await_and_a_forbidden_tool_runs_inline(client: mt.Client) -> None:
    assert text(mt.call_and_await(client, "slow", {"seconds": 0.1}, timeout=30)) == "slow done after 0.1s"
    plain = mt.call_tool(client, "plain", {"x": 4})
    assert isinstance(plain, dict)
    assert text(plain) == "5"


def test_a_required_tool_is_task_augmented(client: mt.Client) -> None:
    assert text(mt.call_and_await(client, "must_task", timeout=30)) == "ran as a task"


def test_input_is_answered_by_the_handler_whichever_way_the_server_asks(client: mt.Client) -> None:
    status = mt.call_tool(client, "confirm_delete", {"item": "old.log"})
    assert isinstance(status, mt.Status)
    assert text(mt.await_task(client, status, timeout=30)) == "deleted old.log"


# fastmcp pushes its request as soon as the tool asks; one that comes before any wait for the task
# runs goes to the input handlers, so its tool works a moment first ("pause"; mcp 1.30 ignores it).
ASK_LATER = {"item": "old.log", "pause": 1.0}


def names_its_task(request: pytest.FixtureRequest) -> bool:
    """Whether the peer's input request can reach a wait's strategy: mcp 1.30 sends it inside the
    wait's own pending tasks/result, naming the task (related-task); fastmcp 3.4.11 pushes it on
    its own, naming no task, so by the routing rule (design.md §7.1) the client's handlers answer it.
    """
    return "fastmcp3" not in request.node.callspec.id


def test_input_return_stops_the_wait_with_the_servers_request(
    client: mt.Client, request: pytest.FixtureRequest
) -> None:
    status = mt.call_tool(client, "confirm_delete", ASK_LATER)
    assert isinstance(status, mt.Status)
    if not names_its_task(request):
        assert text(mt.await_task(client, status, input="return", timeout=30)) == "deleted old.log"  # handlers
        return
    try:
        with pytest.raises(mt.InputRequired) as asked:
            mt.await_task(client, status, input="return", timeout=30)
        stopped = asked.value.status
        assert stopped.status is mt.TaskState.INPUT_REQUIRED and stopped.era == "legacy"
        assert [request["method"] for request in stopped.input_requests.values()] == ["elicitation/create"]
    finally:
        with contextlib.suppress(mt.McpError):
            mt.cancel_task(client, status)


def test_a_function_answers_input_instead_of_the_handlers(client: mt.Client, request: pytest.FixtureRequest) -> None:
    asked: list[mt.Status] = []

    def decline(status: mt.Status) -> dict[str, Any]:
        asked.append(status)
        return {key: {"action": "decline"} for key in status.input_requests}

    status = mt.call_tool(client, "confirm_delete", ASK_LATER)
    assert isinstance(status, mt.Status)
    result = text(mt.await_task(client, status, input=decline, timeout=30))
    if not names_its_task(request):
        assert result == "deleted old.log" and asked == []  # the handlers accept; nothing is guessed
        return
    assert result == "kept old.log"
    assert len(asked) == 1 and asked[0].task_id == status.task_id


def test_a_failing_task_raises_task_failed_from_its_status(client: mt.Client) -> None:
    status = mt.call_tool(client, "failing")
    assert isinstance(status, mt.Status)
    with pytest.raises(mt.TaskFailed) as failed:
        mt.await_task(client, status, timeout=30)
    assert failed.value.status.era == "legacy"
    assert "failed on purpose" in str(failed.value.status.status_message)


def test_cancel_then_wait_is_cancelled_and_cancelling_again_changes_nothing(client: mt.Client) -> None:
    status = mt.call_tool(client, "long", {"seconds": 30})
    assert isinstance(status, mt.Status)
    mt.cancel_task(client, status)
    with pytest.raises(mt.TaskCancelled):
        mt.await_task(client, status, timeout=30)
    mt.cancel_task(client, status)
    assert mt.get_task(client, status).status is mt.TaskState.CANCELLED


def test_a_wait_that_runs_out_raises_task_timeout_with_the_last_status(client: mt.Client) -> None:
    status = mt.call_tool(client, "long", {"seconds": 30})
    assert isinstance(status, mt.Status)
    try:
        with pytest.raises(mt.TaskTimeout) as late:
            mt.wait_task(client, status, timeout=0.5)
        assert late.value.status is not None
        assert late.value.status.status is mt.TaskState.WORKING
    finally:
        mt.cancel_task(client, status)


def test_listen_follows_the_session_and_polls(client: mt.Client) -> None:
    status = mt.call_tool(client, "slow", {"seconds": 0.2})
    assert isinstance(status, mt.Status)
    assert text(mt.await_task(client, status, listen=True, timeout=30)) == "slow done after 0.2s"


def test_a_legacy_listen_wakes_on_the_status_notifications(client: mt.Client) -> None:
    if "fastmcp" not in str(client.server_info.get("name")):
        pytest.skip("fastmcp pushes notifications/tasks/status; mcp 1.30 does not")
    status = mt.call_tool(client, "slow_patient", {"seconds": 0.2})
    assert isinstance(status, mt.Status) and status.poll_interval_ms == 600_000
    # Polling alone would read the task again only after ten minutes, past the wait's timeout.
    assert text(mt.await_task(client, status, listen=True, timeout=60)) == "patient done after 0.2s"


def test_list_tasks_gives_legacy_statuses(client: mt.Client) -> None:
    status = mt.call_tool(client, "slow", {"seconds": 0})
    assert isinstance(status, mt.Status)
    mt.wait_task(client, status, timeout=30)
    listed = mt.list_tasks(client)
    assert all(task.era == "legacy" for task in listed)
    if client.server_info.get("name") == "mcp_tasks-interop-mcp1":
        assert status.task_id in {task.task_id for task in listed}
    # fastmcp 3.4.11's tasks/list is a stub that always answers [] (a quirk of that server).


def test_twenty_concurrent_waits_through_one_client(client: mt.Client) -> None:
    results: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def one(index: int) -> None:
        try:
            value = text(mt.call_and_await(client, "slow", {"seconds": 0.1, "label": f"n{index}"}, timeout=60))
        except BaseException as exc:
            with lock:
                errors.append(exc)
            return
        with lock:
            results.append(value)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    assert errors == []
    assert sorted(results) == sorted(f"n{i} done after 0.1s" for i in range(20))


@pytest.mark.parametrize("peer", list(PEERS))
def test_a_joined_session_is_used_and_left_to_its_owner(peer: str, http_urls: dict[str, str]) -> None:
    url = http_urls[peer]
    tools_list = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    with mt.Client.http(url, timeout=30) as owner:
        owner.list_tools()
        session = owner.transport.session_id
        assert session is not None
        joined = HttpTransport(url, session_id=session)
        try:
            joined.begin_session(owner.protocol_version)
            assert joined.request(tools_list, Deadline(30))["result"]["tools"]
        finally:
            joined.close()  # not the joiner's to end
        assert owner.list_tools()
    # The owner's close ended it: the DELETE (with MCP-Protocol-Version) was taken.
    late = HttpTransport(url, session_id=session)
    try:
        with pytest.raises(SessionExpired):
            late.request(tools_list, Deadline(30))
    finally:
        late.close()
