"""`mt.adopt(store, forever=True)` and ``mcp-tasks adopt --forever``: a worker that claims while
it follows (a task orphaned meanwhile is adopted while a long one still runs), holds at most
`limit` tasks, rides out a store that does not answer (a SQLite file locked by another connection,
a PostgreSQL table locked by another session: real faults), and frees its leases when stopped
(SIGINT, SIGTERM on a real process). Against the reference server over HTTP.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import signal
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._store import new_holder
from tests.conftest import Background, eventually
from tests.memory_store import MemoryTaskStore
from tests.processes import python
from tests.tasks.test_adopt import Reference, started

TTL = 1.0
"""The lease time of the stores here: an orphan's lease lapses a second after its owner stopped."""

Store = Any  # a SqliteTaskStore or a PostgresTaskStore
Outage = Callable[[], contextlib.AbstractContextManager[None]]


class Quick(Reference):
    """The reference server, with ``quick`` too: a task that completes at once."""

    def __init__(self) -> None:
        super().__init__()
        self.server.add_tool(lambda ctx: {"quick": True}, name="quick", task="required")


@pytest.fixture
def reference() -> Iterator[Quick]:
    with Quick() as served:
        yield served


@pytest.fixture(params=["sqlite", "postgres"])
def faulty(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Outage]]:
    """A store of short leases, and how to make it stop answering: its file locked by another
    connection (SQLite), its leases table locked by another session (PostgreSQL).
    """
    if request.param == "sqlite":
        path = tmp_path / "tasks.sqlite3"

        @contextlib.contextmanager
        def locked_file() -> Iterator[None]:
            other = sqlite3.connect(path, isolation_level=None)
            other.execute("BEGIN EXCLUSIVE")
            try:
                yield
            finally:
                other.execute("ROLLBACK")
                other.close()

        with mt.SqliteTaskStore(path, lease_ttl=TTL) as sqlite_store:
            yield sqlite_store, locked_file
        return
    psycopg = pytest.importorskip("psycopg")
    url = request.getfixturevalue("pg_url")

    @contextlib.contextmanager
    def locked_table() -> Iterator[None]:
        with psycopg.connect(url) as other:
            other.execute("LOCK TABLE mcp_tasks.leases IN ACCESS EXCLUSIVE MODE")
            yield
            other.rollback()

    with mt.PostgresTaskStore(url, lease_ttl=TTL) as pg_store:
        yield pg_store, locked_table


class Worker:
    """``adopt(forever=True)`` iterated in a thread of the test's: each future on `futures` as it
    comes; it stops (closing the generator) after `count` of them, or at a timeout that only a
    failing test reaches.
    """

    def __init__(self, store: mt.TaskStore, count: int, **options: Any) -> None:
        self.futures: queue.Queue[mt.TaskFuture] = queue.Queue()
        self.count = count
        self.run = Background(lambda: self._run(store, options))

    def _run(self, store: mt.TaskStore, options: dict[str, Any]) -> list[mt.TaskFuture]:
        got: list[mt.TaskFuture] = []
        for future in mt.adopt(store, forever=True, poll_interval=0.02, timeout=120, **options):
            got.append(future)
            self.futures.put(future)
            if len(got) == self.count:
                break
        return got

    def next(self) -> mt.TaskFuture:
        return self.futures.get(timeout=60)


class Said(logging.Handler):
    """The mcp_tasks log's messages, and an event per wanted phrase, set when a message has it."""

    def __init__(self, *phrases: str) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[tuple[int, str]] = []
        self.heard = {phrase: threading.Event() for phrase in phrases}

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.messages.append((record.levelno, message))
        for phrase, event in self.heard.items():
            if phrase in message:
                event.set()

    def count(self, phrase: str, level: int) -> int:
        return sum(1 for levelno, message in self.messages if phrase in message and levelno == level)


@contextlib.contextmanager
def listening(*phrases: str) -> Iterator[Said]:
    said = Said(*phrases)
    logger = logging.getLogger("mcp_tasks")
    level = logger.level
    logger.addHandler(said)
    logger.setLevel(logging.DEBUG)
    try:
        yield said
    finally:
        logger.removeHandler(said)
        logger.setLevel(level)


def test_a_forever_worker_claims_a_new_orphan_while_it_follows_a_long_task(
    reference: Quick, faulty: tuple[Store, Outage]
) -> None:
    store, _ = faulty
    (long,) = started(reference.url, store, "job", 1)  # runs until the test opens the gate
    (orphan,) = started(reference.url, store, "quick", 1)
    assert store.acquire(orphan, new_holder(), TTL)  # its wait, then its owner stops renewing it
    worker = Worker(store, 2)
    first = worker.next()  # its lease lapsed while the worker followed the long task
    assert first.task_id == orphan and first.result()["structuredContent"] == {"quick": True}
    assert [ref.task_id for ref in store.unfinished()] == [long] and not reference.gate.is_set()
    reference.gate.set()
    second = worker.next()
    assert second.task_id == long and second.result()["structuredContent"] == {"n": 0}
    assert [f.task_id for f in worker.run.result()] == [orphan, long] and store.unfinished() == []


class HeldAtClaims(MemoryTaskStore):
    """A memory store noting, at each claim, how many leases its claimer held and how many it asked for."""

    def __init__(self) -> None:
        super().__init__(lease_ttl=TTL)
        self.claims: list[tuple[int, int]] = []

    def claim(self, holder: str, ttl: float, limit: int) -> list[mt.TaskRef]:
        with self._lock:
            held = sum(1 for owner, _ in self._leases.values() if owner == holder)
        self.claims.append((held, limit))
        return super().claim(holder, ttl, limit)


def test_a_forever_worker_holds_at_most_its_limit(reference: Quick) -> None:
    store = HeldAtClaims()
    ids = started(reference.url, store, "job", 3)
    worker = Worker(store, 3, limit=2)
    eventually(lambda: set(store._leases) == set(ids[:2]), 60, "the two oldest claimed")
    with mt.Client.http(reference.url) as client:  # one ends: room for one
        mt.cancel_task(client, ids[0])
    first = worker.next()
    assert first.task_id == ids[0] and isinstance(first.exception(), mt.TaskCancelled)
    eventually(lambda: set(store._leases) == set(ids[1:]), 60, "the third claimed in its place")
    assert (1, 1) in store.claims  # one held: one asked for
    reference.gate.set()
    assert {worker.next().task_id for _ in range(2)} == set(ids[1:])
    worker.run.result()
    assert store.claims[0] == (0, 2) and all(held + asked <= 2 for held, asked in store.claims), store.claims


def test_a_forever_worker_rides_out_a_store_outage_and_claims_after_it(
    reference: Quick, faulty: tuple[Store, Outage]
) -> None:
    store, outage = faulty
    (orphan,) = started(reference.url, store, "quick", 1)
    other = new_holder()
    assert store.acquire(orphan, other, 600)  # a live wait holds it until the outage is over
    with listening("the store still does not answer", "the store answers again") as said:
        worker = Worker(store, 1)
        with outage():
            assert said.heard["the store still does not answer"].wait(60)  # two claims failed, at least
        store.release(orphan, other)  # its wait ends: an orphan, to claim after the outage
        (future,) = [worker.next()]
        assert future.task_id == orphan and future.result()["structuredContent"] == {"quick": True}
        worker.run.result()  # nothing was raised
        assert said.heard["the store answers again"].is_set()
    assert said.count("the store did not answer", logging.WARNING) == 1  # said once per outage
    assert said.count("the store answers again", logging.WARNING) == 1
    assert store.unfinished() == []


def lease_holder(path: Path, task_id: str) -> str | None:
    """Who holds `task_id`'s lease in the SQLite file, read as it is (not as a store reads it: a
    holder whose process is gone counts as no holder there)."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        row = db.execute("SELECT holder FROM leases WHERE task_id = ?", (task_id,)).fetchone()
    return None if row is None else str(row[0])


@pytest.mark.parametrize("when", ["claimed", "following"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_stopping_the_command_line_worker_frees_its_leases(
    reference: Quick, tmp_path: Path, signum: int, when: str
) -> None:
    path = tmp_path / "tasks.sqlite3"
    store = mt.SqliteTaskStore(path)
    (task_id,) = started(reference.url, store, "job", 1)  # runs until the test ends
    starter = lease_holder(path, task_id)  # None, unless its close could not free it in time (load)
    asked = threading.Event()  # the worker asks the server about it: it follows it
    reference.server.on_request = lambda method, params: asked.set() if method.startswith("tasks/") else None
    script = "import sys; from mcp_tasks import cli; sys.exit(cli.main())"
    worker = python(script, "adopt", "--store", str(path), "--forever")

    def claimed() -> bool:
        assert worker.poll() is None, worker.communicate()  # still running
        return lease_holder(path, task_id) not in (None, starter)  # the worker's (after the ttl, if kept)

    eventually(claimed, 60, "the worker's claim")  # its lease is taken: stopped at once, or once it follows
    assert when == "claimed" or asked.wait(60)
    worker.send_signal(signum)
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert lease_holder(path, task_id) is None  # freed as it stopped: another worker takes it at once
    assert "stopped; the tasks still running were freed for another worker" in err and "Traceback" not in err
    assert out == "" and [ref.task_id for ref in store.unfinished()] == [task_id]
    store.close()
