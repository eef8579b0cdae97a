"""Every wait on a store-backed client takes its task's lease when it is free, before its first
read, and keeps it renewed while it waits (not only a wait that answers input); a wait that
cannot take it reads and answers nothing. The renewer is one named daemon thread per client, that
ends with the client's closing signal and is joined by its close. Against the socket-level
servers of tests/foreign/.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._store import new_holder, store_bound
from mcp_tasks._store._bound import STATUS_BUDGET
from tests.conftest import Background, lease_elsewhere
from tests.foreign.listen_tasks import ListenTasksServer
from tests.foreign.modern_http_tasks import ModernHttpTasksServer
from tests.memory_store import MemoryTaskStore


class Watched(MemoryTaskStore):
    """A memory store with a short lease that signals each lease taken, refused and renewed."""

    def __init__(self, lease_ttl: float = 15.0) -> None:
        super().__init__()
        self.lease_ttl = lease_ttl
        self.taken = threading.Event()
        self.refused = threading.Event()
        self.renewed = threading.Semaphore(0)

    def acquire(self, task_id: str, holder: str, ttl: float) -> bool:
        taken = super().acquire(task_id, holder, ttl)
        (self.taken if taken else self.refused).set()
        return taken

    def renew(self, task_id: str, holder: str, ttl: float) -> bool:
        kept = super().renew(task_id, holder, ttl)
        self.renewed.release()
        return kept


def renewers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "mcp_tasks-lease-renewer"]


@pytest.fixture
def listen() -> Iterator[ListenTasksServer]:
    server = ListenTasksServer(complete_on_listen=1000, poll_ms=20)
    server.start()
    yield server
    server.close()


@pytest.fixture
def foreign() -> Iterator[ModernHttpTasksServer]:
    server = ModernHttpTasksServer()
    server.start()
    yield server
    server.close()


def test_a_wait_without_input_takes_the_lease_renews_it_and_frees_it(listen: ListenTasksServer) -> None:
    store = Watched(lease_ttl=0.3)
    with mt.Client.http(listen.url, store=store) as client:
        task = mt.call_tool(client, "job")
        assert isinstance(task, mt.Status)
        waiting = Background(lambda: mt.wait_task(client, task, timeout=60))
        assert store.taken.wait(30)
        for _ in range(3):  # a whole ttl and more: renewed a third of a ttl before it would lapse
            assert store.renewed.acquire(timeout=30)
        assert not store.acquire(task.task_id, new_holder(), 15)  # still its, so nobody else's
        (thread,) = renewers()
        assert thread.daemon
        client.call_tool("finish")
        assert waiting.result().status is mt.TaskState.COMPLETED
    assert store._leases == {} and renewers() == []  # released at the wait's end, the thread joined


def test_a_wait_that_cannot_take_the_lease_reads_and_does_not_answer(foreign: ModernHttpTasksServer) -> None:
    store = Watched()
    asked: list[dict[str, Any]] = []
    handlers = mt.InputHandlers(form=lambda params: asked.append(params) or {"action": "accept", "content": {}})
    with mt.Client.http(foreign.url, store=store, input_handlers=handlers) as client:
        task = mt.call_tool(client, "ask")
        assert isinstance(task, mt.Status)
        other = new_holder()
        assert lease_elsewhere(client, store, task.task_id, other)  # another machine's wait holds it
        with pytest.raises(mt.TaskTimeout):
            mt.wait_task(client, task, timeout=0.5, poll_interval=0.02)
    assert store.refused.is_set() and asked == [] and foreign.updates == []
    assert store._leases[task.task_id][0] == other  # left as it was


def test_a_wait_that_cannot_take_the_lease_records_no_status(listen: ListenTasksServer) -> None:
    store = Watched()
    with mt.Client.http(listen.url, store=store) as client:
        task = mt.call_tool(client, "job")
        assert isinstance(task, mt.Status)
        other = new_holder()
        assert lease_elsewhere(client, store, task.task_id, other)  # another machine's wait holds it: its statuses
        client.call_tool("finish")
        assert mt.wait_task(client, task, timeout=60).status is mt.TaskState.COMPLETED
        kept = store.get(task.task_id)
        assert kept is not None and kept.last_status == task and store.refused.is_set()  # as it was created
        store.release(task.task_id, other)  # that wait went: the next one to see the end records it
        assert mt.wait_task(client, task, timeout=60).status is mt.TaskState.COMPLETED
    assert store.unfinished() == [] and store._leases == {}


class Unfenced(MemoryTaskStore):
    """A store of one's own from before statuses were fenced: its update takes no holder."""

    def update(self, task_id: str, status: mt.Status) -> None:  # type: ignore[override]
        super().update(task_id, status)


def test_a_store_whose_update_takes_no_holder_still_records_and_is_said_once(
    listen: ListenTasksServer, caplog: pytest.LogCaptureFixture
) -> None:
    store: Any = Unfenced()  # not a TaskStore to a type checker: update takes no holder (as claim may be missing)
    with caplog.at_level("WARNING", logger="mcp_tasks"), mt.Client.http(listen.url, store=store) as client:
        tasks = [t for t in (mt.call_tool(client, "job") for _ in range(2)) if isinstance(t, mt.Status)]
        client.call_tool("finish")
        for task in tasks:
            assert mt.wait_task(client, task, timeout=60).status is mt.TaskState.COMPLETED
    said = [r.getMessage() for r in caplog.records if "holder=" in r.getMessage()]
    assert len(said) == 1 and "Unfenced" in said[0], said
    assert store.unfinished() == []


class Patience(MemoryTaskStore):
    """Notes how long each status write may wait for a busy store (the bound its caller set)."""

    def __init__(self) -> None:
        super().__init__()
        self.patience: dict[str, float] = {}

    def update(self, task_id: str, status: mt.Status, *, holder: str | None = None) -> None:
        bound = store_bound()
        self.patience[str(status.status)] = float("inf") if bound is None else bound - time.monotonic()
        super().update(task_id, status, holder=holder)


def test_a_tasks_end_may_wait_longer_for_a_busy_store_than_a_status_on_the_way(listen: ListenTasksServer) -> None:
    """Eight processes taking turns at one SQLite file on a loaded machine starved an end past a
    status's budget, and the finished task stayed unfinished (adopted, delivered twice).
    """
    store = Patience()
    with mt.Client.http(listen.url, store=store) as client:
        task = mt.call_tool(client, "job")
        assert isinstance(task, mt.Status)
        client.call_tool("finish")
        assert mt.wait_task(client, task, timeout=600).status is mt.TaskState.COMPLETED
    assert store.patience["completed"] > STATUS_BUDGET, store.patience
    assert store.unfinished() == []


def test_each_wait_of_a_set_takes_its_lease(listen: ListenTasksServer) -> None:
    store = Watched()
    with mt.Client.http(listen.url, store=store) as client:
        tasks = [t for t in (mt.call_tool(client, "job") for _ in range(3)) if isinstance(t, mt.Status)]
        seen = threading.Semaphore(0)
        waiting = Background(lambda: mt.wait_all(client, tasks, timeout=60, on_status=lambda s: seen.release()))
        for _ in tasks:  # each wait has read its task, its lease taken before
            assert seen.acquire(timeout=30)
        assert sorted(store._leases) == sorted(t.task_id for t in tasks)
        assert all(not store.acquire(t.task_id, new_holder(), 15) for t in tasks)
        client.call_tool("finish")
        assert {s.wire_status for s in waiting.result()} == {"completed"}
    assert store._leases == {}


def test_the_renewer_ends_with_the_clients_close(foreign: ModernHttpTasksServer) -> None:
    store = Watched(lease_ttl=0.3)
    client = mt.Client.http(foreign.url, store=store)
    task = mt.call_tool(client, "hold")  # working for ever
    assert isinstance(task, mt.Status)
    waiting = Background(lambda: mt.wait_task(client, task, timeout=600, poll_interval=30))
    assert store.renewed.acquire(timeout=30)
    assert len(renewers()) == 1
    client.close()
    with pytest.raises(mt.TransportError, match="the client was closed"):
        waiting.result()
    assert renewers() == []


def test_a_renewer_stops_at_its_closing_signal_with_leases_still_held() -> None:
    from mcp_tasks._store import Renewer

    store = Watched()
    closing = threading.Event()
    renewer = Renewer(closing)
    holder = new_holder()
    assert store.acquire("t-1", holder, 0.3)
    renewer.hold(store, "t-1", holder, 0.3)
    assert store.renewed.acquire(timeout=30)
    (thread,) = renewers()
    closing.set()
    renewer.close()  # as the channel's close does, its closing signal set
    renewer.join()
    assert not thread.is_alive() and renewers() == []
    late = renewer.hold(store, "t-2", holder, 0.3)  # a wait still ending: not renewed, no thread
    assert renewers() == [] and not late.lost
    renewer.let_go(late)


@pytest.fixture(params=["sqlite", "postgres"])
def shipped(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[mt.TaskStore]:
    """The stores that ship, each with renew_many."""
    if request.param == "postgres":
        yield request.getfixturevalue("pg_store")
    else:
        with mt.SqliteTaskStore(tmp_path / "tasks.sqlite3") as store:
            yield store


def test_renew_many_renews_the_leases_their_holders_still_hold(shipped: Any) -> None:
    mine, other = new_holder(), new_holder()
    assert shipped.acquire("t-1", mine, 0.5) and shipped.acquire("t-2", other, 600)
    assert shipped.renew_many([("t-1", mine), ("t-2", mine), ("t-3", mine)], 600) == [True, False, False]
    assert not shipped.acquire("t-1", new_holder(), 600)  # renewed for 600 s: still mine
    assert shipped.renew_many([], 600) == []


class Batched(Watched):
    """A store with renew_many, noting the size of each batch."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []
        self.batched = threading.Event()

    def renew_many(self, leases: list[tuple[str, str]], ttl: float) -> list[bool]:
        self.batches.append(len(leases))
        self.batched.set()
        return [MemoryTaskStore.renew(self, task_id, holder, ttl) for task_id, holder in leases]


def test_a_renewer_renews_a_stores_leases_in_one_call_when_it_can() -> None:
    from mcp_tasks._store import Renewer

    store = Batched()
    renewer = Renewer()
    holders = [new_holder() for _ in range(3)]
    leases = []
    for n, holder in enumerate(holders):
        assert store.acquire(f"t-{n}", holder, 0.6)
        leases.append(renewer.hold(store, f"t-{n}", holder, 0.6))
    assert store.batched.wait(30)
    assert store.batches[0] == 3 and not any(lease.lost for lease in leases)
    for lease in leases:
        renewer.let_go(lease)
    assert renewers() == []


def test_a_lease_claimed_earlier_is_renewed_on_the_clock_of_its_claim() -> None:
    """A claim's lease held only later (a slow endpoint in between) is due when the claim's ttl
    runs short, not a whole ttl after the wait began: a 600 s lease claimed 599 s ago is renewed
    at once (had its clock started at `hold`, not for 400 s).
    """
    import time

    from mcp_tasks._store import Renewer

    store = Watched()
    renewer = Renewer()
    holder = new_holder()
    assert store.acquire("t-1", holder, 600)
    lease = renewer.hold(store, "t-1", holder, 600, taken_at=time.monotonic() - 599)
    assert store.renewed.acquire(timeout=30) and not lease.lost
    renewer.let_go(lease)
    assert renewers() == []
