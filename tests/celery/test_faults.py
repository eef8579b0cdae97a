"""Faults under `mcp_tasks.celery`, with real parts (a redis-server, prefork `celery worker`
processes, the reference server over HTTP): a result backend that fails as a check reads the
answers left for it, or as the first run describes its chain, loses neither the call nor the
answer; and with workers SIGKILLed mid-follow, every result arrives, each tool is called once
and each input key is answered once, whether the workers' handlers answer or another process;
and a sweeper copies no check while its queue holds messages.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from celery.exceptions import TaskRevokedError
from celery.exceptions import TimeoutError as CeleryTimeout

import mcp_tasks as mt
from mcp_tasks._store import TaskRef, open_store
from mcp_tasks.celery._chain import record_key, write_record
from mcp_tasks.celery._clients import Clients
from mcp_tasks.celery._sweep import Sweeper
from tests.celery.conftest import Fleet, Worker, app_of, state_becomes, task_id_of
from tests.conftest import ROOT

# One Redis and one pair of workers for the module: its tests run on one xdist worker.
pytestmark = pytest.mark.xdist_group("celery")

ACCEPT = {"action": "accept", "content": {"name": "a person"}}


def flaky(fleet: Fleet, tmp_path: Path, at: str) -> tuple[Worker, Path]:
    """A worker of its own queue (named `at`) whose result backend fails once at `at`."""
    marker = tmp_path / f"failed-{at}"
    env = {**fleet.env, "MCP_CELERY_FLAKY": str(marker), "MCP_CELERY_FLAKY_AT": at}
    return Worker(f"flaky-{at}", env, queue=f"flaky-{at}"), marker


def test_a_backend_failing_as_a_check_reads_the_answers_loses_neither_call_nor_answer(
    fleet: Fleet, tmp_path: Path
) -> None:
    mcp = app_of(fleet).mcp
    served = fleet.served
    worker, marker = flaky(fleet, tmp_path, "answers")
    try:
        result = mcp.call.apply_async((served.url, "ask", {"n": 50}), queue="flaky-answers")
        state_becomes(result, "INPUT_REQUIRED")
        (key,) = result.info["inputRequests"]
        mcp.answer(result.id, {key: ACCEPT})
        assert result.get(timeout=120)["structuredContent"] == {"n": 50, "name": "a person"}
    finally:
        worker.close()
    assert marker.exists()  # the backend did fail as the answers waited
    assert served.calls[("ask", 50)] == 1
    assert served.updates["name-50"] == 1
    assert len([line for line in worker.lines if "could not read the answers left for it" in line]) == 1
    assert not [line for line in worker.lines if "Traceback" in line]


def test_a_chain_whose_record_failed_at_the_first_run_is_described_at_its_next_check(
    fleet: Fleet, tmp_path: Path
) -> None:
    # Without its record, no sweeper could start the chain again were the broker to lose a check.
    mcp = app_of(fleet).mcp
    served = fleet.served
    worker, marker = flaky(fleet, tmp_path, "record")
    try:
        result = mcp.call.apply_async((served.url, "work", {"n": 51, "seconds": 600}), queue="flaky-record")
        state_becomes(result, "STARTED")  # shown by the first run, once it tried the record
        assert marker.exists()
        task_id = task_id_of(fleet, served.url, result)
        gets = served.gets
        served.until(lambda: served.gets >= gets + 2)  # a check ran after the failed write
        with redis.Redis.from_url(f"{fleet.redis.url}/1") as backend:
            record = backend.get(record_key(task_id))
        assert record is not None
        result.revoke()
        served.until(lambda: 51 in served.cancelled)
    finally:
        worker.close()
    assert served.calls[("work", 51)] == 1


def test_a_backend_failing_as_a_check_stores_a_revoke_leaves_it_to_the_next_check(fleet: Fleet, tmp_path: Path) -> None:
    # The task is cancelled on the server by someone else; the check that sees it cannot store
    # the revoke: no FAILURE, and the chain goes on to store it at its next check (the store
    # holds the task as ended: no sweeper would look at it).
    mcp = app_of(fleet).mcp
    served = fleet.served
    worker, marker = flaky(fleet, tmp_path, "revoked")
    try:
        result = mcp.call.apply_async((served.url, "work", {"n": 52, "seconds": 600}), queue="flaky-revoked")
        state_becomes(result, "STARTED")
        task_id = task_id_of(fleet, served.url, result)
        with mt.Client.http(served.url) as client:
            mt.cancel_task(client, task_id)
        with pytest.raises(TaskRevokedError):
            result.get(timeout=120)
    finally:
        worker.close()
    assert marker.exists()  # the backend did fail as the revoke was stored
    assert served.calls[("work", 52)] == 1
    assert len([line for line in worker.lines if "could not store its revoke" in line]) == 1
    assert not [line for line in worker.lines if "Traceback" in line]


ANSWERER = textwrap.dedent(
    """
    import sys, time
    from celery import states
    from tests.celery.worker_app import app, mcp
    accept = {"action": "accept", "content": {"name": "a person"}}
    left, answered = set(sys.argv[1:]), set()
    while left:
        for rid in sorted(left):
            meta = app.backend.get_task_meta(rid, cache=False)  # state and info of one read
            if meta["status"] in states.READY_STATES:
                left.discard(rid)
            elif meta["status"] == "INPUT_REQUIRED":
                keys = set(meta["result"]["inputRequests"]) - answered  # each shown key answered once
                if keys:
                    mcp.answer(rid, {key: accept for key in keys})
                    answered |= keys
        time.sleep(0.05)
    """
)


def answered(result: Any, answerer: subprocess.Popen[str]) -> Any:
    """The call's result, waited for up to 90 s; a failure saying so as soon as the answerer
    process ends without having answered every call (its error would leave the result waiting).
    """
    for _ in range(90):
        try:
            return result.get(timeout=1)
        except CeleryTimeout:
            if answerer.poll() not in (None, 0):
                _, errors = answerer.communicate()
                pytest.fail(f"the answering process failed: {errors}")
    pytest.fail(f"no result within 90 s: {result.state} {result.info!r}")


def test_with_workers_killed_mid_follow_each_input_key_is_answered_once(fleet: Fleet) -> None:
    # Half the calls are answered by the handlers of two workers of their own, half by another
    # process through mcp.answer; once answers flow, one worker of each kind is SIGKILLed.
    mcp = app_of(fleet).mcp
    served = fleet.served
    queue = "answering-" + uuid.uuid4().hex[:6]
    env = {**fleet.env, "MCP_CELERY_HANDLERS": "1"}
    answering: list[Worker] = []
    answerer: subprocess.Popen[str] | None = None
    by_handlers, by_person = range(60, 66), range(70, 76)
    results: dict[int, Any] = {}
    try:
        answering += [Worker(f"{queue}-{i}", env, queue=queue) for i in range(2)]
        for n in by_handlers:
            results[n] = mcp.call.apply_async((served.url, "form", {"n": n}), queue=queue)
        results |= {n: mcp.call.delay(served.url, "form", {"n": n}) for n in by_person}
        answerer = subprocess.Popen(
            [sys.executable, "-c", ANSWERER, *(results[n].id for n in by_person)],
            env={**fleet.env, "PYTHONPATH": str(ROOT)},
            stderr=subprocess.PIPE,
            text=True,
        )
        # Killed as answers flow: some keys answered, most not yet.
        served.until(lambda: sum(served.updates.values()) >= 6)
        answering.pop(0).kill()
        fleet.workers.pop(0).kill()
        fleet.workers.append(Worker("d-" + uuid.uuid4().hex[:6], fleet.env))  # whole again for later tests
        for n, result in results.items():
            name = "the worker" if n in by_handlers else "a person"
            assert answered(result, answerer)["structuredContent"] == {"n": n, "names": [name] * 3}
        _, errors = answerer.communicate(timeout=60)
        assert answerer.returncode == 0, errors
    finally:
        if answerer is not None and answerer.poll() is None:
            answerer.kill()
            answerer.communicate()
        for worker in answering:
            worker.close()
    assert {n: served.calls[("form", n)] for n in results} == {n: 1 for n in results}
    keys = [f"{part}-{n}" for n in results for part in "abc"]
    assert {key: served.updates[key] for key in keys} == {key: 1 for key in keys}


def test_the_sweeper_copies_no_check_while_its_queue_holds_messages(fleet: Fleet, tmp_path: Path) -> None:
    # In a busy fleet a quiet chain's check is most likely in its queue, late: a copy would only
    # lengthen the queue (bench/celery_fleet.py saw 1.7 copies a call). Once drained, it is sent.
    worker_app = app_of(fleet)
    app = worker_app.app
    queue = "idle-" + uuid.uuid4().hex[:6]  # a queue no worker takes from
    store = open_store(tmp_path / "sweep.sqlite3")  # this test's call is its only unfinished task
    task_id, celery_id = "sweep-" + uuid.uuid4().hex, str(uuid.uuid4())
    store.record(TaskRef(endpoint=fleet.served.url, task_id=task_id, tool="work"))
    args = [fleet.served.url, "work", {"n": 80, "seconds": 1}]
    write_record(app.backend, task_id, {"id": celery_id, "args": args, "kwargs": {}, "queue": queue})
    sweeper = Sweeper(app, worker_app.mcp.call, Clients(store, None, lambda e: None, lambda e: None), quiet=5.0)
    try:
        app.send_task("tests.nothing", queue=queue)  # a message waiting in the chain's queue
        assert sweeper.sweep() == 0
        with app.connection_for_write() as connection:
            connection.default_channel.queue_purge(queue)
        assert sweeper.sweep() == 1  # drained: the quiet chain gets its check
        assert sweeper.sweep() == 0  # which now holds its lease
    finally:
        with app.connection_for_write() as connection:
            connection.default_channel.queue_purge(queue)
        store.close()
