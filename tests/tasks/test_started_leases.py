"""A task a client starts is recorded together with its starter's lease (one transaction), so an
adopter claiming between the record and the wait's first lease take finds nothing to claim: it
would follow the task too, and both would deliver its outcome (issue 33). SQLite, PostgreSQL and
the tests' memory store; a store of one's own without the keyword keeps working, and says so.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from tests.foreign.listen_tasks import ListenTasksServer
from tests.memory_store import MemoryTaskStore

ADOPTER = "elsewhere/0/1-1"  # another machine's adopter


class Adopted:
    """Makes `store` an adopter's too: just before the client's wait takes a lease (the moment
    the old code left a task recorded and unleased), an adopter claims what it can.
    """

    def __init__(self, store: mt.TaskStore) -> None:
        self.claimed: list[str] = []
        self.tried = threading.Event()
        self.inner_acquire = store.acquire
        self.inner_many = getattr(store, "acquire_many", None)
        self.store = store
        store.acquire = self.acquire  # type: ignore[method-assign]
        if self.inner_many is not None:
            store.acquire_many = self.acquire_many  # type: ignore[attr-defined]

    def _adopt(self) -> None:
        self.tried.set()
        self.claimed += [ref.task_id for ref in self.store.claim(ADOPTER, 60, 10)]

    def acquire(self, task_id: str, holder: str, ttl: float) -> bool:
        self._adopt()
        return self.inner_acquire(task_id, holder, ttl)

    def acquire_many(self, task_ids: Iterable[str], holder: str, ttl: float) -> set[str]:
        self._adopt()
        assert self.inner_many is not None
        return set(self.inner_many(task_ids, holder, ttl))


@pytest.fixture
def foreign() -> Iterator[ListenTasksServer]:
    server = ListenTasksServer(complete_on_listen=1000, poll_ms=20)
    server.start()
    yield server
    server.close()


@pytest.fixture(params=["sqlite", "postgres", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> mt.TaskStore:
    if request.param == "sqlite":
        return mt.SqliteTaskStore(tmp_path / "tasks.db")
    if request.param == "postgres":
        made: mt.TaskStore = request.getfixturevalue("pg_store")
        return made
    return MemoryTaskStore()


@pytest.mark.parametrize("count", [1, 3])
def test_an_adopter_claiming_before_the_wait_takes_its_lease_gets_nothing(
    foreign: ListenTasksServer, store: mt.TaskStore, count: int
) -> None:
    adopted = Adopted(store)
    with mt.Client.http(foreign.url, store=store) as client:
        futures = [mt.submit(client, "job") for _ in range(count)]
        assert adopted.tried.wait(30)  # the leases are being taken: the adopter has claimed by now
        client.call_tool("finish")
        for future in futures:
            future.result(timeout=60)
    assert adopted.claimed == []  # the old code: every task, claimed by the adopter too
    assert store.unfinished() == []


def test_a_wait_on_a_task_started_here_takes_the_lease_its_record_came_with(
    foreign: ListenTasksServer, store: mt.TaskStore
) -> None:
    adopted = Adopted(store)
    with mt.Client.http(foreign.url, store=store) as client:
        task = mt.call_tool(client, "job")
        assert isinstance(task, mt.Status)
        client.call_tool("finish")
        assert mt.wait_task(client, task, timeout=60).terminal
    assert adopted.claimed == []


class Plain(MemoryTaskStore):
    """A store of one's own whose ``record`` and ``join_intent`` take no holder."""

    def record(self, ref: mt.TaskRef) -> None:  # type: ignore[override]
        super().record(ref)

    def join_intent(  # type: ignore[override]
        self, endpoint: str, key: str, *, ref: mt.TaskRef | None = None, result: dict[str, Any] | None = None
    ) -> None:
        super().join_intent(endpoint, key, ref=ref, result=result)


def test_a_store_without_the_keyword_keeps_working_and_says_so_once(
    foreign: ListenTasksServer, caplog: pytest.LogCaptureFixture
) -> None:
    store = Plain()
    with caplog.at_level(logging.WARNING, "mcp_tasks"), mt.Client.http(foreign.url, store=store) as client:
        futures = [mt.submit(client, "job") for _ in range(2)]
        client.call_tool("finish")
        for future in futures:
            assert future.result(timeout=60) is not None
    said = [r for r in caplog.records if "takes no holder=" in r.getMessage()]
    assert len(said) == 1 and store.unfinished() == []


def test_a_task_started_and_never_waited_on_is_free_to_adopt_once_its_client_closes(
    foreign: ListenTasksServer, store: mt.TaskStore
) -> None:
    with mt.Client.http(foreign.url, store=store) as client:
        task = mt.call_tool(client, "job")
        assert isinstance(task, mt.Status)
        assert store.claim(ADOPTER, 60, 10) == []  # its starter's for now
    assert [ref.task_id for ref in store.claim(ADOPTER, 60, 10)] == [task.task_id]
