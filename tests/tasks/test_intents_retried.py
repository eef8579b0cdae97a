"""A join the store refused is retried while the client lives (issue 33, step 4: "retried like an
end"): the store goes down right after a call's intent is recorded, so its task id cannot join it;
once the store is back the id is written by the client's retry loop, with no further call and the
client still open, where before it waited for the next call or close() (and a process that died
meanwhile left "id never recorded" where the id was known). SQLite locked by another connection,
and a real PostgreSQL stopped and started again.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks.server import HttpServer, Server, serve_http
from tests.fixtures.servers import make_server
from tests.pg import running_cluster


class Served:
    """The reference server over HTTP, running `on_call` when a ``slow_compute`` call arrives: the
    client has recorded its intent by then, and not yet its task id.
    """

    def __init__(self) -> None:
        self.server: Server = make_server()
        self.http: HttpServer = serve_http(self.server)
        self.url = self.http.url
        self.on_call: Callable[[], None] = lambda: None

        def arrived(method: str, params: dict[str, Any]) -> None:
            if method == "tools/call" and params.get("name") == "slow_compute":
                self.on_call()

        self.server.on_request = arrived

    def release(self) -> None:
        with mt.Client.http(self.url) as plain:
            plain.call_tool("release", {"gate": "slow"})

    def close(self) -> None:
        self.http.close()
        self.server.close()


@pytest.fixture
def served() -> Iterator[Served]:
    server = Served()
    yield server
    server.close()


def _joined(store: mt.TaskStore, task_id: str) -> bool:
    try:
        unrecorded: Any = store
        return unrecorded.unrecorded_intents() == [] and [ref.task_id for ref in store.unfinished()] == [task_id]
    except mt.StoreError:  # a server just started again: its pool reconnects
        return False


def _until_joined(store: mt.TaskStore, task_id: str) -> None:
    """Poll the store until the call's id is recorded (pytest-timeout guards a hang)."""
    while not _joined(store, task_id):
        time.sleep(0.05)


def _refused(caplog: pytest.LogCaptureFixture) -> bool:
    return "could not record its id with its call" in caplog.text


@pytest.mark.timeout(60)
def test_a_join_refused_by_a_locked_sqlite_is_written_once_it_frees(
    served: Served, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = mt.SqliteTaskStore(tmp_path / "tasks.sqlite3", busy_timeout=0.3)
    locks: list[sqlite3.Connection] = []

    def lock() -> None:  # the intent is recorded: its join will be refused
        other = sqlite3.connect(str(store.path), isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")
        locks.append(other)

    served.on_call = lock
    try:
        with mt.Client.http(served.url, store=store) as client, caplog.at_level(logging.WARNING, "mcp_tasks"):
            task = mt.call_tool(client, "slow_compute", {"block": True})
            assert isinstance(task, mt.Status) and _refused(caplog)
            (other,) = locks
            other.execute("ROLLBACK")  # the store is free again
            _until_joined(store, task.task_id)  # by the client, while it lives: the test calls nothing
    finally:
        for other in locks:
            other.close()
    served.release()


@pytest.mark.timeout(120)
def test_a_join_refused_while_postgres_is_stopped_is_written_once_it_is_back(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    with running_cluster() as cluster:  # a cluster of this test's own, stopped and started
        store = mt.PostgresTaskStore(cluster.url(cluster.new_database()), busy_timeout=0.5, connect_timeout=1)
        served.on_call = cluster.stop  # the intent is recorded: its join will be refused
        try:
            with mt.Client.http(served.url, store=store) as client, caplog.at_level(logging.WARNING, "mcp_tasks"):
                task = mt.call_tool(client, "slow_compute", {"block": True}, timeout=30)
                assert isinstance(task, mt.Status) and _refused(caplog)
                cluster.resume()
                _until_joined(store, task.task_id)
        finally:
            store.close()
    served.release()
