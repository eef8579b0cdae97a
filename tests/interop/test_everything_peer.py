"""The reference "everything" server (@modelcontextprotocol/server-everything 2026.8.31, on the
TypeScript SDK 1.x; .npm-peers-everything, installed by .ci/peers.py) over stdio and Streamable
HTTP: its 2025-11-25 task tool ``simulate-research-query`` (taskSupport "required", about 4 s in
stages; ``ambiguous`` makes it ask for input), through the same public helpers a script uses on a
2026-07-28 server.

Its quirks, worked around in mcp_tasks (peers.md Part C): the ttl is forced to 300000 whatever was
asked; the input request (JSON-RPC id 0) comes only inside a pending ``tasks/result``; over HTTP
every POST answer starts with a priming event (an id, no data) and status notifications come only
on the GET stream; a second cancel is -32602; ``tasks/result`` of a cancelled task is -32603 (never
asked); stdin closed does not end it (the transport terminates it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from tests.conftest import ROOT
from tests.interop.conftest import HERE, STARTUP_DEADLINE, require, stop_process, tail

pytestmark = pytest.mark.interop

SERVER = ROOT / ".npm-peers-everything" / "node_modules" / "@modelcontextprotocol" / "server-everything"
ENTRY = SERVER / "dist" / "index.js"
PRELOAD = HERE / "node20" / "preload.mjs"  # pins every listen() to 127.0.0.1
TASK_TOOL = "simulate-research-query"


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not on PATH (needed for server-everything)", pytrace=False)
    return found


def clarify(params: dict[str, Any]) -> dict[str, Any]:
    """Answer the research tool's clarification form."""
    assert "interpretation" in params["requestedSchema"]["properties"]
    return {"action": "accept", "content": {"interpretation": "snake"}}


HANDLERS = mt.InputHandlers(form=clarify)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class EverythingHttp:
    """server-everything in streamableHttp mode on 127.0.0.1."""

    def __init__(self, log: Path) -> None:
        require(ENTRY, "server-everything")
        self.port = free_port()
        self.log = log
        self._log_file = log.open("wb")
        env = {**os.environ, "PORT": str(self.port)}
        self.process = subprocess.Popen(
            [node(), f"--import={PRELOAD}", str(ENTRY), "streamableHttp"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
        )

    def start(self) -> str:
        url = f"http://127.0.0.1:{self.port}/mcp"
        deadline = time.monotonic() + STARTUP_DEADLINE
        while True:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"server-everything did not start; its log:\n{tail(self.log)}", pytrace=False)
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return url
            except OSError:
                time.sleep(0.1)

    def stop(self) -> None:
        stop_process(self.process, self._log_file)


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = EverythingHttp(tmp_path_factory.mktemp("everything") / "http.log")
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture(params=["stdio", "http"])
def client(request: pytest.FixtureRequest) -> Iterator[mt.Client]:
    if request.param == "stdio":
        made = mt.Client.stdio(node(), [str(require(ENTRY, "server-everything")), "stdio"], input_handlers=HANDLERS)
    else:
        made = mt.Client.http(request.getfixturevalue("http_url"), input_handlers=HANDLERS)
    try:
        yield made
    finally:
        with contextlib.suppress(mt.McpError):
            made.close()


def report(result: dict[str, Any]) -> str:
    text = result["content"][0]["text"]
    assert isinstance(text, str)
    return text


def test_the_era_and_the_task_tool_are_found(client: mt.Client) -> None:
    assert client.protocol_version == "2025-11-25"
    assert client.era == "legacy"
    assert client.server_info["name"] == "mcp-servers/everything"
    assert "call" in client.server_capabilities["tasks"]["requests"]["tools"]
    tools = {tool["name"]: tool for tool in client.list_tools()}
    assert tools[TASK_TOOL]["execution"]["taskSupport"] == "required"
    assert tools["echo"]["execution"]["taskSupport"] == "forbidden"


def test_the_required_task_tool_completes_with_its_report(client: mt.Client) -> None:
    status = mt.call_tool(client, TASK_TOOL, {"topic": "rust"})
    assert isinstance(status, mt.Status)
    assert status.era == "legacy"
    assert status.ttl_ms == 300000  # forced by the server, whatever was asked
    assert status.poll_interval_ms == 1000
    assert "# Research Report: rust" in report(mt.await_task(client, status, timeout=60))
    assert mt.get_task(client, status).status is mt.TaskState.COMPLETED


def test_an_ambiguous_query_asks_for_input_and_the_handler_answers(client: mt.Client) -> None:
    result = mt.call_and_await(client, TASK_TOOL, {"topic": "python", "ambiguous": True}, timeout=60)
    assert "python (snake)" in report(result)


def test_a_forbidden_tool_runs_inline(client: mt.Client) -> None:
    result = mt.call_tool(client, "echo", {"message": "hi"})
    assert isinstance(result, dict)
    assert report(result) == "Echo: hi"


def test_cancel_then_wait_is_cancelled_and_cancelling_again_changes_nothing(client: mt.Client) -> None:
    status = mt.call_tool(client, TASK_TOOL, {"topic": "to cancel"})
    assert isinstance(status, mt.Status)
    mt.cancel_task(client, status)
    with pytest.raises(mt.TaskCancelled):
        mt.await_task(client, status, timeout=60)
    mt.cancel_task(client, status)  # -32602 "terminal status" from the server: already finished
    assert mt.get_task(client, status).status is mt.TaskState.CANCELLED


def test_a_wait_that_runs_out_raises_task_timeout_with_the_last_status(client: mt.Client) -> None:
    status = mt.call_tool(client, TASK_TOOL, {"topic": "slowly"})
    assert isinstance(status, mt.Status)
    try:
        with pytest.raises(mt.TaskTimeout) as late:
            mt.wait_task(client, status, timeout=0.5)
        assert late.value.status is not None
        assert late.value.status.status is mt.TaskState.WORKING
    finally:
        mt.cancel_task(client, status)


def test_listen_follows_the_status_notifications(client: mt.Client) -> None:
    status = mt.call_tool(client, TASK_TOOL, {"topic": "listened"})
    assert isinstance(status, mt.Status)
    assert "listened" in report(mt.await_task(client, status, listen=True, timeout=60))


def test_list_tasks_pages_through_the_session_tasks(client: mt.Client) -> None:
    status = mt.call_tool(client, TASK_TOOL, {"topic": "listed"})
    assert isinstance(status, mt.Status)
    try:
        listed = mt.list_tasks(client)
        assert status.task_id in {task.task_id for task in listed}
        assert all(task.era == "legacy" for task in listed)
    finally:
        mt.cancel_task(client, status)


def test_concurrent_waits_through_one_client(client: mt.Client) -> None:
    results: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def one(index: int) -> None:
        try:
            value = report(mt.call_and_await(client, TASK_TOOL, {"topic": f"t{index}"}, timeout=90))
        except BaseException as exc:
            with lock:
                errors.append(exc)
            return
        with lock:
            results.append(value)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    assert sorted(r.split("\n")[0] for r in results) == sorted(f"# Research Report: t{i}" for i in range(5))
