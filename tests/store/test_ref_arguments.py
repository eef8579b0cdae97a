"""A kept task knows its call: `TaskRef.arguments` beside its `.tool`, on SQLite, a real
PostgreSQL and the tests' memory store, as a store-backed client records it (through an intent,
or without one on a store of one's own that keeps none), secret-looking values hidden. A store
written before refs kept arguments reads on (they are None), and takes the new records beside
the old: the arguments ride in the ref's JSON, so no table changes (format 1 still, which an
older mcp_tasks reads, skipping them).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._store._ref import FORMAT
from mcp_tasks.server import Server
from tests.memory_store import MemoryTaskStore

ENDPOINT = "http://127.0.0.1:9/mcp"
CALLED = {"report": "q3", "api_key": "sk-live-0123456789", "rows": [1, {"password": "hunter2"}]}
KEPT = {"report": "q3", "api_key": "***", "rows": [1, {"password": "***"}]}
OLD = (
    '{"format":1,"endpoint":"http://127.0.0.1:9/mcp","taskId":"old-task-0123456789","era":"modern",'
    '"tool":"export","createdAt":1000.0,"lastStatus":{"taskId":"old-task-0123456789","status":"working",'
    '"createdAt":"2026-12-01T10:00:00Z"}}'
)
"""A record as mcp_tasks wrote it before refs kept arguments."""


def working(task_id: str, state: str = "working") -> mt.Status:
    task: dict[str, Any] = {"taskId": task_id, "status": state, "createdAt": "2026-12-01T10:00:00Z"}
    if state == "completed":
        task["result"] = {"content": []}
    return mt.Status.from_map(task)


@pytest.fixture(params=["sqlite", "postgres", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[mt.TaskStore]:
    if request.param == "sqlite":
        yield mt.SqliteTaskStore(tmp_path / "tasks.sqlite3")
    elif request.param == "postgres":
        yield request.getfixturevalue("pg_store")
    else:
        yield MemoryTaskStore()


def test_a_ref_keeps_its_arguments_with_secrets_hidden_through_json() -> None:
    ref = mt.TaskRef(ENDPOINT, "task-0123456789abcdef", tool="export", arguments=CALLED)
    assert ref.arguments == KEPT
    saved = json.loads(ref.to_json())
    assert saved["format"] == FORMAT == 1 and saved["arguments"] == KEPT
    assert mt.TaskRef.from_json(ref.to_json()) == ref
    assert "sk-live" not in ref.to_json() and "hunter2" not in ref.to_json()
    shown = repr(ref)
    assert 'arguments=\'{"report": "q3", "api_key": "***"' in shown and "sk-live" not in shown
    assert mt.TaskRef.from_json(OLD).arguments is None and "arguments" not in mt.TaskRef.from_json(OLD).to_json()
    with pytest.raises(ValueError, match="arguments must be an object or null, got list"):
        mt.TaskRef.from_json(json.dumps({**saved, "arguments": [1]}))


def test_every_store_gives_the_arguments_back_through_its_writes(store: Any) -> None:
    store.record(mt.TaskRef(ENDPOINT, "task-a-0123456789", tool="export", arguments=CALLED, created_at=1.0))
    store.record(mt.TaskRef(ENDPOINT, "task-b-0123456789", tool="export", created_at=2.0))
    kept = store.get("task-a-0123456789")
    assert kept is not None and (kept.tool, kept.arguments) == ("export", KEPT)
    store.update("task-a-0123456789", working("task-a-0123456789"))
    assert [r.arguments for r in store.unfinished()] == [KEPT, None]
    store.finish_many([("task-a-0123456789", working("task-a-0123456789", "completed"), None)])
    ended = store.get("task-a-0123456789")
    assert ended is not None and ended.finished and ended.arguments == KEPT


class NoIntents(MemoryTaskStore):
    """A store of one's own that keeps no intents (the client records the task when made)."""

    record_intent = None  # type: ignore[assignment]


@pytest.fixture
def server() -> Iterator[Server]:
    made = Server(poll_interval=0.02)

    def export(ctx: Any, report: str, api_key: str, rows: list[Any]) -> dict[str, Any]:
        return {"report": report}

    made.add_tool(export, name="export", task="required")
    try:
        yield made
    finally:
        made.close()


@pytest.mark.parametrize("kind", ["store", "no intents"])
def test_a_store_backed_client_records_the_call_it_made(kind: str, store: mt.TaskStore, server: Server) -> None:
    kept_by = NoIntents() if kind == "no intents" else store
    with mt.Client.direct(server, store=kept_by) as client:
        called = mt.call_tool(client, "export", CALLED)
        assert isinstance(called, mt.Status)
        future = mt.submit(client, "export", CALLED)
        assert (future.tool, future.arguments) == ("export", CALLED)  # the caller's own, whole
        future.result(timeout=30)
    for task_id in (called.task_id, future.task_id):
        assert task_id is not None
        ref = kept_by.get(task_id)
        assert ref is not None and (ref.tool, ref.arguments) == ("export", KEPT)


def test_an_old_sqlite_store_reads_on_and_takes_new_records(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    mt.SqliteTaskStore(path).close()  # the file as any version makes it (its layout is unchanged)
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO tasks VALUES (?, 0, 1000.0, 1000.0, ?)", ("old-task-0123456789", OLD))
    db.close()
    store = mt.SqliteTaskStore(path)
    try:
        old = store.get("old-task-0123456789")
        assert old is not None and (old.tool, old.arguments) == ("export", None)
        store.update("old-task-0123456789", working("old-task-0123456789", "completed"))
        store.record(mt.TaskRef(ENDPOINT, "new-task-0123456789", tool="export", arguments=CALLED))
        assert [(r.task_id, r.arguments) for r in store.unfinished()] == [("new-task-0123456789", KEPT)]
        ended = store.get("old-task-0123456789")
        assert ended is not None and ended.finished and ended.arguments is None
    finally:
        store.close()
    with sqlite3.connect(path) as db:
        (version,) = db.execute("PRAGMA user_version").fetchone()
        saved = json.loads(db.execute("SELECT ref FROM tasks WHERE task_id = 'new-task-0123456789'").fetchone()[0])
    db.close()
    assert version == 1 and saved["format"] == 1  # an older mcp_tasks opens the file and reads the record


def test_an_old_postgres_store_reads_on_and_takes_new_records(pg_url: str) -> None:
    psycopg = pytest.importorskip("psycopg")
    with mt.PostgresTaskStore(pg_url) as made:
        made.record(mt.TaskRef(ENDPOINT, "made-task-0123456789", tool="export"))  # the tables exist
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO mcp_tasks.tasks (task_id, finished, created_at, ref) VALUES (%s, false, 1000.0, %s)",
            ("old-task-0123456789", OLD),
        )
    with mt.PostgresTaskStore(pg_url) as store:
        old = store.get("old-task-0123456789")
        assert old is not None and (old.tool, old.arguments) == ("export", None)
        store.update("old-task-0123456789", working("old-task-0123456789", "completed"))
        store.record(mt.TaskRef(ENDPOINT, "new-task-0123456789", tool="export", arguments=CALLED))
        new = store.get("new-task-0123456789")
        assert new is not None and new.arguments == KEPT
        ended = store.get("old-task-0123456789")
        assert ended is not None and ended.finished and ended.arguments is None
