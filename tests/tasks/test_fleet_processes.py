"""A fleet with real processes: three workers on one store start tasks that need input and wait
for them; one is SIGKILLed mid-wait (two of its tasks answered, its person answering the third);
the others finish their own tasks, then adopt the dead one's. Each input key reaches the server
once, each end is recorded once, and `unfinished()` is empty at the end. On the reference server.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from tests.processes import GatedReference, line_of, python

pytestmark = pytest.mark.skipif(os.name == "nt", reason="SIGKILL")

TASKS = 4
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

WORKER = textwrap.dedent(
    """
    import sys, threading
    import mcp_tasks as mt

    url, location, name, tasks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    victim = name == "victim"

    class Noting:
        # the store, saying each end this process records

        def __init__(self, store):
            self.store = store

        def __getattr__(self, name):
            return getattr(self.store, name)

        def update(self, task_id, status, *, holder=None):
            self.store.update(task_id, status, holder=holder)
            if status.terminal:
                print("ended", task_id, flush=True)

        def finish_many(self, ends):  # the ends of a round of a group's waits, in one call
            self.store.finish_many(ends)
            for task_id, _, _ in ends:
                print("ended", task_id, flush=True)

    store = Noting(mt.open_store(location))

    def answer(status):
        (key,) = status.input_requests
        if victim and answered[0] >= 2:
            print("asked", flush=True)  # its person is answering: it is killed meanwhile
            threading.Event().wait()
        answered[0] += 1
        return {key: {"action": "accept", "content": {"name": name}}}

    answered = [0]
    with mt.Client.http(url, store=store) as client:
        mine = [mt.call_tool(client, "ask", {"n": n}) for n in range(tasks)]
        print("started", " ".join(t.task_id for t in mine), flush=True)
        for status in mt.wait_all(client, mine, input=answer, timeout=120, poll_interval=0.02):
            assert status.status is mt.TaskState.COMPLETED, status
    while store.unfinished():  # the dead worker's tasks, once their leases are free
        for future in mt.adopt(store, input=answer, timeout=120, poll_interval=0.02):
            print("adopted", future.task_id, future.result()["structuredContent"]["name"], flush=True)
        threading.Event().wait(0.05)  # a worker's pause between claims
    store.close()
    print("done", flush=True)
    """
)


class Served(GatedReference):
    """The reference server: ``ask`` needs a name, then waits for the gate; each tasks/update's
    keys are noted by task."""

    def __init__(self) -> None:
        super().__init__()
        self.updates: list[tuple[str, str]] = []
        self.answered = threading.Condition()

        def noted(method: str, params: dict[str, Any]) -> None:
            if method == "tasks/update":
                with self.answered:
                    self.updates.extend((params["taskId"], key) for key in params["inputResponses"])
                    self.answered.notify_all()

        self.server.on_request = noted

        @self.server.tool(task="required")
        def ask(ctx: Any, n: int) -> dict[str, Any]:
            answer = ctx.elicit("name", "Who answers?", SCHEMA)
            self.held(ctx)
            return {"n": n, "name": answer["content"]["name"]}


@pytest.fixture
def served() -> Iterator[Served]:
    with Served() as served:
        yield served


def worker(url: str, location: str, name: str) -> subprocess.Popen[str]:
    return python(WORKER, url, location, name, str(TASKS))


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the workers' store is: a SQLite file, or a database of the tests' PostgreSQL."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("pg_url")
        return url
    return str(tmp_path / "tasks.sqlite3")


def test_the_tasks_of_a_worker_killed_mid_wait_are_adopted_and_answered_once(served: Served, location: str) -> None:
    with mt.open_store(location):  # made before the workers share it
        pass
    names = ["victim", "w1", "w2"]
    workers = {name: worker(served.url, location, name) for name in names}
    started = {name: line_of(process, "started").split()[1:] for name, process in workers.items()}
    victim = workers.pop("victim")
    line_of(victim, "asked")  # two of its tasks answered, its person answering the third
    victim.kill()
    victim.communicate()
    live = {task_id for name in ("w1", "w2") for task_id in started[name]}
    with served.answered:  # each live wait answered its task, so it holds the lease: nobody adopts those
        assert served.answered.wait_for(lambda: live <= {task_id for task_id, _ in served.updates}, timeout=120)
    served.gate.set()  # every task may complete now
    outputs = {name: process.communicate(timeout=300) for name, process in workers.items()}
    assert all(process.returncode == 0 for process in workers.values()), outputs
    lines = [line.split() for out, _ in outputs.values() for line in out.splitlines()]
    adopted = [parts[1] for parts in lines if parts[0] == "adopted"]
    assert sorted(adopted) == sorted(started["victim"]), outputs  # each adopted by one worker only
    ended = Counter(parts[1] for parts in lines if parts[0] == "ended")
    everyone = [task_id for ids in started.values() for task_id in ids]
    assert sorted(ended) == sorted(everyone) and set(ended.values()) == {1}  # each end recorded once
    assert Counter(served.updates) == Counter({(task_id, "name"): 1 for task_id in everyone})  # answered once
    given = Counter(parts[2] for parts in lines if parts[0] == "adopted")
    assert given["victim"] == 2 and given["w1"] + given["w2"] == TASKS - 2  # the adopters answered the rest
    with mt.open_store(location) as store:
        assert store.unfinished() == []
        assert all((store.get(t) or mt.TaskRef("x", t)).finished for t in everyone)
