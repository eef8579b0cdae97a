"""The task store contract, run against SQLite, a real PostgreSQL (tests/pg.py) and an in-memory
store written from the README alone (tests/memory_store.py): a third implementation passes these
to plug in. Then what only the SQLite store promises: one file for many processes, and clear
errors for bad files (PostgreSQL's own promises: tests/store/test_postgres.py).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

import mcp_tasks as mt
from mcp_tasks._store import NewerRecord, hold, holder_gone, let_go, moves_forward, new_holder
from tests.conftest import ROOT
from tests.memory_store import MemoryTaskStore

TASK = "task-0123456789abcdef"


def working(task_id: str = TASK, state: mt.TaskState = mt.TaskState.WORKING) -> mt.Status:
    task: dict[str, object] = {"taskId": task_id, "status": state.value, "createdAt": "2026-12-01T10:00:00Z"}
    if state is mt.TaskState.COMPLETED:
        task["result"] = {"content": [{"type": "text", "text": "done"}]}
    if state is mt.TaskState.FAILED:
        task["error"] = {"code": -32603, "message": "it broke"}
    if state is mt.TaskState.INPUT_REQUIRED:
        task["inputRequests"] = {"name": {"method": "elicitation/create", "params": {"message": "Name?"}}}
    return mt.Status.from_map(task)


def ref(task_id: str = TASK, created_at: float = 1000.0) -> mt.TaskRef:
    return mt.TaskRef("http://127.0.0.1:9/mcp", task_id, tool="export", created_at=created_at)


@pytest.fixture(params=["sqlite", "postgres", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[mt.TaskStore]:
    if request.param == "sqlite":
        yield mt.SqliteTaskStore(tmp_path / "tasks.sqlite3")
    elif request.param == "postgres":
        yield request.getfixturevalue("pg_store")
    else:
        yield MemoryTaskStore()


# -- TaskRef ---------------------------------------------------------------------------------------


def test_a_ref_goes_to_json_and_back_with_its_status() -> None:
    task = {"taskId": TASK, "status": "input_required", "statusMessage": "Which one?", "ttl": 60000}
    status = mt.Status.from_map(task, era="legacy", session_id="sess-1")
    saved = ref().with_status(status)
    again = mt.TaskRef.from_json(saved.to_json())
    assert again == saved
    assert again.last_status is not None and again.last_status.era == "legacy"
    assert again.session_id == "sess-1" and not again.finished
    forgotten = attrs.evolve(saved, gone="forgotten")
    assert mt.TaskRef.from_json(forgotten.to_json()) == forgotten and forgotten.finished
    assert "gone='forgotten'" in repr(forgotten)
    with pytest.raises(ValueError, match="gone must be"):
        mt.TaskRef.from_json(json.dumps({**json.loads(saved.to_json()), "gone": "lost"}))


def test_a_ref_shows_a_short_id_only() -> None:
    shown = repr(ref())
    assert TASK not in shown and "task…cdef" in shown and "export" in shown


@pytest.mark.parametrize(
    ("endpoint", "shown"),
    [
        ("https://ada:hunter2@host.example:8443/mcp?api_key=sk-0123456789#x", "https://host.example:8443/mcp"),
        ("http://[::1]:9/mcp?token=abc", "http://[::1]:9/mcp"),
        ("http://host:notaport/mcp?key=1", "http://…"),
        ("python -m my_server --flag=x?y", "python -m my_server --flag=x?y"),
        ("direct:reference", "direct:reference"),
    ],
)
def test_a_ref_shows_its_endpoint_without_query_or_userinfo(endpoint: str, shown: str) -> None:
    kept = mt.TaskRef(endpoint, TASK)
    assert f"endpoint={shown!r}" in repr(kept)
    assert json.loads(kept.to_json())["endpoint"] == endpoint  # whole where it is data


def test_a_ref_from_a_newer_version_is_a_clear_error() -> None:
    saved = json.loads(ref().to_json())
    saved["format"] = 99
    with pytest.raises(NewerRecord, match="newer mcp_tasks"):
        mt.TaskRef.from_json(json.dumps(saved))
    for bad in ("[]", "{}", "not json", json.dumps({**saved, "format": 1, "taskId": ""})):
        with pytest.raises(ValueError):
            mt.TaskRef.from_json(bad)


def test_a_ref_is_a_task_store_protocol_citizen() -> None:
    assert isinstance(mt.SqliteTaskStore.__new__(mt.SqliteTaskStore), mt.TaskStore)
    assert isinstance(mt.PostgresTaskStore.__new__(mt.PostgresTaskStore), mt.TaskStore)
    assert isinstance(MemoryTaskStore(), mt.TaskStore)
    assert not isinstance(object(), mt.TaskStore)


# -- the contract ----------------------------------------------------------------------------------


def test_record_get_update_and_forget(store: mt.TaskStore) -> None:
    assert store.get(TASK) is None
    store.record(ref())
    assert store.get(TASK) == ref()
    store.update(TASK, working())
    kept = store.get(TASK)
    assert kept is not None and kept.last_status == working()
    store.update("not-kept", working("not-kept"))  # left alone
    assert store.get("not-kept") is None
    store.forget(TASK)
    assert store.get(TASK) is None and store.unfinished() == []


def test_unfinished_lists_the_running_oldest_first(store: mt.TaskStore) -> None:
    for n, created in enumerate((30.0, 10.0, 20.0)):
        store.record(ref(f"task-{n}", created))
    store.update("task-2", working("task-2", mt.TaskState.COMPLETED))
    store.update("task-0", working("task-0", mt.TaskState.INPUT_REQUIRED))
    assert [r.task_id for r in store.unfinished()] == ["task-1", "task-0"]


def test_a_task_the_server_forgot_is_kept_as_gone_and_not_unfinished(store: mt.TaskStore) -> None:
    store.record(ref().with_status(working()))
    kept = store.get(TASK)
    assert kept is not None
    store.record(attrs.evolve(kept, gone="expired"))  # what a wait records of a -32602
    again = store.get(TASK)
    assert again is not None and again.gone == "expired" and again.finished and again.last_status == working()
    assert store.unfinished() == []


def status_at(state: mt.TaskState, at: str | None, task_id: str = TASK) -> mt.Status:
    """`working()`'s status, in `state`, with ``lastUpdatedAt`` `at` (None: without one)."""
    status = working(task_id, state)
    return status if at is None else mt.Status.from_map({**status.to_map(), "lastUpdatedAt": at})


def test_a_finished_task_stays_finished_whatever_comes_late(store: mt.TaskStore) -> None:
    store.record(ref().with_status(working()))
    done = working(TASK, mt.TaskState.COMPLETED)
    store.update(TASK, done)
    store.update(TASK, working())  # a wait on a slower link read it before it ended
    store.update(TASK, working(TASK, mt.TaskState.INPUT_REQUIRED))
    store.record(ref().with_status(working()))  # nor does a ref recorded again reopen it
    kept = store.get(TASK)
    assert kept is not None and kept.last_status == done and kept.finished
    assert store.unfinished() == []


def test_the_first_end_recorded_is_kept(store: mt.TaskStore) -> None:
    store.record(ref().with_status(working()))
    done = working(TASK, mt.TaskState.COMPLETED)
    store.update(TASK, done)
    store.update(TASK, working(TASK, mt.TaskState.FAILED))
    store.update(TASK, working(TASK, mt.TaskState.CANCELLED))
    kept = store.get(TASK)
    assert kept is not None and kept.last_status == done


def test_a_status_older_by_last_updated_at_is_not_written(store: mt.TaskStore) -> None:
    store.record(ref())
    later = status_at(mt.TaskState.INPUT_REQUIRED, "2026-12-01T10:00:05Z")
    store.update(TASK, later)
    store.update(TASK, status_at(mt.TaskState.WORKING, "2026-12-01T10:00:04.500+00:00"))  # read before it
    kept = store.get(TASK)
    assert kept is not None and kept.last_status == later
    newer = status_at(mt.TaskState.WORKING, "2026-12-01T11:00:06+01:00")  # the same clock, another zone: later
    store.update(TASK, newer)
    kept = store.get(TASK)
    assert kept is not None and kept.last_status == newer
    undated = status_at(mt.TaskState.INPUT_REQUIRED, None)  # nothing to compare: the later write wins
    store.update(TASK, undated)
    kept = store.get(TASK)
    assert kept is not None and kept.last_status == undated
    ended = status_at(mt.TaskState.COMPLETED, "2026-12-01T09:00:00Z")  # an end is never older than a working
    store.update(TASK, ended)
    kept = store.get(TASK)
    assert kept is not None and kept.last_status == ended and store.unfinished() == []


@pytest.mark.parametrize(
    ("kept_at", "read_at", "written"),
    [
        ("2026-12-01T10:00:05", "2026-12-01T10:00:04Z", False),  # no zone named: UTC
        ("2026-12-01T10:00:05Z", "2026-12-01T10:00:05Z", True),  # the same time: the later write wins
        ("yesterday", "2026-12-01T10:00:04Z", True),  # a time that does not read: nothing to compare
        ("2026-12-01T10:00:05Z", None, True),
    ],
)
def test_a_status_moves_forward_unless_it_is_older(kept_at: str, read_at: str | None, written: bool) -> None:
    kept = ref().with_status(status_at(mt.TaskState.WORKING, kept_at))
    assert moves_forward(kept, status_at(mt.TaskState.INPUT_REQUIRED, read_at)) is written
    assert moves_forward(ref(), working()) and moves_forward(kept, working(TASK, mt.TaskState.CANCELLED))
    assert not moves_forward(attrs.evolve(kept, gone="forgotten"), working(TASK, mt.TaskState.COMPLETED))


def test_a_holder_without_the_lease_writes_no_status(store: mt.TaskStore) -> None:
    one, two = new_holder(), new_holder()
    store.record(ref().with_status(working()))
    asking = working(TASK, mt.TaskState.INPUT_REQUIRED)
    store.update(TASK, asking, holder=one)  # never leased: nothing written, and no error
    kept = store.get(TASK)
    assert kept is not None and kept.last_status == working()
    assert store.acquire(TASK, one, 600)
    store.update(TASK, asking, holder=one)
    store.update(TASK, working(TASK, mt.TaskState.COMPLETED), holder=two)  # another's lease
    kept = store.get(TASK)
    assert kept is not None and kept.last_status == asking
    assert store.acquire(TASK, one, -1)  # it expires
    store.update(TASK, working(TASK, mt.TaskState.FAILED), holder=one)
    assert [r.task_id for r in store.unfinished()] == [TASK]
    assert store.acquire(TASK, two, 600)  # taken over
    done = working(TASK, mt.TaskState.COMPLETED)
    store.update(TASK, done, holder=two)
    kept = store.get(TASK)
    assert kept is not None and kept.last_status == done


def test_finish_many_keeps_the_same_rules(store: mt.TaskStore) -> None:
    many: Any = store
    one, two = new_holder(), new_holder()
    for task_id in ("t-1", "t-2", "t-3"):
        store.record(ref(task_id).with_status(working(task_id)))
    store.update("t-1", working("t-1", mt.TaskState.COMPLETED))
    assert store.acquire("t-2", one, 600) and store.acquire("t-3", one, 600)
    store.write_answers("t-2", {"name": {"action": "accept"}})
    failed = working("t-1", mt.TaskState.FAILED)
    many.finish_many([("t-1", failed, None), ("t-2", working("t-2", mt.TaskState.CANCELLED), two)])
    one_ref, two_ref = store.get("t-1"), store.get("t-2")
    assert one_ref is not None and one_ref.last_status == working("t-1", mt.TaskState.COMPLETED)  # its first end
    assert two_ref is not None and not two_ref.finished  # two holds no lease: nothing written
    assert store.unacknowledged("t-2") == {}  # the task was said to be over: nobody answers it
    assert not store.acquire("t-2", two, 600)  # and one's lease was not two's to free
    done = working("t-3", mt.TaskState.COMPLETED)
    many.finish_many([("t-3", done, one), ("t-3", working("t-3", mt.TaskState.FAILED), one)])
    three = store.get("t-3")
    assert three is not None and three.last_status == done  # a task given twice: its first end
    assert [r.task_id for r in store.unfinished()] == ["t-2"]


def test_the_ledger_keeps_answers_until_acknowledged(store: mt.TaskStore) -> None:
    assert store.unacknowledged(TASK) == {}
    answer = {"action": "accept", "content": {"name": "Ada", "n": [1, 2.5, None, True]}}
    store.write_answers(TASK, {"b": answer, "a": {"action": "decline"}})
    assert store.unacknowledged(TASK) == {"a": {"action": "decline"}, "b": answer}
    store.acknowledge(TASK, ["a"])
    assert store.unacknowledged(TASK) == {"b": answer}
    store.acknowledge(TASK, ["b", "unknown"])
    assert store.unacknowledged(TASK) == {}
    store.write_answers(TASK, {"c": {"action": "cancel"}})
    store.forget(TASK)
    assert store.unacknowledged(TASK) == {}


def test_a_lease_has_one_holder_until_released_or_expired(store: mt.TaskStore) -> None:
    one, two = new_holder(), new_holder()
    assert store.acquire(TASK, one, 15)
    assert store.acquire(TASK, one, 15)  # already its own
    assert not store.acquire(TASK, two, 15)
    assert store.renew(TASK, one, 15) and not store.renew(TASK, two, 15)
    store.release(TASK, two)  # not its lease: nothing changes
    assert not store.acquire(TASK, two, 15)
    store.release(TASK, one)
    assert store.acquire(TASK, two, 15)
    assert not store.renew(TASK, one, 15)
    assert store.acquire("other", one, -1)  # expired at once
    assert store.acquire("other", two, 15)


def test_a_lease_of_a_process_that_is_gone_is_free_at_once(store: mt.TaskStore) -> None:
    gone = dead_holder()
    assert holder_gone(gone) and not holder_gone(new_holder())
    assert not holder_gone("another-machine/1/abc")
    assert store.acquire(TASK, gone, 15)
    assert store.acquire(TASK, new_holder(), 15)


def dead_holder() -> str:
    """The holder of a process of this machine that has ended."""
    code = "from mcp_tasks._store import new_holder; print(new_holder())"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return done.stdout.strip()


def test_claim_takes_free_unfinished_tasks_oldest_first(store: mt.TaskStore) -> None:
    one, two = new_holder(), new_holder()
    for n, created in enumerate((50.0, 10.0, 40.0, 20.0, 30.0, 60.0, 5.0)):
        store.record(ref(f"task-{n}", created))
    store.update("task-6", working("task-6", mt.TaskState.COMPLETED))  # finished: never claimed
    assert store.acquire("task-3", two, 600)  # held by a live holder
    assert store.acquire("task-4", two, -1)  # expired
    assert store.acquire("task-2", dead_holder(), 600)  # its process is gone
    assert store.claim(one, 600, 0) == []
    first = store.claim(one, 600, 2)
    assert [r.task_id for r in first] == ["task-1", "task-4"] and first[0] == store.get("task-1")
    assert [r.task_id for r in store.claim(one, 600, 10)] == ["task-2", "task-0", "task-5"]
    assert store.claim(one, 600, 10) == [] and store.claim(two, 600, 10) == []  # none given twice
    assert not store.acquire("task-1", two, 600) and store.renew("task-1", one, 600)  # the claimer's lease
    store.write_answers("task-1", {"k": {"action": "accept"}}, holder=one)
    store.release("task-0", one)
    assert [r.task_id for r in store.claim(two, 600, 10)] == ["task-0"]
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises((ValueError, TypeError)):
            store.claim(one, 600, bad)  # type: ignore[arg-type]


def test_fenced_writes_are_refused_once_the_lease_is_lost(store: mt.TaskStore) -> None:
    one, two = new_holder(), new_holder()
    with pytest.raises(mt.StoreError):
        store.write_answers(TASK, {"a": {"action": "decline"}}, holder=one)  # never leased
    assert store.acquire(TASK, one, 600)
    store.write_answers(TASK, {"a": {"action": "decline"}}, holder=one)
    with pytest.raises(mt.StoreError):
        store.write_answers(TASK, {"b": {"action": "accept"}}, holder=two)  # another's lease
    with pytest.raises(mt.StoreError):
        store.acknowledge(TASK, ["a"], holder=two)
    assert store.unacknowledged(TASK) == {"a": {"action": "decline"}}  # neither written
    assert store.acquire(TASK, one, -1)  # it expires
    with pytest.raises(mt.StoreError):
        store.write_answers(TASK, {"b": {"action": "accept"}}, holder=one)
    assert store.acquire(TASK, two, 600)  # taken over
    with pytest.raises(mt.StoreError):
        store.acknowledge(TASK, ["a"], holder=one)
    assert store.unacknowledged(TASK) == {"a": {"action": "decline"}}
    store.acknowledge(TASK, ["a"], holder=two)
    store.write_answers(TASK, {"c": {"action": "cancel"}})  # no holder named: not fenced
    assert store.unacknowledged(TASK) == {"c": {"action": "cancel"}}
    store.release(TASK, two)
    with pytest.raises(mt.StoreError):
        store.acknowledge(TASK, ["c"], holder=two)


def test_claimers_in_threads_never_get_the_same_task(store: mt.TaskStore) -> None:
    for n in range(60):
        store.record(ref(f"task-{n:02}", float(n)))
    got: dict[str, list[str]] = {}

    def claimer(holder: str) -> None:
        mine = got.setdefault(holder, [])
        while batch := store.claim(holder, 600, 3):
            mine.extend(r.task_id for r in batch)

    holders = [new_holder() for _ in range(6)]
    threads = [threading.Thread(target=claimer, args=(h,), name=f"mcp_tasks-test-{h[-4:]}") for h in holders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    claimed = [task_id for holder in holders for task_id in got[holder]]
    assert sorted(claimed) == [f"task-{n:02}" for n in range(60)]  # each exactly once
    assert all(got[h] == sorted(got[h]) for h in holders)  # oldest first, in each claimer's turn
    for holder in holders:
        assert all(not store.acquire(t, new_holder(), 600) for t in got[holder])


def test_many_threads_share_a_store(store: mt.TaskStore) -> None:
    def work(n: int) -> None:
        for i in range(20):
            task_id = f"t{n}-{i}"
            store.record(ref(task_id))
            store.update(task_id, working(task_id))

    threads = [threading.Thread(target=work, args=(n,), name=f"mcp_tasks-test-{n}") for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(store.unfinished()) == 80


# -- SQLite only -----------------------------------------------------------------------------------


def test_the_default_file_is_owner_only_in_the_data_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MCP_TASKS_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setattr(sys, "platform", "linux")
    if os.name == "nt":
        pytest.skip("POSIX modes")
    store = mt.SqliteTaskStore()
    assert store.path == tmp_path / "data" / "mcp_tasks" / "tasks.sqlite3"
    assert store.path.stat().st_mode & 0o777 == 0o600
    assert store.path.parent.stat().st_mode & 0o777 == 0o700
    monkeypatch.setenv("MCP_TASKS_STORE", str(tmp_path / "named.db"))
    assert mt.SqliteTaskStore().path == tmp_path / "named.db"


def test_a_file_that_is_no_store_is_named_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    content = b"these are my notes, not a database\n" * 200
    path.write_bytes(content)
    with pytest.raises(mt.StoreError, match=r"notes\.txt.*not a task store"):
        mt.SqliteTaskStore(path)
    assert path.read_bytes() == content


@pytest.mark.parametrize("version", [0, 1])
def test_another_programs_sqlite_file_is_named_and_left_exactly_as_it_was(tmp_path: Path, version: int) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT)")  # a to-do app's "tasks"
        db.execute("CREATE TABLE notes (body TEXT)")
        db.execute("INSERT INTO tasks (title) VALUES ('buy milk')")
        db.execute(f"PRAGMA user_version={version}")
    db.close()
    before = path.read_bytes()
    with pytest.raises(
        mt.StoreError, match=r"app\.db is not a task store \(it holds the tables notes, tasks.*left as it is"
    ):
        mt.SqliteTaskStore(path)
    assert path.read_bytes() == before  # not switched to WAL, no table added
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    db.close()


def test_an_empty_sqlite_file_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()
    store = mt.SqliteTaskStore(path)
    store.record(ref())
    assert mt.SqliteTaskStore(path).get(TASK) == ref()


def test_a_store_made_by_a_newer_version_is_named(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    mt.SqliteTaskStore(path).record(ref())
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version=7")
    with pytest.raises(mt.StoreError, match=r"tasks.sqlite3 was made by a newer mcp_tasks \(schema 7"):
        mt.SqliteTaskStore(path)


def test_a_record_from_a_newer_version_is_named_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    store = mt.SqliteTaskStore(path)
    store.record(ref())
    newer = json.dumps({**json.loads(ref().to_json()), "format": 2})
    with sqlite3.connect(path) as db:
        db.execute("UPDATE tasks SET ref = ?", (newer,))
    with pytest.raises(mt.StoreError, match=r"tasks.sqlite3 has a record it cannot read.*newer mcp_tasks"):
        store.unfinished()
    with pytest.raises(mt.StoreError):
        store.update(TASK, working())
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT ref FROM tasks").fetchone()[0] == newer  # not lost


def test_a_store_that_cannot_be_written_is_named(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    mt.SqliteTaskStore(path).record(ref())
    os.chmod(path, 0o400)
    os.chmod(tmp_path, 0o500)
    try:
        if os.access(path, os.W_OK):
            pytest.skip("this user writes read-only files (root)")
        with pytest.raises(mt.StoreError, match=r"tasks\.sqlite3.*cannot be written"):
            mt.SqliteTaskStore(path)
    finally:
        os.chmod(tmp_path, 0o700)
        os.chmod(path, 0o600)
    assert mt.SqliteTaskStore(path).get(TASK) == ref()


def test_a_store_on_a_read_only_disk_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "tasks.sqlite3"
    mt.SqliteTaskStore(path).record(ref())
    connect = sqlite3.connect

    def read_only(database: str, **options: Any) -> sqlite3.Connection:  # as a read-only mount opens it
        opened: sqlite3.Connection = connect(f"file:{database}?mode=ro", uri=True, **options)
        return opened

    monkeypatch.setattr(sqlite3, "connect", read_only)
    with pytest.raises(mt.StoreError, match=r"tasks\.sqlite3.*cannot be written"):
        mt.SqliteTaskStore(path)
    monkeypatch.undo()
    assert mt.SqliteTaskStore(path).get(TASK) == ref()  # nothing lost


def test_a_folder_that_cannot_be_made_is_named(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(mt.StoreError, match="cannot create the task store"):
        mt.SqliteTaskStore(tmp_path / "file" / "tasks.sqlite3")


def test_old_finished_tasks_are_pruned(tmp_path: Path) -> None:
    store = mt.SqliteTaskStore(tmp_path / "tasks.sqlite3", keep_finished=1e-6)
    store.record(ref("done"))
    store.update("done", working("done", mt.TaskState.COMPLETED))
    store.write_answers("done", {"a": {"x": 1}})
    store.record(ref("running"))
    for n in range(64):  # pruning runs now and then, not on every write
        store.record(ref(f"more-{n}"))
    assert store.get("done") is None and store.unacknowledged("done") == {}
    assert store.get("running") is not None


WORKER = """
import sys
import mcp_tasks as mt
store = mt.SqliteTaskStore(sys.argv[1], busy_timeout=120)
n = sys.argv[2]
for i in range(50):
    task_id = f"p{n}-{i}"
    store.record(mt.TaskRef("http://127.0.0.1:9/mcp", task_id, tool="t"))
    store.update(task_id, mt.Status(task_id=task_id, status=mt.TaskState.WORKING))
    store.write_answers(task_id, {"k": {"n": i}})
    store.acknowledge(task_id, ["k"])
"""


def test_eight_processes_share_one_file(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    mt.SqliteTaskStore(path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(path), str(n)], env=env, stderr=subprocess.PIPE, text=True)
        for n in range(8)
    ]
    errors = [worker.communicate()[1] for worker in workers]
    assert [w.returncode for w in workers] == [0] * 8, errors
    assert not any("locked" in e for e in errors)
    refs = mt.SqliteTaskStore(path).unfinished()
    assert sorted(r.task_id for r in refs) == sorted(f"p{n}-{i}" for n in range(8) for i in range(50))
    assert all(r.last_status is not None for r in refs)


CLAIMER = """
import json, sys
import mcp_tasks as mt
from mcp_tasks._store import new_holder
store = mt.open_store(sys.argv[1])
holder, got = new_holder(), []
print("ready", flush=True)
sys.stdin.readline()  # all start together
while batch := store.claim(holder, 600, 4):
    got.extend(ref.task_id for ref in batch)
print(json.dumps(got), flush=True)
sys.stdin.readline()  # alive until all are done: a gone claimer's leases are free to the others
store.close()
"""


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_claimers_in_four_processes_never_get_the_same_task(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    path = str(tmp_path / "tasks.sqlite3") if kind == "sqlite" else request.getfixturevalue("pg_url")
    with mt.open_store(path) as store:
        for n in range(200):
            store.record(ref(f"task-{n:03}", float(n)))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, str(path)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for worker in workers:
        assert worker.stdout is not None and worker.stdout.readline() == "ready\n"
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.flush()
    claimed = []
    for worker in workers:
        assert worker.stdout is not None
        claimed.append(json.loads(worker.stdout.readline()))
    for worker in workers:
        worker.communicate("bye\n")
    assert [w.returncode for w in workers] == [0] * 4
    assert sorted(t for got in claimed for t in got) == [f"task-{n:03}" for n in range(200)]


def contract_tests() -> list[Callable[[mt.TaskStore], None]]:
    """The contract tests, for a third store: call each with a fresh store."""
    return [
        test_record_get_update_and_forget,
        test_unfinished_lists_the_running_oldest_first,
        test_a_task_the_server_forgot_is_kept_as_gone_and_not_unfinished,
        test_the_ledger_keeps_answers_until_acknowledged,
        test_a_lease_has_one_holder_until_released_or_expired,
        test_a_lease_of_a_process_that_is_gone_is_free_at_once,
        test_claim_takes_free_unfinished_tasks_oldest_first,
        test_fenced_writes_are_refused_once_the_lease_is_lost,
        test_claimers_in_threads_never_get_the_same_task,
        test_many_threads_share_a_store,
    ]


# -- the lease renewer -----------------------------------------------------------------------------


def renewers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "mcp_tasks-lease-renewer"]


class Renewals(MemoryTaskStore):
    """A memory store that signals each renewal."""

    def __init__(self) -> None:
        super().__init__()
        self.renewed = threading.Semaphore(0)

    def renew(self, task_id: str, holder: str, ttl: float) -> bool:
        kept = super().renew(task_id, holder, ttl)
        self.renewed.release()
        return kept


def test_one_renewer_per_store_keeps_leases_until_the_last_is_let_go() -> None:
    store = Renewals()
    holders = [new_holder(), new_holder()]
    leases = []
    for n, holder in enumerate(holders):
        assert store.acquire(f"t-{n}", holder, 1.0)
        leases.append(hold(store, f"t-{n}", holder, 1.0))
    assert len(renewers()) == 1  # one thread for the store, not one per lease
    for _ in range(6):  # about three rounds of both, a third of the ttl apart: a whole ttl
        assert store.renewed.acquire(timeout=30)
    assert not store.acquire("t-0", new_holder(), 1.0) and not store.acquire("t-1", new_holder(), 1.0)
    let_go(leases[0])
    assert len(renewers()) == 1 and not leases[1].lost
    let_go(leases[1])
    assert renewers() == []  # joined with the last lease


def test_a_lease_another_holder_took_is_marked_lost() -> None:
    store = Renewals()
    holder, other = new_holder(), new_holder()
    assert store.acquire(TASK, holder, 1.0)
    lease = hold(store, TASK, holder, 1.0)
    try:
        store.release(TASK, holder)  # as if it lapsed while the machine slept
        assert store.acquire(TASK, other, 600)
        while not lease.lost:
            assert store.renewed.acquire(timeout=30)
    finally:
        let_go(lease)
    assert renewers() == []


# -- whether a holder's process is gone ------------------------------------------------------------


def test_a_holder_names_its_namespace_and_start_time() -> None:
    import mcp_tasks._store._holder as holder_module

    machine, namespace, process, wait = new_holder().split("/")
    pid, start = process.split("-")
    assert machine == holder_module.machine_id() and int(pid) == os.getpid() and start.isdigit() and wait
    assert namespace == (os.readlink("/proc/self/ns/pid")[5:-1] if sys.platform == "linux" else "-")
    parent = f"{machine}/{namespace}/{os.getppid()}"
    parent_start = holder_module._started(os.getppid())
    if sys.platform == "linux":
        assert parent_start and not holder_gone(f"{parent}-{parent_start}/abc")
        assert holder_gone(f"{parent}-{int(parent_start) + 1}/abc")  # the pid, used again by a later process
        assert holder_gone(f"{machine}/{namespace}/{pid}-{int(start) + 1}/abc")  # this pid, an earlier process
    assert not holder_gone(f"{machine}/1{namespace}/{os.getppid()}-1/abc")  # another namespace: never known
    assert not holder_gone(f"{machine}/{namespace}/999999999-1/abc".replace(namespace, "4026531999"))
    assert not holder_gone(f"{machine}/{os.getppid()}/abc")  # an older mcp_tasks' holder: its ttl decides
    assert not holder_gone(f"{machine}/{namespace}/x-1/abc") and not holder_gone("")


IN_ANOTHER_NAMESPACE = """
import sys
import mcp_tasks as mt
from mcp_tasks._store import new_holder
store = mt.SqliteTaskStore(sys.argv[1])
print(new_holder(), store.acquire(sys.argv[2], new_holder(), 15), store.claim(new_holder(), 15, 10) == [], flush=True)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="Linux PID namespaces")
def test_a_process_in_another_pid_namespace_does_not_take_a_live_lease(tmp_path: Path) -> None:
    """Two containers sharing one store file: the other one sees none of this one's pids."""
    path = tmp_path / "tasks.sqlite3"
    store = mt.SqliteTaskStore(path)
    store.record(ref())
    holder = new_holder()
    assert store.acquire(TASK, holder, 600)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    probe = subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare --pid is not allowed here: {probe.stderr.decode(errors='replace').strip()}")
    done = subprocess.run(
        ["unshare", "--pid", "--fork", sys.executable, "-c", IN_ANOTHER_NAMESPACE, str(path), TASK],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    theirs, took, claimed_none = done.stdout.split()
    assert theirs.split("/")[1] != holder.split("/")[1] and theirs.split("/")[2].startswith("1-")
    assert (took, claimed_none) == ("False", "True")
    assert not store.acquire(TASK, new_holder(), 600) and store.renew(TASK, holder, 600)


# -- whether a holder's process is gone, on Windows ------------------------------------------------


class FakeKernel32:
    """Windows' OpenProcess, GetExitCodeProcess and CloseHandle for one process state."""

    def __init__(self, *, error: int = 0, exit_code: int | None = None) -> None:
        self.error = error  # OpenProcess fails with it when there is no exit code
        self.exit_code = exit_code
        self.closed: list[int] = []

    def OpenProcess(self, access: int, inherit: bool, pid: int) -> int:
        assert access == 0x1000 and not inherit
        return 0 if self.exit_code is None else 42

    def GetExitCodeProcess(self, handle: int, code: Any) -> int:
        code._obj.value = self.exit_code
        return 1

    def CloseHandle(self, handle: int) -> int:
        self.closed.append(handle)
        return 1


@pytest.mark.parametrize(
    ("kernel32", "gone"),
    [
        (FakeKernel32(error=87), True),  # no process has the pid
        (FakeKernel32(error=5), False),  # access denied: it exists, another user's
        (FakeKernel32(exit_code=0), True),  # exited; a handle someone holds keeps it known
        (FakeKernel32(exit_code=259), False),  # STILL_ACTIVE
    ],
)
def test_on_windows_a_holder_process_is_asked_of_windows(
    monkeypatch: pytest.MonkeyPatch, kernel32: FakeKernel32, gone: bool
) -> None:
    import mcp_tasks._store._holder as holder_module

    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(holder_module, "_kernel32", lambda: (kernel32, lambda: kernel32.error))
    living = f"{holder_module.machine_id()}/{holder_module.pid_namespace()}/{os.getppid()}-0/abc"  # alive here
    assert holder_gone(living) is gone
    assert kernel32.closed == ([] if kernel32.exit_code is None else [42])


FORKED = """
import os, sys, time
import mcp_tasks as mt
from mcp_tasks._store import hold, let_go, new_holder

store = mt.SqliteTaskStore(sys.argv[1])
holder = new_holder()
store.acquire("parent", holder, 60)
lease = hold(store, "parent", holder, 60)  # a renewer thread in the parent
pid = os.fork()
if pid == 0:  # the child holds a lease of its own: a thread of the child's must renew it
    child = new_holder()
    store.acquire("child", child, 0.6)
    mine = hold(store, "child", child, 0.6)
    first, give_up = mine.renewed, time.monotonic() + 30
    while mine.renewed == first and time.monotonic() < give_up:
        time.sleep(0.01)  # polling for the renewal
    renewed = mine.renewed != first
    let_go(mine)
    os._exit(0 if renewed else 3)
_, status = os.waitpid(pid, 0)
let_go(lease)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_forked_child_renews_its_leases_with_a_thread_of_its_own(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", FORKED, str(tmp_path / "tasks.sqlite3")], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, (done.returncode, done.stderr)


@pytest.mark.parametrize("path", [":memory:", ""])
def test_a_store_that_would_not_outlive_the_process_is_refused(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``:memory:`` would be a new empty database per connection (and left a file of that name)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="outlives this process"):
        mt.SqliteTaskStore(path)
    assert list(tmp_path.iterdir()) == []


def test_acquire_many_takes_the_free_leases_as_acquire_would(store: mt.TaskStore) -> None:
    many: Any = store
    one, two = new_holder(), new_holder()
    assert store.acquire("held", two, 600) and store.acquire("expired", two, -1)
    assert store.acquire("gone", dead_holder(), 600) and store.acquire("mine", one, 600)
    wanted = ["free", "held", "expired", "gone", "mine", "free"]  # "free" twice: taken once
    assert many.acquire_many(wanted, one, 600) == {"free", "expired", "gone", "mine"}
    assert not store.acquire("free", two, 600) and not store.acquire("gone", two, 600)  # the new holder's
    assert store.renew("expired", one, 600) and store.renew("held", two, 600)  # and the live one kept its own
    assert many.acquire_many([], one, 600) == set()


def test_release_many_frees_the_leases_their_holders_hold(store: mt.TaskStore) -> None:
    many: Any = store
    one, two = new_holder(), new_holder()
    for task_id in ("t-1", "t-2"):
        assert store.acquire(task_id, one, 600)
    assert store.acquire("t-3", two, 600)
    many.release_many([("t-1", one), ("t-3", one), ("t-9", one)])  # t-3 is not one's: kept
    many.release_many([])
    assert store.acquire("t-1", two, 600)  # freed
    assert not store.acquire("t-2", two, 600) and not store.acquire("t-3", one, 600)


def test_finish_many_records_the_ends_settles_their_answers_and_frees_their_leases(store: mt.TaskStore) -> None:
    many: Any = store
    one, two = new_holder(), new_holder()
    for task_id in ("t-1", "t-2", "t-3"):
        store.record(ref(task_id).with_status(working(task_id)))
    store.write_answers("t-1", {"name": {"action": "accept"}})
    store.write_answers("t-3", {"name": {"action": "decline"}})
    assert store.acquire("t-1", one, 600) and store.acquire("t-2", two, 600)
    done, cancelled = working("t-1", mt.TaskState.COMPLETED), working("t-2", mt.TaskState.CANCELLED)
    completed = working("t-2", mt.TaskState.COMPLETED)
    many.finish_many([("t-1", done, one), ("t-2", completed, one), ("t-2", cancelled, None), ("t-9", done, None)])
    many.finish_many([])
    assert [r.task_id for r in store.unfinished()] == ["t-3"]  # t-9 was never kept: still not
    one_ref, two_ref = store.get("t-1"), store.get("t-2")
    assert one_ref is not None and one_ref.last_status == done and store.get("t-9") is None
    assert two_ref is not None and two_ref.last_status == cancelled  # one's end was fenced: not one's lease
    assert store.unacknowledged("t-1") == {} and store.unacknowledged("t-3") == {"name": {"action": "decline"}}
    assert store.acquire("t-1", two, 600)  # one's lease is free
    assert not store.acquire("t-2", one, 600)  # two's was not one's to free


def test_finish_many_refuses_an_end_that_is_not_one_and_writes_nothing(store: mt.TaskStore) -> None:
    many: Any = store
    for task_id in ("t-1", "t-2"):
        store.record(ref(task_id).with_status(working(task_id)))
    ends = [("t-1", working("t-1", mt.TaskState.COMPLETED), None), ("t-2", working("t-2"), None)]
    with pytest.raises(ValueError, match="its end needs a terminal status, not 'working'"):
        many.finish_many(ends)
    with pytest.raises(TypeError, match=r"\(task_id, Status, holder\) tuple, got \('str', 'dict', 'NoneType'\)"):
        many.finish_many([("t-1", {"status": "completed"}, None)])
    assert [r.task_id for r in store.unfinished()] == ["t-1", "t-2"]


# -- intents: calls recorded before they are sent (optional methods, here on all three) -------------

ENDPOINT = "http://127.0.0.1:9/mcp"


def intent(key: str = "order-7", created_at: float = 1000.0, endpoint: str = ENDPOINT) -> mt.Intent:
    return mt.Intent(endpoint, key, "export", "d" * 64, created_at)


def test_an_intent_is_kept_once_per_endpoint_and_key(store: Any) -> None:
    assert store.record_intent(intent()) is None
    again = store.record_intent(attrs.evolve(intent(), tool="other", created_at=2000.0))
    assert again == intent()  # the one kept, left as it was
    assert store.record_intent(intent(endpoint="http://127.0.0.1:9/other")) is None  # another endpoint's key
    assert store.get_intent(ENDPOINT, "order-7") == intent()
    assert store.get_intent(ENDPOINT, "nope") is None


def test_an_intent_never_joined_is_listed_as_started(store: Any) -> None:
    store.record_intent(intent("b", created_at=2000.0))
    store.record_intent(intent("a", created_at=1000.0))
    listed = store.unrecorded_intents()
    assert [entry.key for entry in listed] == ["a", "b"]  # oldest first
    assert not listed[0].recorded and "started, id never recorded" in repr(listed[0])
    assert store.unfinished() == []  # a task list of ids only


def test_a_task_id_joins_its_intent_with_its_ref(store: Any) -> None:
    store.record_intent(intent())
    store.join_intent(ENDPOINT, "order-7", ref=ref())
    assert store.unrecorded_intents() == []
    assert store.get_intent(ENDPOINT, "order-7").task_id == TASK
    assert store.get(TASK) == ref() and store.unfinished() == [ref()]


def test_an_immediate_result_joins_its_intent(store: Any) -> None:
    store.record_intent(intent())
    store.join_intent(ENDPOINT, "order-7", result={"content": [{"type": "text", "text": "ünï"}]})
    kept = store.get_intent(ENDPOINT, "order-7")
    assert kept.recorded and kept.task_id is None
    assert kept.result == {"content": [{"type": "text", "text": "ünï"}]}
    assert store.unrecorded_intents() == [] and store.unfinished() == []


def test_a_forgotten_intent_is_gone_and_its_key_free(store: Any) -> None:
    store.record_intent(intent())
    store.forget_intent(ENDPOINT, "order-7")
    assert store.get_intent(ENDPOINT, "order-7") is None and store.unrecorded_intents() == []
    assert store.record_intent(intent()) is None
