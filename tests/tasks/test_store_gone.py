"""A task the server no longer knows (-32602 for a task that existed: one the wait saw, or one the
store keeps) ends its wait, single or grouped, and `resume`, as expired (past its createdAt +
ttlMs) or forgotten; its record ends so too: it leaves `store.unfinished()`, and is pruned as
finished records are. Against foreign servers: the socket-level listen server (which forgets every
task on its ``forget`` tool) and a direct one of this file's that forgets at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from tests.foreign.listen_tasks import ListenTasksServer
from tests.memory_store import MemoryTaskStore

ANSWER = {"action": "accept", "content": {"name": "Ada"}}


@pytest.fixture
def listen() -> Iterator[ListenTasksServer]:
    server = ListenTasksServer(complete_on_listen=1000, poll_ms=20)
    server.start()
    yield server
    server.close()


@pytest.fixture
def sqlite(tmp_path: Path) -> mt.SqliteTaskStore:
    return mt.SqliteTaskStore(tmp_path / "tasks.sqlite3")


class Forgetful:
    """A direct 2026-07-28 server that knows no task: every ``tasks/get`` is -32602."""

    def __init__(self) -> None:
        self.gets = 0

    def handle(self, message: dict[str, Any], exchange: Any) -> dict[str, Any] | None:
        if "id" not in message:
            return None
        if message["method"] == "server/discover":
            result = {"supportedVersions": ["2026-07-28"], "serverInfo": {"name": "forgetful", "version": "1"}}
            return {"jsonrpc": "2.0", "id": message["id"], "result": result}
        self.gets += message["method"] == "tasks/get"
        error = {"code": -32602, "message": "Unknown or inaccessible taskId"}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}


def kept(task_id: str, *, created: str = "2020-01-01T00:00:00Z", ttl_ms: int | None = 1000) -> mt.TaskRef:
    """What another process recorded of a task (working, created then, with that ttl)."""
    wire: dict[str, Any] = {"taskId": task_id, "status": "working", "createdAt": created}
    if ttl_ms is not None:
        wire["ttlMs"] = ttl_ms
    return mt.TaskRef("direct:forgetful", task_id, tool="job", created_at=1.0, last_status=mt.Status.from_map(wire))


def test_a_single_wait_on_a_task_the_server_forgot_ends_it_in_the_store(
    listen: ListenTasksServer, sqlite: mt.SqliteTaskStore
) -> None:
    with mt.Client.http(listen.url, store=sqlite) as client:
        task = mt.call_tool(client, "job")
        assert isinstance(task, mt.Status) and [r.task_id for r in sqlite.unfinished()] == [task.task_id]
        sqlite.write_answers(task.task_id, {"q": ANSWER})  # never acknowledged: never needed now
        with pytest.raises(mt.McpError) as raised:  # the server forgets it once the wait has seen it
            mt.await_task(client, task.task_id, timeout=30, on_status=lambda s: client.call_tool("forget"))
    error = raised.value
    assert error.code == -32602 and error.data == {"taskId": task.task_id, "reason": "forgotten"}
    assert "no longer known" in error.message and task.task_id not in error.message
    ref = sqlite.get(task.task_id)
    assert ref is not None and ref.gone == "forgotten" and ref.finished
    assert sqlite.unfinished() == [] and sqlite.unacknowledged(task.task_id) == {}


def test_resume_of_a_kept_task_the_server_forgot_ends_it(listen: ListenTasksServer, sqlite: mt.SqliteTaskStore) -> None:
    with mt.Client.http(listen.url, store=sqlite) as client:  # a process that started it, then died
        task = mt.call_tool(client, "job")
        assert isinstance(task, mt.Status)
        client.call_tool("forget")
    (ref,) = sqlite.unfinished()
    with pytest.raises(mt.McpError) as raised:  # this wait never saw the task: the store kept it
        mt.resume(ref, store=sqlite, timeout=30)
    assert raised.value.data["reason"] == "forgotten"
    assert sqlite.unfinished() == []
    again = sqlite.get(task.task_id)
    assert again is not None and again.gone == "forgotten"


@pytest.mark.parametrize(
    ("ref", "why"),
    [(kept("old-0001"), "expired"), (kept("new-0001", created="2999-01-01T00:00:00Z"), "forgotten")],
    ids=["past-its-ttl", "within-its-ttl"],
)
def test_a_kept_task_ends_as_expired_past_its_ttl_else_forgotten(ref: mt.TaskRef, why: str) -> None:
    store = MemoryTaskStore()
    store.record(ref)
    with mt.Client.direct(Forgetful(), store=store) as client, pytest.raises(mt.McpError) as raised:
        mt.wait_task(client, ref.task_id, timeout=30)
    assert raised.value.data == {"taskId": ref.task_id, "reason": why}
    assert (store.get(ref.task_id) or ref).gone == why and store.unfinished() == []


def test_an_unknown_task_nobody_kept_stays_the_servers_error() -> None:
    store = MemoryTaskStore()
    server = Forgetful()
    with mt.Client.direct(server, store=store) as client, pytest.raises(mt.McpError) as raised:
        mt.wait_task(client, "never-0001", timeout=30)
    assert raised.value.message.startswith("Unknown or inaccessible taskId (") and raised.value.data is None
    assert server.gets == 1 and store.get("never-0001") is None


def test_a_group_wait_ends_a_forgotten_task_in_the_store(listen: ListenTasksServer, sqlite: mt.SqliteTaskStore) -> None:
    with mt.Client.http(listen.url, store=sqlite) as client:
        tasks = [mt.call_tool(client, "job") for _ in range(2)]
        client.call_tool("forget")
        statuses = mt.wait_all(client, [t.task_id for t in tasks if isinstance(t, mt.Status)], timeout=30)
    errors = [s.exception for s in statuses if isinstance(s, mt.FailedWait)]
    assert len(errors) == 2 and all(isinstance(e, mt.McpError) and e.data["reason"] == "forgotten" for e in errors)
    assert sqlite.unfinished() == []


def test_a_forgotten_tasks_record_is_pruned_as_finished_ones_are(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    store = mt.SqliteTaskStore(path, keep_finished=1e-6)
    ref = kept("old-0001")
    store.record(ref)
    with mt.Client.direct(Forgetful(), store=store) as client, pytest.raises(mt.McpError):
        mt.wait_task(client, ref.task_id, timeout=30)
    assert store.get(ref.task_id) is not None  # ended, still kept
    later = mt.SqliteTaskStore(path, keep_finished=1e-6)  # its first record prunes
    later.record(kept("new-0001", created="2999-01-01T00:00:00Z"))
    assert later.get(ref.task_id) is None and [r.task_id for r in later.unfinished()] == ["new-0001"]
