"""A client with ``store=`` records its tasks and the statuses it reads; a wait writes its answers
to the store before it sends them and acknowledges them after (a write-ahead ledger), sends again
an answer never acknowledged before asking any handler, and answers only while it holds the
task's lease. Against the reference server and a foreign one (tests/foreign/modern_http_tasks.py).
Real processes: tests/tasks/test_durable_processes.py.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._store import new_holder, store_deadline
from tests.conftest import ROOT, STDIO_SERVER, Background, Harness, accept_form, lease_elsewhere, release
from tests.foreign.modern_http_tasks import ModernHttpTasksServer
from tests.memory_store import MemoryTaskStore

ANSWER = {"action": "accept", "content": {"confirmed": True}}


class Spy(MemoryTaskStore):
    """A memory store that notes each ledger and lease call, in order, with the server's requests."""

    def __init__(self, journal: list[str] | None = None) -> None:
        super().__init__()
        self.journal = journal if journal is not None else []
        self.refused = threading.Event()

    def write_answers(self, task_id: str, answers: Mapping[str, Any], *, holder: str | None = None) -> None:
        self.journal.append(f"write {sorted(answers)}")
        super().write_answers(task_id, answers, holder=holder)

    def acknowledge(self, task_id: str, keys: Iterable[str], *, holder: str | None = None) -> None:
        keys = list(keys)
        self.journal.append(f"ack {sorted(keys)}")
        super().acknowledge(task_id, keys, holder=holder)

    def acquire(self, task_id: str, holder: str, ttl: float) -> bool:
        taken = super().acquire(task_id, holder, ttl)
        if not taken:
            self.refused.set()
        return taken


@pytest.fixture
def foreign() -> Iterator[ModernHttpTasksServer]:
    server = ModernHttpTasksServer()
    server.start()
    yield server
    server.close()


@pytest.fixture
def sqlite(tmp_path: Path) -> mt.SqliteTaskStore:
    return mt.SqliteTaskStore(tmp_path / "tasks.sqlite3")


# -- recording -------------------------------------------------------------------------------------


def test_every_task_created_and_status_read_is_recorded(harness: Harness, sqlite: mt.SqliteTaskStore) -> None:
    client = harness.client(store=sqlite)
    task = mt.call_tool(client, "slow_compute", {"block": True})
    assert isinstance(task, mt.Status)
    ref = sqlite.get(task.task_id)
    assert ref is not None and ref.tool == "slow_compute" and ref.era == "modern"
    if harness.transport == "http":
        assert ref.endpoint == client.transport.url  # type: ignore[attr-defined]
    elif harness.transport == "stdio":
        assert ref.endpoint.startswith(sys.executable) and STDIO_SERVER[-1] in ref.endpoint
    else:
        assert ref.endpoint == "direct:mcp_tasks-tests"
    assert [r.task_id for r in sqlite.unfinished()] == [task.task_id]
    assert mt.get_task(client, task).status is mt.TaskState.WORKING
    release(client)
    assert mt.wait_task(client, task, timeout=30).status is mt.TaskState.COMPLETED
    done = sqlite.get(task.task_id)
    assert done is not None and done.finished and done.last_status is not None
    assert done.last_status.result is not None and sqlite.unfinished() == []


def test_a_foreign_servers_task_is_recorded(foreign: ModernHttpTasksServer, sqlite: mt.SqliteTaskStore) -> None:
    with mt.Client.http(foreign.url, store=sqlite) as client:
        task = mt.call_tool(client, "hold")
        assert isinstance(task, mt.Status)
        assert not isinstance(mt.call_tool(client, "plain"), mt.Status)  # no task: nothing to record
    refs = sqlite.unfinished()
    assert [(r.task_id, r.endpoint, r.tool) for r in refs] == [(task.task_id, foreign.url, "hold")]


def test_a_legacy_task_is_recorded_with_its_session_and_resumed_in_it(sqlite: mt.SqliteTaskStore) -> None:
    from tests.foreign.legacy_http_tasks import LegacyHttpTasksServer

    with LegacyHttpTasksServer() as server:
        client = mt.Client.http(server.url, store=sqlite)
        task = mt.call_tool(client, "hold")
        assert isinstance(task, mt.Status) and task.era == "legacy"
        client.close(end_session=False)  # the server keeps the task for this session only
        (ref,) = sqlite.unfinished()
        assert ref.era == "legacy" and ref.session_id == task.session_id is not None
        with mt.Client.http(server.url) as releaser:
            releaser.call_tool("release")
        result = mt.resume(ref, store=sqlite, timeout=30)
    assert result["content"][0]["text"] == "held done"
    assert sqlite.unfinished() == []


def test_a_store_must_have_the_store_methods() -> None:
    with pytest.raises(TypeError, match=r"store must be a TaskStore.*has no record"):
        mt.Client.http("http://127.0.0.1:9/mcp", store=object())  # type: ignore[arg-type]
    with (
        mt.Client.http("http://127.0.0.1:9/mcp") as client,
        pytest.raises(TypeError, match="store must be a TaskStore"),
    ):
        mt.wait_task(client, "t", store=42)  # type: ignore[arg-type]


def test_a_store_that_fails_does_not_lose_the_task(harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    class Broken(MemoryTaskStore):
        def record(self, ref: mt.TaskRef, **lease: Any) -> None:
            raise mt.StoreError("cannot use the task store /nowhere: disk full")

        def join_intent(self, *args: Any, **kwargs: Any) -> None:  # its intent was written, then the disk filled
            raise mt.StoreError("cannot use the task store /nowhere: disk full")

    client = harness.client(store=Broken())
    task = mt.call_tool(client, "slow_compute")
    assert isinstance(task, mt.Status)  # the caller still has its task
    assert "could not record its id with its call" in caplog.text and task.task_id not in caplog.text


# -- the ledger ------------------------------------------------------------------------------------


def test_an_answer_is_written_before_it_is_sent_and_acknowledged_after(harness: Harness) -> None:
    journal: list[str] = []
    store = Spy(journal)
    client = harness.client(store=store, input_handlers=mt.InputHandlers(form=accept_form))
    if harness.server is not None:  # direct and http: the server notes its requests in the journal
        harness.server.on_request = lambda method, params: journal.append(method) if method == "tasks/update" else None
    result = mt.call_and_await(client, "confirm_delete", timeout=30)
    assert result["structuredContent"]["confirmation"] == ANSWER
    expected = ["write ['confirmation']", "tasks/update", "ack ['confirmation']"]
    if harness.server is None:
        expected.remove("tasks/update")
    assert journal == expected
    (task_id,) = {r.task_id for r in store._refs.values()}
    assert store.unacknowledged(task_id) == {}


def test_an_answer_never_acknowledged_is_sent_again_verbatim_before_any_handler(harness: Harness) -> None:
    store = MemoryTaskStore()
    client = harness.client(store=store)
    task = mt.call_tool(client, "confirm_delete")
    assert isinstance(task, mt.Status)
    store.write_answers(task.task_id, {"confirmation": ANSWER, "gone": {"action": "decline"}})
    status = mt.wait_task(client, task, input="return", timeout=30)  # no handler could answer
    assert status.status is mt.TaskState.COMPLETED
    assert status.result is not None and status.result["structuredContent"]["confirmation"] == ANSWER
    assert store.unacknowledged(task.task_id) == {}  # the answer to a request no longer pending too


def test_a_foreign_server_gets_the_written_answer_once(foreign: ModernHttpTasksServer) -> None:
    store = MemoryTaskStore()
    answer = {"action": "accept", "content": {"name": "Ada", "tags": ["x", 1, None]}}
    with mt.Client.http(foreign.url, store=store) as client:
        task = mt.call_tool(client, "ask")
        assert isinstance(task, mt.Status)
        store.write_answers(task.task_id, {"q": answer})
        result = mt.await_task(client, task, input="return", timeout=30)
    assert result["structuredContent"] == {"q": answer}
    assert foreign.updates == [(task.task_id, {"q": answer})]
    assert store.unacknowledged(task.task_id) == {}


def test_an_answer_the_server_refused_is_not_sent_again(foreign: ModernHttpTasksServer) -> None:
    store = MemoryTaskStore()

    def form(params: dict[str, Any]) -> dict[str, Any]:
        foreign.tasks.clear()  # the task is gone by the time the answer arrives: an error comes back
        return ANSWER

    with mt.Client.http(foreign.url, store=store, input_handlers=mt.InputHandlers(form=form)) as client:
        task = mt.call_tool(client, "ask")
        assert isinstance(task, mt.Status)
        with pytest.raises(mt.McpError, match="tasks/update"):
            mt.wait_task(client, task, timeout=30)
    assert store.unacknowledged(task.task_id) == {}  # the server read it and said no: not sent again


# -- leases ----------------------------------------------------------------------------------------


def test_a_wait_on_a_task_leased_elsewhere_reads_and_takes_over_when_it_frees(foreign: ModernHttpTasksServer) -> None:
    store = Spy()
    other = new_holder()
    answered: list[dict[str, Any]] = []

    def form(params: dict[str, Any]) -> dict[str, Any]:
        answered.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    with mt.Client.http(foreign.url, store=store, input_handlers=mt.InputHandlers(form=form)) as client:
        task = mt.call_tool(client, "ask")
        assert isinstance(task, mt.Status)
        assert lease_elsewhere(client, store, task.task_id, other)
        store.refused.clear()
        waiting = threading.Thread(target=lambda: mt.await_task(client, task, timeout=60, poll_interval=0.01))
        waiting.start()
        assert store.refused.wait(30)  # it asked for the lease and was told no
        assert answered == [] and foreign.updates == []
        store.release(task.task_id, other)  # the other wait ended: this one takes over
        waiting.join(60)
        assert not waiting.is_alive()
    assert len(answered) == 1 and len(foreign.updates) == 1


def test_a_lease_that_lapsed_while_a_person_answered_is_taken_again(foreign: ModernHttpTasksServer) -> None:
    store = MemoryTaskStore()
    holder: list[str] = []

    def form(params: dict[str, Any]) -> dict[str, Any]:
        (task_id,) = foreign.tasks
        (lease,) = store._leases.values()
        holder.append(lease[0])
        store.release(task_id, lease[0])  # as if 15 s went by with nobody else waiting
        return {"action": "accept", "content": {"name": "Ada"}}

    with mt.Client.http(foreign.url, store=store, input_handlers=mt.InputHandlers(form=form)) as client:
        task = mt.call_tool(client, "ask")
        assert isinstance(task, mt.Status)
        result = mt.await_task(client, task, timeout=30)
    assert result["structuredContent"]["q"]["content"] == {"name": "Ada"} and len(foreign.updates) == 1


def test_an_answer_is_not_sent_when_another_wait_took_the_lease_meanwhile(foreign: ModernHttpTasksServer) -> None:
    store = MemoryTaskStore()
    other = new_holder()

    def form(params: dict[str, Any]) -> dict[str, Any]:
        (task_id,) = foreign.tasks
        store._leases[task_id] = (other, 1e12)  # it lapsed, and another wait took it
        return {"action": "accept", "content": {"name": "Ada"}}

    with mt.Client.http(foreign.url, store=store, input_handlers=mt.InputHandlers(form=form)) as client:
        task = mt.call_tool(client, "ask")
        assert isinstance(task, mt.Status)
        with pytest.raises(mt.TaskTimeout):
            mt.await_task(client, task, timeout=1, poll_interval=0.05)
    assert foreign.updates == [] and store.unacknowledged(task.task_id) == {}


def test_a_wait_releases_its_lease_when_it_ends(sqlite: mt.SqliteTaskStore, foreign: ModernHttpTasksServer) -> None:
    handlers = mt.InputHandlers(form=lambda params: {"action": "accept", "content": {}})
    with mt.Client.http(foreign.url, store=sqlite, input_handlers=handlers) as client:
        task = mt.call_tool(client, "ask")
        assert isinstance(task, mt.Status)
        mt.await_task(client, task, timeout=30)
    assert sqlite.acquire(task.task_id, new_holder(), 15)


def test_contract_helpers_are_importable() -> None:
    sys.path.insert(0, str(ROOT))
    from tests.store.test_store import contract_tests

    assert len(contract_tests()) == 10


# -- a busy store and the wait's deadline ----------------------------------------------------------


def _lock(store: mt.SqliteTaskStore) -> sqlite3.Connection:
    other = sqlite3.connect(str(store.path), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


def test_a_busy_store_gives_up_at_the_callers_deadline(tmp_path: Path) -> None:
    store = mt.SqliteTaskStore(tmp_path / "tasks.sqlite3", busy_timeout=20)
    other = _lock(store)
    try:
        started = time.monotonic()
        with store_deadline(time.monotonic() + 0.3), pytest.raises(mt.StoreError) as raised:
            store.acquire("t-1", new_holder(), 15)
        assert time.monotonic() - started < 10  # the demand: not the store's 20 s
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert str(store.path) in str(raised.value) and "deadline" in str(raised.value)


def test_a_wait_on_a_busy_store_ends_at_its_deadline(
    foreign: ModernHttpTasksServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = mt.SqliteTaskStore(tmp_path / "tasks.sqlite3", busy_timeout=20)
    with mt.Client.http(foreign.url, store=store) as client:
        task = mt.call_tool(client, "hold")
        assert isinstance(task, mt.Status)
        other = _lock(store)
        try:
            started = time.monotonic()
            # What it could not do is said: taking the lease (it reads without, at info level).
            with caplog.at_level("INFO", logger="mcp_tasks"), pytest.raises(mt.TaskTimeout):
                mt.wait_task(client, task, timeout=1, poll_interval=0.05)
            assert time.monotonic() - started < 10  # the wait's 1 s, not the store's 20 s
        finally:
            other.execute("ROLLBACK")
            other.close()
    said = [record.getMessage() for record in caplog.records]
    assert any(str(store.path) in text and "deadline" in text for text in said)


def test_a_task_that_ends_while_the_store_is_locked_is_no_timeout(
    foreign: ModernHttpTasksServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A status write is best effort: it waits for a locked store a short while of its own, not
    for the whole of the wait's deadline."""
    store = mt.SqliteTaskStore(tmp_path / "tasks.sqlite3", busy_timeout=600)
    with mt.Client.http(foreign.url, store=store) as client:
        task = mt.call_tool(client, "hold")
        assert isinstance(task, mt.Status)
        other = _lock(store)
        try:
            mark = foreign.journal.mark()
            waiting = Background(lambda: mt.wait_task(client, task, timeout=600, poll_interval=0.05))
            foreign.journal.wait_for(lambda e: e.get("rpc") == "tasks/get", after=mark, what="a poll")
            foreign.tasks[task.task_id] = {"tool": "ask", "mode": None, "answer": {"action": "accept"}}  # it ends
            with caplog.at_level("WARNING", logger="mcp_tasks"):
                status = waiting.result(timeout=600)
            assert status.status is mt.TaskState.COMPLETED
        finally:
            other.execute("ROLLBACK")
            other.close()
    kept = store.get(task.task_id)
    assert kept is not None and kept.finished  # its end was kept by the client, recorded once the store freed
    assert any("could not record its end" in record.getMessage() for record in caplog.records)


def test_a_wait_with_input_return_on_a_task_leased_elsewhere_returns_the_status(
    foreign: ModernHttpTasksServer,
) -> None:
    store = Spy()
    with mt.Client.http(foreign.url, store=store) as client:
        task = mt.call_tool(client, "ask")
        assert isinstance(task, mt.Status)
        assert lease_elsewhere(client, store, task.task_id, new_holder())  # another wait, answering it
        status = mt.wait_task(client, task, input="return", timeout=10, poll_interval=0.01)
    assert status.status is mt.TaskState.INPUT_REQUIRED and list(status.input_requests) == ["q"]
    assert store.refused.is_set() and foreign.updates == []


# -- what the README's "Resuming" promises, against a foreign server ----------------------------------


def test_resume_opens_a_client_with_the_callers_auth_and_headers(foreign: ModernHttpTasksServer) -> None:
    store = MemoryTaskStore()
    with mt.Client.http(foreign.url, store=store) as client:
        task = mt.call_tool(client, "ask")
    assert isinstance(task, mt.Status)
    store.write_answers(task.task_id, {"q": ANSWER})  # as if a process died before sending it
    mark = foreign.journal.mark()
    (ref,) = store.unfinished()
    result = mt.resume(ref, store=store, auth=("ada", "secret"), headers={"X-Team": "blue"}, timeout=30)
    assert result["structuredContent"] == {"q": ANSWER} and store.unfinished() == []
    sent = [event["headers"] for event in foreign.journal.events(lambda e: e["event"] == "http", after=mark)]
    assert sent and all(h.get("x-team") == "blue" and h.get("authorization", "").startswith("Basic ") for h in sent)


def test_store_as_a_wait_option_keeps_the_ledger(foreign: ModernHttpTasksServer) -> None:
    store = MemoryTaskStore()
    with mt.Client.http(foreign.url) as client:  # a client without a store
        task = mt.call_tool(client, "ask")
        assert isinstance(task, mt.Status)
        store.write_answers(task.task_id, {"q": ANSWER})
        status = mt.wait_task(client, task, store=store, input="return", timeout=30)
    assert status.status is mt.TaskState.COMPLETED and foreign.updates == [(task.task_id, {"q": ANSWER})]
    assert store.unacknowledged(task.task_id) == {}


def test_a_call_on_a_busy_store_fails_at_its_deadline_and_a_read_goes_unrecorded(
    foreign: ModernHttpTasksServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = mt.SqliteTaskStore(tmp_path / "tasks.sqlite3", busy_timeout=20)
    with mt.Client.http(foreign.url, store=store) as client:
        task = mt.call_tool(client, "hold", timeout=10)
        assert isinstance(task, mt.Status)
        other = _lock(store)
        try:
            started = time.monotonic()
            with caplog.at_level("WARNING", logger="mcp_tasks"):
                with pytest.raises(mt.StoreError, match="deadline"):  # its intent could not be written: not sent
                    mt.call_tool(client, "hold", timeout=2)
                status = mt.get_task(client, task, timeout=1)  # a status read goes unrecorded
            assert time.monotonic() - started < 10  # the calls' 3 s, not the store's 2 x 20 s
        finally:
            other.execute("ROLLBACK")
            other.close()
    assert status.task_id == task.task_id
    said = [record.getMessage() for record in caplog.records]
    assert sum(str(store.path) in text and "deadline" in text for text in said) == 1


def test_a_wait_whose_store_turns_busy_ends_at_its_deadline_lease_and_all(
    foreign: ModernHttpTasksServer, tmp_path: Path
) -> None:
    store = mt.SqliteTaskStore(tmp_path / "tasks.sqlite3", busy_timeout=20)
    locks: list[sqlite3.Connection] = []

    def form(params: dict[str, Any]) -> dict[str, Any]:
        locks.append(_lock(store))  # while the person answers, another process locks the store
        return ANSWER

    try:
        with mt.Client.http(foreign.url, store=store, input_handlers=mt.InputHandlers(form=form)) as client:
            task = mt.call_tool(client, "ask")
            assert isinstance(task, mt.Status)
            started = time.monotonic()
            with pytest.raises(mt.StoreError, match="deadline") as raised:
                mt.wait_task(client, task, timeout=2, poll_interval=0.01)
            assert time.monotonic() - started < 10  # its 2 s; not 20 s more to free its lease
    finally:
        for lock in locks:
            lock.execute("ROLLBACK")
            lock.close()
    assert str(store.path) in str(raised.value) and foreign.updates == []  # written first: nothing sent
