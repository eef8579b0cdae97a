"""Tasks that outlive their process, with real processes: one killed mid-wait and another that
resumes; one killed after its handler answered, before the answer was acknowledged, and another
that resumes without handlers (the server sees the answer once); two processes waiting on one
task that needs input (exactly one answers); a lease renewed while a person answers; eight
processes recording 50 tasks each in one file. Against the reference server and a foreign one
(tests/foreign/modern_http_tasks.py), except the killed-mid-wait test, whose task must be let
finish (the foreign `hold` never does).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._store import new_holder as mt_new_holder
from tests.foreign.modern_http_tasks import ModernHttpTasksServer
from tests.processes import GatedReference, lines_before, python

pytestmark = pytest.mark.skipif(os.name == "nt", reason="SIGKILL and POSIX process checks")

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

CLIENT = textwrap.dedent(
    """
    import os, signal, sys
    import mcp_tasks as mt

    url, path, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    # A shorter lease, so that a test need not wait 15 s.
    lease = {"lease_ttl": float(os.environ["LEASE_TTL"])} if os.environ.get("LEASE_TTL") else {}

    class Dying(mt.SqliteTaskStore):
        def write_answers(self, task_id, answers, *, holder=None):
            super().write_answers(task_id, answers, holder=holder)
            if mode == "die-after-write":
                os.kill(os.getpid(), signal.SIGKILL)

        def acknowledge(self, task_id, keys, *, holder=None):
            if mode == "die-before-ack":
                os.kill(os.getpid(), signal.SIGKILL)
            super().acknowledge(task_id, keys, holder=holder)

    store = Dying(path, **lease)

    def form(params):
        if mode != "wait":
            return {"action": "accept", "content": {"name": "Ada"}}
        print("asked", flush=True)
        return {"action": "accept", "content": {"name": sys.stdin.readline().strip()}}

    handlers = mt.InputHandlers(form=form)
    seen = lambda status: print("status", status.wire_status, flush=True)
    with mt.Client.http(url, store=store, input_handlers=handlers) as client:
        if mode == "wait":
            task_id = sys.argv[4]
        else:
            task = mt.call_tool(client, "hold" if mode == "hold" else "ask")
            task_id = task.task_id
        print(task_id, flush=True)
        result = mt.await_task(client, task_id, timeout=120, poll_interval=0.02, on_status=seen)
        named = result["structuredContent"]  # the reference server's answer, or a foreign one's
        print(named["name"] if "name" in named else named["q"]["content"]["name"], flush=True)
    """
)


class Served(GatedReference):
    """The reference server over HTTP, noting each tasks/update it gets."""

    def __init__(self) -> None:
        super().__init__()
        self.updates = self.noted_updates()

        @self.server.tool(task="required")
        def ask(ctx: Any) -> dict[str, Any]:
            answer = ctx.elicit("name", "What is your name?", SCHEMA)
            return {"name": answer["content"]["name"]}

        @self.server.tool(task="required")
        def hold(ctx: Any) -> dict[str, Any]:
            self.held(ctx)
            return {"name": "held"}


@pytest.fixture
def served() -> Iterator[Served]:
    with Served() as served:
        yield served


def start(url: str, path: Path, mode: str, *extra: str, lease_ttl: float | None = None) -> subprocess.Popen[str]:
    env = {"LEASE_TTL": str(lease_ttl)} if lease_ttl is not None else {}
    return python(CLIENT, url, str(path), mode, *extra, env=env, stdin=True)


class Peer:
    """A server a test's processes talk to: the reference one or a foreign one, with the
    `inputResponses` of each tasks/update it got.
    """

    def __init__(self, url: str, updates: Callable[[], list[dict[str, Any]]], key: str) -> None:
        self.url = url
        self.updates = updates
        self.key = key  # the input request the `ask` tool makes


@pytest.fixture(params=["reference", "foreign"])
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    if request.param == "reference":
        with Served() as served:
            yield Peer(served.url, lambda: served.updates, "name")
        return
    foreign = ModernHttpTasksServer()
    foreign.start()
    yield Peer(foreign.url, lambda: [responses for _, responses in foreign.updates], "q")
    foreign.close()


def asked(peer: Peer, path: Path) -> tuple[mt.SqliteTaskStore, mt.Status]:
    """A task of the peer's ``ask`` tool, started by a client recording it in a store at `path`
    (then gone); the store and the task."""
    store = mt.SqliteTaskStore(path)
    with mt.Client.http(peer.url, store=store) as client:
        task = mt.call_tool(client, "ask")
    assert isinstance(task, mt.Status)
    return store, task


def rest_of(process: subprocess.Popen[str]) -> tuple[str, str]:
    """What a process still writes, once it ends: read through its text streams, since
    `communicate` reads the pipes beneath them and would miss what `readline` already buffered."""
    assert process.stdout is not None and process.stderr is not None
    with process:  # closes the pipes and waits
        out, err = process.stdout.read(), process.stderr.read()
    return out, err


def killed(process: subprocess.Popen[str], *, by_itself: bool = False) -> str:
    """The task id a client process printed, once it is dead: killed now, or `by_itself`."""
    assert process.stdout is not None
    task_id = process.stdout.readline().strip()
    assert task_id, process.communicate()[1]
    if not by_itself:
        process.kill()
    process.communicate(timeout=120)
    return task_id


def test_a_process_killed_mid_wait_is_resumed_by_another(served: Served, tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    task_id = killed(start(served.url, path, "hold"))
    store = mt.SqliteTaskStore(path)
    (ref,) = store.unfinished()
    assert ref.task_id == task_id and ref.endpoint == served.url and ref.tool == "hold"
    served.gate.set()
    assert mt.resume(ref, store=store, timeout=60)["structuredContent"] == {"name": "held"}
    assert store.unfinished() == []


@pytest.mark.parametrize("mode", ["die-after-write", "die-before-ack"])
def test_an_answer_never_acknowledged_reaches_the_server_once(peer: Peer, tmp_path: Path, mode: str) -> None:
    path = tmp_path / "tasks.sqlite3"
    process = start(peer.url, path, mode)
    task_id = killed(process, by_itself=True)
    assert process.returncode == -signal.SIGKILL
    store = mt.SqliteTaskStore(path)
    answer = {"action": "accept", "content": {"name": "Ada"}}
    assert store.unacknowledged(task_id) == {peer.key: answer}
    # No handlers: only the ledger can answer.
    result = mt.resume(task_id, store=store, input="return", timeout=60)
    assert result["structuredContent"] in ({"name": "Ada"}, {"q": answer})
    assert peer.updates() == [{peer.key: answer}]
    assert store.unacknowledged(task_id) == {} and store.unfinished() == []


def test_two_processes_on_one_task_answer_it_once(peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    _store, task = asked(peer, path)
    waiters = [start(peer.url, path, "wait", task.task_id) for _ in range(2)]
    asked_early = 0  # a waiter may be asked before it reports the status it was asked on
    for waiter in waiters:  # both have seen that the task needs input
        asked_early += lines_before(waiter, "status input_required").count("asked")
    for n, waiter in enumerate(waiters):  # whoever is asked answers with its line
        assert waiter.stdin is not None
        waiter.stdin.write(f"P{n}\n")
        waiter.stdin.flush()
    outputs = [rest_of(w) for w in waiters]
    assert [w.returncode for w in waiters] == [0, 0], outputs
    assert asked_early + sum(out.count("asked") for out, _ in outputs) == 1, (asked_early, outputs)
    (update,) = peer.updates()
    answered = update[peer.key]["content"]["name"]
    assert all(out.splitlines()[-1] == answered for out, _ in outputs)  # both saw the one result


WORKER = textwrap.dedent(
    """
    import sys
    import mcp_tasks as mt
    from mcp_tasks.server import Server

    server = Server(poll_interval=0.005)

    @server.tool(task="required")
    def job(ctx, n: int) -> dict:
        return {"n": n}

    store = mt.SqliteTaskStore(sys.argv[1])
    with mt.Client.direct(server, store=store) as client:
        for n in range(50):
            task = mt.call_tool(client, "job", {"n": n})
            if n % 2:  # half left unfinished
                mt.await_task(client, task, timeout=120, poll_interval=0.005)
    server.close()
    """
)


def test_eight_processes_record_fifty_tasks_each_in_one_file(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    mt.SqliteTaskStore(path)
    workers = [python(WORKER, str(path), stdout=False) for _ in range(8)]
    errors = [w.communicate(timeout=300)[1] for w in workers]
    assert [w.returncode for w in workers] == [0] * 8, errors
    # A status on the way is best effort (a locked file gets STATUS_BUDGET, then the status goes
    # unrecorded with a warning: eight writers on a loaded machine can starve one that long); the
    # records themselves, their ends (END_BUDGET) and their leases are never dropped (counted below).
    dropped = "could not record its status"
    assert not any("Traceback" in e for e in errors), errors
    assert not any("locked" in line and dropped not in line for e in errors for line in e.splitlines()), errors
    store = mt.SqliteTaskStore(path)
    unfinished = store.unfinished()
    assert len(unfinished) == 8 * 25
    assert all(ref.endpoint == "direct:mcp_tasks-reference" and ref.tool == "job" for ref in unfinished)
    assert len({ref.task_id for ref in unfinished}) == 200
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*), sum(finished) FROM tasks").fetchone() == (400, 200)
    assert json.loads(unfinished[0].to_json())["format"] == 1


def lease_of(path: Path, task_id: str) -> tuple[str, float] | None:
    """The holder of the task's lease in the store file, and when it expires (wall clock)."""
    with closing(sqlite3.connect(path)) as db:
        row = db.execute("SELECT holder, expires FROM leases WHERE task_id = ?", (task_id,)).fetchone()
    return None if row is None else (row[0], row[1])


def test_a_lease_is_renewed_while_a_person_answers(peer: Peer, tmp_path: Path) -> None:
    ttl = 3.0
    path = tmp_path / "tasks.sqlite3"
    store, task = asked(peer, path)
    first = start(peer.url, path, "wait", task.task_id, lease_ttl=ttl)
    assert first.stdout is not None and first.stdin is not None
    lines_before(first, "asked")  # its person is answering now
    taken = lease_of(path, task.task_id)
    assert taken is not None
    holder, lapses = taken
    # The lease as taken would have lapsed by now; it is held still, renewed while the person answers.
    give_up = time.monotonic() + 30
    while not (time.time() > lapses and (now := lease_of(path, task.task_id)) and now[1] > time.time()):
        assert time.monotonic() < give_up, f"the lease was not renewed: {lease_of(path, task.task_id)}"
        threading.Event().wait(0.05)  # polling the file: the renewal is the event awaited
    assert now[0] == holder and not store.acquire(task.task_id, mt_new_holder(), ttl)  # nobody else can take it
    second = start(peer.url, path, "wait", task.task_id, lease_ttl=ttl)  # would answer "Bob" if asked
    assert second.stdout is not None and second.stdin is not None
    second.stdin.write("Bob\n")
    second.stdin.flush()
    lines_before(second, "status input_required", failing_on="asked")
    first.stdin.write("Ada\n")
    first.stdin.flush()
    outputs = [rest_of(first), rest_of(second)]
    assert [first.returncode, second.returncode] == [0, 0], outputs
    assert "asked" not in outputs[1][0]
    assert [out.splitlines()[-1] for out, _ in outputs] == ["Ada", "Ada"]
    assert peer.updates() == [{peer.key: {"action": "accept", "content": {"name": "Ada"}}}]
    assert lease_of(path, task.task_id) is None  # released when the wait ended


def test_a_process_killed_while_its_person_answers_is_resumed_at_once(peer: Peer, tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    store, task = asked(peer, path)
    first = start(peer.url, path, "wait", task.task_id)
    lines_before(first, "asked")  # it holds the lease, its person is asked
    assert lease_of(path, task.task_id) is not None
    first.kill()
    rest_of(first)
    answer = {"action": "accept", "content": {"name": "Bea"}}
    # Sooner than the lease's 15 s: its holder's process is gone, so the lease is free at once.
    result = mt.resume(
        task.task_id, store=store, input=lambda status: dict.fromkeys(status.input_requests, answer), timeout=10
    )
    assert result["structuredContent"] in ({"name": "Bea"}, {"q": answer})
    assert peer.updates() == [{peer.key: answer}] and store.unfinished() == []
