"""No end is forgotten: a task's end the store could not record (SQLite locked by another
connection, PostgreSQL stopped) stays with the client, its lease kept, and is recorded once the
store is back, with no further call: a later `adopt` then finds nothing to deliver again. A
client closed on a store still dead returns, says what it could not record, and leaves no thread.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import mcp_tasks as mt
from tests.conftest import mcp_threads
from tests.pg import running_cluster
from tests.processes import GatedJobs as Jobs

COUNT = 3


@pytest.fixture
def jobs() -> Iterator[Jobs]:
    with Jobs() as served:
        yield served


def _lock(store: mt.SqliteTaskStore) -> sqlite3.Connection:
    other = sqlite3.connect(str(store.path), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


def _finished(store: mt.TaskStore, task_id: str) -> bool:
    try:
        kept = store.get(task_id)
    except mt.StoreError:  # a server just started again: its pool reconnects
        return False
    return kept is not None and kept.finished


def _until_recorded(store: mt.TaskStore, ids: list[str]) -> None:
    """Poll the store until every end is recorded (pytest-timeout guards a hang)."""
    while not all(_finished(store, task_id) for task_id in ids):
        time.sleep(0.05)


def _submitted(client: mt.Client) -> list[mt.TaskFuture]:
    futures = [mt.submit(client, "job", {"n": n}) for n in range(COUNT)]
    assert all(future.task_id for future in futures)
    return futures


@pytest.mark.timeout(90)
def test_ends_on_a_locked_sqlite_are_recorded_once_it_frees(jobs: Jobs, tmp_path: Path) -> None:
    store = mt.SqliteTaskStore(tmp_path / "tasks.sqlite3", busy_timeout=0.3)
    with mt.Client.http(jobs.url, store=store) as client:
        futures = _submitted(client)
        ids = [future.task_id or "" for future in futures]
        other = _lock(store)
        try:
            jobs.gate.set()  # every task ends while the store is locked
            assert [future.result(timeout=60)["structuredContent"] for future in futures] == [
                {"n": n} for n in range(COUNT)
            ]
            assert not any(_finished(store, task_id) for task_id in ids)  # none could be recorded
        finally:
            other.execute("ROLLBACK")
            other.close()
        _until_recorded(store, ids)  # by the client, while it lives: the test calls nothing
    assert list(mt.adopt(store, timeout=5)) == []  # none is delivered twice


@pytest.mark.timeout(120)
def test_ends_while_postgres_is_stopped_are_recorded_once_it_is_back(jobs: Jobs) -> None:
    with running_cluster() as cluster:  # a cluster of this test's own, stopped and started
        store = mt.PostgresTaskStore(cluster.url(cluster.new_database()), busy_timeout=0.5)
        try:
            with mt.Client.http(jobs.url, store=store) as client:
                futures = _submitted(client)
                ids = [future.task_id or "" for future in futures]
                cluster.stop()
                try:
                    jobs.gate.set()
                    for future in futures:
                        future.result(timeout=60)
                finally:
                    cluster.resume()
                _until_recorded(store, ids)
            assert list(mt.adopt(store, timeout=5)) == []
        finally:
            store.close()


@pytest.mark.timeout(90)
def test_an_end_pending_at_close_is_tried_once_more(jobs: Jobs, tmp_path: Path) -> None:
    store = mt.SqliteTaskStore(tmp_path / "tasks.sqlite3", busy_timeout=0.3)
    client = mt.Client.http(jobs.url, store=store)
    with client:
        (future,) = [mt.submit(client, "job", {"n": 0})]
        other = _lock(store)
        try:
            jobs.gate.set()
            future.result(timeout=60)
        finally:
            other.execute("ROLLBACK")
            other.close()
    # closed as soon as the store freed: recorded by the thread or, at the latest, by close()
    assert _finished(store, future.task_id or "")
    assert list(mt.adopt(store, timeout=5)) == []


@pytest.mark.timeout(90)
def test_close_with_ends_pending_on_a_dead_store_returns_and_says_so(
    jobs: Jobs, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = mt.SqliteTaskStore(tmp_path / "tasks.sqlite3", busy_timeout=0.3)
    client = mt.Client.http(jobs.url, store=store)
    futures = _submitted(client)
    other = _lock(store)
    try:
        jobs.gate.set()
        for future in futures:
            future.result(timeout=60)
        with caplog.at_level(logging.WARNING, logger="mcp_tasks"):
            client.close()  # returns (within its bound: no timing asserted here)
        assert not {"mcp_tasks-kept", "mcp_tasks-lease-renewer"} & set(mcp_threads())  # the server's run on
    finally:
        other.execute("ROLLBACK")
        other.close()
    said = [record.getMessage() for record in caplog.records]
    assert any(f"could not record the end of {COUNT} task(s) before closing" in text for text in said)
    assert not any(_finished(store, future.task_id or "") for future in futures)
