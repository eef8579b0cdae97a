"""Guards of `mcp_tasks.celery`'s chain of checks, end to end with real parts (a redis-server,
prefork `celery worker` processes, the reference server over HTTP behind a link the test cuts):
a check that cannot reach the server ends without a trace and its chain resumes once the link is
back, never a FAILURE; and a check that ran late holds its chain's lease longer, so that a
sweeper does not take a late chain for a lost one.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from celery import states
from celery.exceptions import TaskRevokedError

import mcp_tasks as mt
from mcp_tasks._store import open_store
from mcp_tasks.celery._chain import Chain, lease_key, new_token
from tests.celery.conftest import Fleet, Worker, app_of, state_becomes, task_id_of
from tests.foreign.cut_link import CutLink

# One Redis and one pair of workers for the module: its tests run on one xdist worker.
pytestmark = pytest.mark.xdist_group("celery")


def said(worker: Worker, result: Any, words: str) -> None:
    """Read the worker's lines (every 50 ms) until one says `words`; fail if the result ends or
    the worker dies first.
    """
    while not any(words in line for line in list(worker.lines)):
        now = result.state
        assert now not in states.READY_STATES, f"the result ended {now} ({result.result!r}) before: {words!r}"
        assert worker.process.poll() is None, "the worker died:\n" + "".join(worker.lines[-40:])
        threading.Event().wait(0.05)


def test_a_check_that_cannot_reach_the_server_ends_without_a_trace_and_its_chain_resumes(fleet: Fleet) -> None:
    # The checks have a queue of their own, taken by a worker started while the link is cut: its
    # processes never agreed a session with the server, so its first check fails where it finds
    # the call's task (`_called`), not where it reads it.
    mcp = app_of(fleet).mcp
    served = fleet.served
    tag = uuid.uuid4().hex[:6]
    starts, checks = f"guard-start-{tag}", f"guard-checks-{tag}"
    env = {**fleet.env, "MCP_CELERY_CHECKS": checks}
    upstream = urlsplit(served.url)
    assert upstream.hostname is not None and upstream.port is not None
    workers: list[Worker] = []
    with CutLink((upstream.hostname, upstream.port)) as link:
        endpoint = link.url_of(served.url)
        try:
            workers.append(Worker(f"guard-start-{tag}", env, queue=starts))
            result = mcp.call.apply_async((endpoint, "work", {"n": 90, "seconds": 600}), queue=starts)
            state_becomes(result, "STARTED")  # its first check waits in the checks' queue
            link.down()
            workers.append(Worker(f"guard-checks-{tag}", env, queue=checks))
            said(workers[1], result, "could not read its task now")
            assert link.resets > 0
            gets = served.gets  # none reached the server while the link was cut
            link.up()
            served.until(lambda: served.gets > gets)  # the chain resumed: a sweeper sent a check again
            assert result.state == "STARTED"
            task_id = task_id_of(fleet, endpoint, result)
            with mt.Client.http(served.url) as client:  # on the server itself, not through the link
                mt.cancel_task(client, task_id)
            with pytest.raises(TaskRevokedError):
                result.get(timeout=60)
        finally:
            for worker in workers:
                worker.close()
    assert served.calls[("work", 90)] == 1
    lines = [line for worker in workers for line in worker.lines]
    assert not [line for line in lines if "Traceback" in line]


def test_a_late_check_holds_its_chains_lease_twice_as_much_longer(tmp_path: Path) -> None:
    # A busy fleet runs every check late: were its lease to lapse at the next check's due time
    # plus `quiet` alone, a sweeper would take each late chain for a lost one and copy its check.
    store = open_store(tmp_path / "leases.sqlite3")
    try:
        on_time = Chain(store, "on-time", None, quiet=0.0)
        assert on_time.begin()
        assert on_time.keep(0.0, late=0.0)  # due now, nothing to wait for: lapsed at once
        assert store.acquire(lease_key("on-time"), new_token(), 5.0)  # a sweeper takes it

        late = Chain(store, "late", None, quiet=0.0)
        assert late.begin()
        before = time.time()
        assert late.keep(0.0, late=600.0)  # due now too, but this run was 600 s late
        after = time.time()
        assert not store.acquire(lease_key("late"), new_token(), 5.0)  # a sweeper leaves it be
        with contextlib.closing(sqlite3.connect(tmp_path / "leases.sqlite3")) as db:  # its expiry, as kept
            ((expires,),) = db.execute("SELECT expires FROM leases WHERE task_id = ?", (lease_key("late"),))
        assert before + 2 * 600.0 <= expires <= after + 2 * 600.0  # twice how late the run was
    finally:
        store.close()
