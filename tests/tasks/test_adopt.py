"""`mt.adopt`: a fleet worker claims the store's tasks nobody follows, waits for them (one client
per endpoint), records each end, frees each lease and yields a `TaskFuture` per task as it ends;
at its timeout it frees what is left. Against the reference server over HTTP and the socket-level
servers of tests/foreign/. Real processes, one killed: tests/tasks/test_fleet_processes.py.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks import cli
from mcp_tasks._store import new_holder
from tests.conftest import Background
from tests.foreign.listen_tasks import ListenTasksServer
from tests.foreign.modern_http_tasks import ModernHttpTasksServer
from tests.memory_store import MemoryTaskStore
from tests.processes import GatedReference

ANSWER = {"action": "accept", "content": {"name": "Ada"}}


class Reference(GatedReference):
    """The reference server over HTTP: ``job`` (a task that waits for its gate), ``ask`` (one
    that needs a name), each tasks/update noted."""

    def __init__(self) -> None:
        super().__init__()
        self.updates = self.noted_updates()

        @self.server.tool(task="required")
        def job(ctx: Any, n: int) -> dict[str, Any]:
            self.held(ctx)
            return {"n": n}

        @self.server.tool(task="required")
        def ask(ctx: Any) -> dict[str, Any]:
            schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
            return {"name": ctx.elicit("name", "Name?", schema)["content"]["name"]}


@pytest.fixture
def reference() -> Iterator[Reference]:
    with Reference() as served:
        yield served


@pytest.fixture
def foreign() -> Iterator[ModernHttpTasksServer]:
    server = ModernHttpTasksServer()
    server.start()
    yield server
    server.close()


def started(url: str, store: mt.TaskStore, tool: str, count: int, **arguments: Any) -> list[str]:
    """Start `count` tasks in a client that then goes away (a process that died), their ids."""
    with mt.Client.http(url, store=store) as client:
        tasks = [mt.call_tool(client, tool, {**arguments, **({"n": n} if tool == "job" else {})}) for n in range(count)]
    ids = [t.task_id for t in tasks if isinstance(t, mt.Status)]
    assert len(ids) == count
    return ids


def test_adopt_follows_the_tasks_nobody_follows_to_their_ends(reference: Reference) -> None:
    store = MemoryTaskStore()
    ids = started(reference.url, store, "job", 4)
    reference.gate.set()
    futures = list(mt.adopt(store, timeout=30))
    assert sorted(f.task_id for f in futures if f.task_id) == sorted(ids)
    assert all(isinstance(f, mt.TaskFuture) and f.done() for f in futures)
    assert sorted(f.result()["structuredContent"]["n"] for f in futures) == [0, 1, 2, 3]
    assert store.unfinished() == [] and store._leases == {}  # each end recorded, each lease freed
    assert all((store.get(i) or mt.TaskRef("x", i)).finished for i in ids)


def test_adopt_yields_each_task_as_it_ends(reference: Reference) -> None:
    store = MemoryTaskStore()
    ids = started(reference.url, store, "job", 2)
    with mt.Client.http(reference.url) as client:  # one task ends first: cancelled
        mt.cancel_task(client, ids[1])
    adopted = mt.adopt(store, timeout=30)
    first = next(adopted)
    assert first.task_id == ids[1] and isinstance(first.exception(), mt.TaskCancelled)
    reference.gate.set()
    (second,) = list(adopted)
    assert second.task_id == ids[0] and second.result()["structuredContent"] == {"n": 0}


def test_adopt_takes_no_task_another_live_wait_holds(reference: Reference) -> None:
    store = MemoryTaskStore()
    ids = started(reference.url, store, "job", 3)
    other = new_holder()
    assert store.acquire(ids[0], other, 600)
    reference.gate.set()
    assert sorted(f.task_id or "" for f in mt.adopt(store, timeout=30)) == sorted(ids[1:])
    assert [r.task_id for r in store.unfinished()] == [ids[0]] and store._leases == {ids[0]: store._leases[ids[0]]}


def test_adopt_claims_up_to_its_limit_oldest_first(reference: Reference) -> None:
    store = MemoryTaskStore()
    ids = started(reference.url, store, "job", 3)
    reference.gate.set()
    assert [f.task_id for f in mt.adopt(store, limit=2, timeout=30)] != []
    assert [r.task_id for r in store.unfinished()] == [ids[2]]


def test_two_workers_never_follow_the_same_task(reference: Reference) -> None:
    store = MemoryTaskStore()
    ids = started(reference.url, store, "job", 8)
    barrier = threading.Barrier(2)

    def worker() -> list[str]:
        barrier.wait(30)
        return [f.task_id or "" for f in mt.adopt(store, limit=4, timeout=30)]

    workers = [Background(worker), Background(worker)]
    reference.gate.set()
    got = [w.result() for w in workers]
    assert sorted(got[0] + got[1]) == sorted(ids) and not set(got[0]) & set(got[1])


def test_adopt_answers_input_once_with_its_input_option(foreign: ModernHttpTasksServer) -> None:
    store = MemoryTaskStore()
    (task_id,) = started(foreign.url, store, "ask", 1)
    (future,) = mt.adopt(store, input=lambda status: dict.fromkeys(status.input_requests, ANSWER), timeout=30)
    assert future.result()["structuredContent"] == {"q": ANSWER}
    assert foreign.updates == [(task_id, {"q": ANSWER})] and store.unacknowledged(task_id) == {}


def test_adopt_sends_an_answer_never_acknowledged_before_asking(reference: Reference) -> None:
    store = MemoryTaskStore()
    (task_id,) = started(reference.url, store, "ask", 1)
    store.write_answers(task_id, {"name": ANSWER})  # a worker died before it was acknowledged
    (future,) = mt.adopt(store, input="return", timeout=30)
    assert future.result()["structuredContent"] == {"name": "Ada"} and reference.updates == [{"name": ANSWER}]


def test_at_its_timeout_adopt_frees_what_is_left(foreign: ModernHttpTasksServer) -> None:
    store = MemoryTaskStore()
    (task_id,) = started(foreign.url, store, "hold", 1)  # working for ever
    assert list(mt.adopt(store, timeout=0.5, poll_interval=0.02)) == []
    assert store._leases == {} and [r.task_id for r in store.unfinished()] == [task_id]
    assert store.acquire(task_id, new_holder(), 15)  # another worker may take it


def test_a_worker_that_stops_iterating_frees_the_rest(reference: Reference) -> None:
    store = MemoryTaskStore()
    ids = started(reference.url, store, "job", 2)
    with mt.Client.http(reference.url) as client:
        mt.cancel_task(client, ids[0])
    adopted = mt.adopt(store, timeout=60)
    assert next(adopted).task_id == ids[0]
    adopted.close()  # the other is still running: freed, not followed
    assert store._leases == {} and [r.task_id for r in store.unfinished()] == [ids[1]]


def test_adopt_with_a_client_follows_its_endpoints_tasks_and_frees_the_others(
    reference: Reference, foreign: ModernHttpTasksServer
) -> None:
    store = MemoryTaskStore()
    ids = started(reference.url, store, "job", 1)
    (held,) = started(foreign.url, store, "hold", 1)
    reference.gate.set()
    with mt.Client.http(reference.url) as client:
        futures = list(mt.adopt(store, client=client, timeout=30))
        assert mt.get_task(client, ids[0]).status is mt.TaskState.COMPLETED  # still open: the caller's
    assert [f.task_id for f in futures] == ids and [r.task_id for r in store.unfinished()] == [held]
    assert store._leases == {}


class Claims(MemoryTaskStore):
    """A memory store noting what each claim asked for and got."""

    def __init__(self) -> None:
        super().__init__()
        self.claims: list[tuple[int, int]] = []

    def claim(self, holder: str, ttl: float, limit: int) -> list[mt.TaskRef]:
        taken = super().claim(holder, ttl, limit)
        self.claims.append((limit, len(taken)))
        return taken


def test_tasks_no_client_of_adopt_can_reach_do_not_crowd_out_the_others(
    reference: Reference, caplog: pytest.LogCaptureFixture
) -> None:
    store = Claims()
    unreachable = [
        mt.TaskRef("direct:server", "t-direct", created_at=1.0),
        mt.TaskRef("python -m srv", "t-stdio", created_at=2.0),
    ]
    for ref in unreachable:  # the oldest: claimed first
        store.record(ref)
    ids = started(reference.url, store, "job", 2)
    reference.gate.set()
    with caplog.at_level(logging.WARNING, logger="mcp_tasks"):
        futures = list(mt.adopt(store, limit=2, timeout=30))
    assert sorted(f.task_id or "" for f in futures) == sorted(ids)  # the limit filled with what it can follow
    assert store.claims == [(2, 2), (2, 2)]  # held while it claimed again for their places
    said = [r.getMessage() for r in caplog.records if "cannot be followed here" in r.getMessage()]
    assert said == [
        "adopt: 2 task(s) cannot be followed here, their leases are freed: their server lived in the process "
        "that started them (stdio or in-process): adopt them with client="
    ]
    assert [r.task_id for r in store.unfinished()] == ["t-direct", "t-stdio"] and store._leases == {}


def test_a_task_the_server_forgot_comes_failed_and_leaves_the_store() -> None:
    with ListenTasksServer(complete_on_listen=1000) as server:
        store = MemoryTaskStore()
        (task_id,) = started(server.url, store, "job", 1)
        with mt.Client.http(server.url) as client:
            client.call_tool("forget")
        (future,) = mt.adopt(store, timeout=30)
    error = future.exception()
    assert isinstance(error, mt.McpError) and error.data["reason"] == "forgotten"
    assert store.unfinished() == [] and (store.get(task_id) or mt.TaskRef("x", task_id)).gone == "forgotten"


def test_futures_of_adopt_work_with_concurrent_futures(reference: Reference) -> None:
    store = MemoryTaskStore()
    started(reference.url, store, "job", 2)
    reference.gate.set()
    futures = list(mt.adopt(store, timeout=30))
    done, not_done = concurrent.futures.wait(futures, timeout=0)
    assert len(done) == 2 and not not_done


def test_bad_arguments_are_clear_errors() -> None:
    class Claimless(MemoryTaskStore):
        claim = None  # type: ignore[assignment]

    with pytest.raises(TypeError, match="has no claim"):
        mt.adopt(Claimless())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit must be a positive integer"):
        mt.adopt(MemoryTaskStore(), limit=0)
    with pytest.raises(TypeError, match="not as store="):
        mt.adopt(MemoryTaskStore(), store=MemoryTaskStore())
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        mt.adopt(MemoryTaskStore(), colour="red")  # type: ignore[call-arg]
    assert list(mt.adopt(MemoryTaskStore(), timeout=5)) == []  # nothing to claim: nothing to do


def test_the_command_line_adopts_from_its_store(
    reference: Reference, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tasks.sqlite3"
    store = mt.SqliteTaskStore(path)
    ids = started(reference.url, store, "job", 2)
    reference.gate.set()
    assert cli.main(["adopt", "--store", str(path), "--timeout", "30", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(line["taskId"] for line in lines) == sorted(ids)
    assert {line["outcome"] for line in lines} == {"completed"} and store.unfinished() == []
    (asking,) = started(reference.url, store, "ask", 1)  # nobody on the command line answers it
    assert cli.main(["adopt", "--store", str(path), "--timeout", "30"]) == 3  # one did not complete
    shown = capsys.readouterr().out
    assert "InputRequired" in shown and asking not in shown  # a short id only


class SlowLink:
    """`store` reached over a slow link: a status write, once started (`writing`; `seen` is set
    too), lands only when `through` is set (then `landed` is)."""

    def __init__(self, store: mt.TaskStore, seen: threading.Event) -> None:
        self.store, self.seen = store, seen
        self.writing, self.through, self.landed = threading.Event(), threading.Event(), threading.Event()

    def update(self, task_id: str, status: mt.Status, *, holder: str | None = None) -> None:
        self.writing.set()
        self.seen.set()
        self.through.wait()
        if holder is None:
            self.store.update(task_id, status)
        else:
            self.store.update(task_id, status, holder=holder)
        self.landed.set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_late_status_from_a_wait_without_the_lease_reopens_nothing(
    kind: str, reference: Reference, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store: mt.TaskStore = (
        mt.SqliteTaskStore(tmp_path / "tasks.sqlite3") if kind == "sqlite" else request.getfixturevalue("pg_store")
    )
    seen = threading.Event()  # two read `working`: it says so, or starts writing it down (the old code)
    slow = SlowLink(store, seen)
    with mt.Client.http(reference.url, store=store) as one, mt.Client.http(reference.url, store=slow) as two:
        task = mt.call_tool(one, "job", {"n": 7})
        assert isinstance(task, mt.Status)
        leased = threading.Event()  # one's wait takes the lease before its first read
        first = Background(lambda: mt.wait_task(one, task.task_id, timeout=60, on_status=lambda _: leased.set()))
        leased.wait()
        second = Background(
            lambda: mt.wait_task(two, task.task_id, timeout=60, min_poll_interval=600, on_status=lambda _: seen.set())
        )
        seen.wait()
        reference.gate.set()
        assert first.result().status is mt.TaskState.COMPLETED  # one recorded its end, and freed its lease
        slow.through.set()  # what two read of the task before it ended reaches the store only now
        if slow.writing.is_set() and second.running:
            slow.landed.wait()
    with pytest.raises(mt.TransportError):  # two's wait ends with its client
        second.result()
    assert [future.task_id for future in mt.adopt(store, timeout=30)] == []  # not delivered a second time
    kept = store.get(task.task_id)
    assert kept is not None and kept.last_status is not None and kept.last_status.status is mt.TaskState.COMPLETED
    assert store.unfinished() == []
