"""Many-task waits and futures with a task store (issues 17 and 19): every status they read and
the end are recorded; input they answer goes through the write-ahead ledger and the task's lease,
as `wait_task`'s does. Against the reference server and a socket-level 2026-07-28 server.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._store import new_holder
from tests.conftest import Harness, accept_form, lease_elsewhere, release
from tests.foreign.modern_http_tasks import ModernHttpTasksServer
from tests.memory_store import MemoryTaskStore
from tests.tasks.test_durable import ANSWER, Spy, foreign  # noqa: F401  (the fixture)


class Earlier(MemoryTaskStore):
    """A store where an earlier process wrote an answer for each task it records, and never saw
    it acknowledged (as if it was killed between writing and the server's reply)."""

    def record(self, ref: mt.TaskRef, *, holder: str | None = None, ttl: float | None = None) -> None:
        super().record(ref, holder=holder, ttl=ttl)
        self.write_answers(ref.task_id, {"q": ANSWER})


def test_wait_all_records_every_status_read_and_the_end(harness: Harness) -> None:
    store = Spy()
    client = harness.client(server={"poll_interval": 0.05}, store=store)
    called = [mt.call_tool(client, "slow_compute", {"label": str(i), "block": True}) for i in range(3)]
    tasks = [t for t in called if isinstance(t, mt.Status)]
    assert len(tasks) == 3 and len(store.unfinished()) == 3
    seen: list[mt.Status] = []

    def on_status(status: mt.Status) -> None:
        seen.append(status)
        if len(seen) == 3:
            release(client)

    statuses = mt.wait_all(client, tasks, timeout=30, on_status=on_status)
    assert {s.wire_status for s in statuses} == {"completed"}
    assert store.unfinished() == []
    for status in statuses:
        ref = store.get(status.task_id)
        assert ref is not None and ref.last_status is not None and ref.last_status.result == status.result


def test_wait_any_records_the_end_of_the_first_only(harness: Harness) -> None:
    store = MemoryTaskStore()
    client = harness.client(server={"poll_interval": 0.05})
    held = mt.call_tool(client, "slow_compute", {"block": True, "gate": "later"})
    quick = mt.call_tool(client, "slow_compute")
    assert isinstance(held, mt.Status) and isinstance(quick, mt.Status)
    for task in (held, quick):  # recorded by another client (say, another process)
        store.record(mt.TaskRef("elsewhere", task.task_id, "modern", "slow_compute", 0.0, task))
    first = mt.wait_any(client, [held, quick], timeout=30, store=store)  # store as a wait option
    release(client, "later")
    assert first.task_id == quick.task_id
    assert [r.task_id for r in store.unfinished()] == [held.task_id]


def test_input_answered_in_a_many_wait_is_written_before_it_is_sent_and_acknowledged_after(
    harness: Harness,
) -> None:
    journal: list[str] = []
    store = Spy(journal)
    client = harness.client(
        server={"poll_interval": 0.05}, store=store, input_handlers=mt.InputHandlers(form=accept_form)
    )
    if harness.server is not None:  # direct and http: the server notes its requests in the journal
        harness.server.on_request = lambda method, params: journal.append(method) if method == "tasks/update" else None
    asking = [mt.call_tool(client, "confirm_delete") for _ in range(2)]
    for status in mt.as_completed(client, [a for a in asking if isinstance(a, mt.Status)], timeout=30):
        assert mt.outcome(status)["structuredContent"]["confirmation"] == ANSWER
    step = ["write ['confirmation']", "tasks/update", "ack ['confirmation']"]
    if harness.server is None:
        step.remove("tasks/update")
    writes = [i for i, line in enumerate(journal) if line.startswith("write")]
    assert len(writes) == 2 and all(journal[i : i + len(step)] == step for i in writes)
    assert all(store.unacknowledged(r.task_id) == {} for r in store._refs.values())


def test_an_unacknowledged_answer_is_sent_again_first_in_wait_all(foreign: ModernHttpTasksServer) -> None:  # noqa: F811
    store = Earlier()
    with mt.Client.http(foreign.url, store=store) as client:
        tasks = [t for t in (mt.call_tool(client, "ask") for _ in range(2)) if isinstance(t, mt.Status)]
        statuses = mt.wait_all(client, tasks, input="return", timeout=30, poll_interval=0.05)  # no handler
    assert [mt.outcome(s)["structuredContent"] for s in statuses] == [{"q": ANSWER}] * 2
    assert sorted(foreign.updates, key=str) == sorted(((s.task_id, {"q": ANSWER}) for s in statuses), key=str)
    assert store.unfinished() == [] and all(store.unacknowledged(s.task_id) == {} for s in statuses)


def test_a_task_of_the_set_leased_elsewhere_is_read_not_answered_until_it_frees(
    foreign: ModernHttpTasksServer,  # noqa: F811
) -> None:
    store = Spy()
    other = new_holder()
    answered: list[dict[str, Any]] = []

    def form(params: dict[str, Any]) -> dict[str, Any]:
        answered.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    with mt.Client.http(foreign.url, store=store, input_handlers=mt.InputHandlers(form=form)) as client:
        free, leased = (mt.call_tool(client, "ask") for _ in range(2))
        assert isinstance(free, mt.Status) and isinstance(leased, mt.Status)
        assert lease_elsewhere(client, store, leased.task_id, other)
        store.refused.clear()
        outcome: list[list[mt.Status]] = []
        waiting = threading.Thread(
            target=lambda: outcome.append(mt.wait_all(client, [free, leased], timeout=60, poll_interval=0.01))
        )
        waiting.start()
        assert store.refused.wait(30)  # it asked for the lease and was told no
        assert leased.task_id not in [task_id for task_id, _ in foreign.updates]
        store.release(leased.task_id, other)  # the other wait ended: this one takes over
        waiting.join(60)
        assert not waiting.is_alive()
    assert [s.wire_status for s in outcome[0]] == ["completed", "completed"]
    assert sorted(task_id for task_id, _ in foreign.updates) == sorted([free.task_id, leased.task_id])
    assert len(answered) == 2


def test_a_future_records_its_statuses_and_end(harness: Harness) -> None:
    store = MemoryTaskStore()
    client = harness.client(server={"poll_interval": 0.05}, store=store)
    future = mt.submit(client, "slow_compute", {"label": "f"})
    assert future.result(timeout=30)["structuredContent"]["label"] == "f"
    ref = store.get(str(future.task_id))
    assert ref is not None and ref.finished and store.unfinished() == []


def test_a_futures_unacknowledged_answer_is_sent_again_and_its_lease_freed_when_it_resolves(
    foreign: ModernHttpTasksServer,  # noqa: F811
) -> None:
    store = Earlier()
    with mt.Client.http(foreign.url) as client:  # a client without a store: the submit's own
        held = mt.submit(client, "hold", store=store, poll_interval=0.05)
        future = mt.submit(client, "ask", store=store, input="return", poll_interval=0.05)
        assert future.result(timeout=30)["structuredContent"] == {"q": ANSWER}
        assert foreign.updates == [(future.task_id, {"q": ANSWER})]
        assert store.acquire(str(future.task_id), new_holder(), 15)  # freed while the watcher runs on
        assert not held.done()
    ref = store.get(str(future.task_id))
    assert ref is not None and ref.finished and [r.task_id for r in store.unfinished()] == [held.task_id]


class Tallied(MemoryTaskStore):
    """A store noting its lease calls (with `batched` False: one without the optional batch methods)."""

    def __init__(self, batched: bool = True) -> None:
        super().__init__()
        self.calls: list[str] = []
        if not batched:
            self.acquire_many = None  # type: ignore[assignment]
            self.release_many = None  # type: ignore[assignment]
            self.finish_many = None  # type: ignore[assignment]

    def acquire(self, task_id: str, holder: str, ttl: float) -> bool:
        self.calls.append("acquire")
        return super().acquire(task_id, holder, ttl)

    def acquire_many(self, task_ids: Any, holder: str, ttl: float) -> set[str]:
        self.calls.append("acquire_many")
        return super().acquire_many(task_ids, holder, ttl)

    def release(self, task_id: str, holder: str) -> None:
        self.calls.append("release")
        super().release(task_id, holder)

    def release_many(self, leases: Any) -> None:
        self.calls.append("release_many")
        super().release_many(leases)

    def finish_many(self, ends: Any) -> None:
        self.calls.append("finish_many")
        super().finish_many(ends)

    def update(self, task_id: str, status: mt.Status, *, holder: str | None = None) -> None:
        self.calls.append("update")
        super().update(task_id, status, holder=holder)


def test_a_many_wait_takes_its_leases_in_one_call_and_ends_them_in_one_when_they_end_together(
    harness: Harness,
) -> None:
    for batched in (True, False):
        store = Tallied(batched)
        client = harness.client(server={"poll_interval": 0.05}, store=store)
        called = [mt.call_tool(client, "slow_compute", {"label": str(i)}) for i in range(4)]
        ended = mt.wait_all(client, [t for t in called if isinstance(t, mt.Status)], timeout=30, store=None)
        assert len(ended) == 4 and all(s.terminal for s in ended)
        other = new_holder()
        assert lease_elsewhere(client, store, ended[0].task_id, other)  # one leased elsewhere
        store.calls.clear()
        statuses = mt.wait_all(client, ended, timeout=30)  # all four end as they start: together
        assert {s.wire_status for s in statuses} == {"completed"}
        taken = [c for c in store.calls if c.startswith("acquire")]
        freed = [c for c in store.calls if c.startswith(("release", "finish", "update"))]
        # The task leased elsewhere: its end is the other's to record (its lease asked for once more, refused).
        if batched:  # the group's ends recorded, and their leases freed, in one call
            assert taken == ["acquire_many", "acquire"] and freed == ["finish_many"]
        else:
            assert taken == ["acquire"] * 5 and sorted(freed) == ["release"] * 3 + ["update"] * 3
        assert not store.acquire(ended[0].task_id, new_holder(), 600)  # the other's lease is kept
        assert all(store.acquire(s.task_id, new_holder(), 600) for s in ended[1:])  # the group's are freed
        assert [ref.task_id for ref in store.unfinished()] == [ended[0].task_id]  # the rest before wait_all returned
        client.close()


class Unfinishing(MemoryTaskStore):
    """A store whose `finish_many` fails (a database gone away at the wrong moment)."""

    def finish_many(self, ends: Any) -> None:
        raise mt.StoreError("the store went away")


def test_ends_the_store_cannot_record_are_said_and_left_for_a_later_wait(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    store = Unfinishing()
    client = harness.client(server={"poll_interval": 0.05}, store=store)
    called = [mt.call_tool(client, "slow_compute", {"label": str(i)}) for i in range(3)]
    with caplog.at_level(logging.WARNING, logger="mcp_tasks"):
        statuses = mt.wait_all(client, [t for t in called if isinstance(t, mt.Status)], timeout=30)
    assert {s.wire_status for s in statuses} == {"completed"}  # the waits themselves are fine
    assert "could not record the end of" in caplog.text and "the store went away" in caplog.text
    assert len(store.unfinished()) == 3  # not lost: a later wait (or adopt) reads their end again
    client.close()


class Gated(Tallied):
    """A tallied store whose single `acquire` waits for `go` (the futures' driver held at it)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.go = threading.Event(), threading.Event()

    def acquire(self, task_id: str, holder: str, ttl: float) -> bool:
        self.entered.set()
        assert self.go.wait(30)
        return super().acquire(task_id, holder, ttl)


def test_futures_submitted_while_the_driver_is_busy_take_their_leases_in_one_call(harness: Harness) -> None:
    store = Gated()
    client = harness.client(server={"poll_interval": 0.05}, store=store)
    first = mt.submit(client, "slow_compute", {"label": "first"})
    assert store.entered.wait(30)  # the driver takes the first one's lease alone
    rest = [mt.submit(client, "slow_compute", {"label": str(i)}) for i in range(5)]
    store.go.set()
    assert all(f.result(timeout=30)["content"] for f in [first, *rest])
    assert store.calls.count("acquire") == 1 and store.calls.count("acquire_many") == 1
    assert store.unfinished() == [] and store._leases == {}
    client.close()
