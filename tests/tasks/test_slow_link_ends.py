"""A task's end on a slow link is recorded before its lease can lapse (issue 33's bench: tasks
of the worker on a link a second slow were adopted and delivered twice). The end of a future
(`finish_many`) was a transaction of eight round trips, cut at its five seconds; the end was
then kept by the client with its lease no longer renewed, and retried with a second's patience,
in which nothing fits on such a link: the lease lapsed and another worker claimed the task. Now
an end is two round trips (pipeline mode), a kept end's lease is renewed until it is recorded,
and a retry has the patience of a slow link. Through the tests' socket-level proxy to a real
PostgreSQL; a worker elsewhere is played by `claim` over the fast link.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._store import new_holder
from tests.foreign.slow_link import SlowLink
from tests.processes import GatedJobs as Jobs

LATE = 1.0  # seconds each answer of the database comes late: the bench's slow link
SHORT_TTL = 3.0
RENEWALS = 5  # renewals of a kept end's lease, a third of a ttl apart: more than a ttl in all


@pytest.fixture
def jobs() -> Iterator[Jobs]:
    with Jobs() as served:
        yield served


def _finished(store: mt.TaskStore, task_id: str) -> bool:
    kept = store.get(task_id)
    return kept is not None and kept.finished


def _claimed_before_recorded(elsewhere: mt.TaskStore, task_id: str, ttl: float, enough: Any = None) -> list[str]:
    """Claim as a worker elsewhere would until the end of `task_id` is recorded (or `enough()`
    says the test has seen what it waits for): the tasks it got (none: the lease never lapsed).
    """
    adopter = new_holder()
    while not _finished(elsewhere, task_id) and not (enough is not None and enough()):
        got = [ref.task_id for ref in elsewhere.claim(adopter, ttl, 10)]
        if got:
            return got
        time.sleep(0.1)  # a worker's claim loop; pytest-timeout guards a hang
    return []


@pytest.mark.timeout(120)
def test_an_end_over_a_link_a_second_slow_is_recorded_before_its_lease_lapses(
    jobs: Jobs, pg_url: str, pg_store: mt.PostgresTaskStore, pg_slow_link: SlowLink
) -> None:
    store = mt.PostgresTaskStore(pg_slow_link.url_of(pg_url))  # the default lease: 15 s, as the bench's
    try:
        with mt.Client.http(jobs.url, store=store) as client:
            seen = threading.Event()
            future = mt.submit(client, "job", {"n": 0}, on_status=lambda status: seen.set())
            task_id = future.task_id or ""
            assert seen.wait(60)  # its wait holds the lease (taken before its first read)
            pg_slow_link.delay = LATE  # from now on every answer of the database comes a second late
            jobs.gate.set()
            assert future.result(timeout=60)["structuredContent"] == {"n": 0}
            # main: the end cut at 5 s, retried with 1 s each; the lease lapsed, and was claimed
            assert _claimed_before_recorded(pg_store, task_id, 60.0) == []
            assert _finished(pg_store, task_id)
    finally:
        store.close()


class Refusing(mt.PostgresTaskStore):
    """Refuses every task's end while `refusing` is set (a store that cannot take them yet);
    counts the renewals that keep leases meanwhile.
    """

    def __init__(self, url: str) -> None:
        super().__init__(url, lease_ttl=SHORT_TTL)
        self.refusing = threading.Event()
        self.renewed = 0
        self.lock = threading.Lock()

    def _refuse(self) -> None:
        if self.refusing.is_set():
            raise mt.StoreError("the test's store takes no end yet")

    def finish_many(self, ends: Sequence[tuple[str, mt.Status, str | None]]) -> None:
        self._refuse()
        super().finish_many(ends)

    def update(self, task_id: str, status: mt.Status, *, holder: str | None = None) -> None:
        self._refuse()
        super().update(task_id, status, holder=holder)

    def _count(self, kept: Sequence[bool]) -> None:
        with self.lock:
            if self.refusing.is_set():
                self.renewed += sum(kept)

    def renew(self, task_id: str, holder: str, ttl: float) -> bool:
        kept = super().renew(task_id, holder, ttl)
        self._count([kept])
        return kept

    def renew_many(self, leases: Sequence[tuple[str, str]], ttl: float) -> list[bool]:
        kept = super().renew_many(leases, ttl)
        self._count(kept)
        return kept


@pytest.mark.timeout(120)
def test_the_lease_of_an_end_kept_by_the_client_is_renewed_until_it_is_recorded(
    jobs: Jobs, pg_url: str, pg_store: mt.PostgresTaskStore
) -> None:
    store = Refusing(pg_url)
    try:
        with mt.Client.http(jobs.url, store=store) as client:
            future = mt.submit(client, "job", {"n": 0})
            task_id = future.task_id or ""
            store.refusing.set()
            jobs.gate.set()
            future.result(timeout=60)  # its end refused, kept by the client

            def renewed_past_a_ttl() -> bool:
                with store.lock:
                    return store.renewed >= RENEWALS

            # main: the kept end's lease was not renewed (only re-taken at each retry, which
            # backs off past the ttl): it lapsed and was claimed
            assert _claimed_before_recorded(pg_store, task_id, 60.0, renewed_past_a_ttl) == []
            store.refusing.clear()
            assert _claimed_before_recorded(pg_store, task_id, 60.0) == []
            assert _finished(pg_store, task_id)
        assert list(mt.adopt(pg_store, timeout=5)) == []
    finally:
        store.close()


@pytest.mark.timeout(120)
def test_a_call_over_a_link_a_second_slow_records_its_task_within_its_deadline(
    jobs: Jobs, pg_url: str, pg_store: mt.PostgresTaskStore, pg_slow_link: SlowLink
) -> None:
    """The call's intent (four round trips) and its task's record with the starter's lease (six)
    took ten seconds on such a link: a call of 5 s could not record its task (the bench's slow
    worker: calls failed, or ended with their id never recorded). Now three round trips.
    """
    store = mt.PostgresTaskStore(pg_slow_link.url_of(pg_url))
    try:
        with mt.Client.http(jobs.url, store=store) as client:
            assert store.unfinished() == []  # its pooled connection opened while the link is fast
            pg_slow_link.delay = LATE
            future = mt.submit(client, "job", {"n": 0}, timeout=5.0)
            task_id = future.task_id or ""
            kept = pg_store.get(task_id)
            assert kept is not None and not kept.finished  # main: None, its join kept for a later call
            jobs.gate.set()
            future.result(timeout=60)
    finally:
        store.close()


class NoJoins(mt.PostgresTaskStore):
    """Refuses to join a call's task to its intent (the task's record) while `refusing` is set:
    the store a slow link or an outage made miss that write.
    """

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.refusing = threading.Event()

    def join_intent(self, endpoint: str, key: str, **given: Any) -> None:
        if self.refusing.is_set():
            raise mt.StoreError("the test's store takes no join yet")
        super().join_intent(endpoint, key, **given)


@pytest.mark.timeout(120)
def test_a_task_that_ends_before_its_record_is_written_is_recorded_finished(
    jobs: Jobs, pg_url: str, pg_store: mt.PostgresTaskStore
) -> None:
    """Its wait found no record to write the end into, and the record the client wrote later (at
    its next call) was the call's, unfinished, with a lease nobody renewed: adopted and delivered
    again (issue 33's bench, the slow link and the stopped database).
    """
    store = NoJoins(pg_url)
    try:
        with mt.Client.http(jobs.url, store=store) as client:
            store.refusing.set()
            future = mt.submit(client, "job", {"n": 0})  # its record kept by the client
            task_id = future.task_id or ""
            jobs.gate.set()
            future.result(timeout=60)
            assert pg_store.get(task_id) is None
            store.refusing.clear()
            mt.submit(client, "job", {"n": 1}).result(timeout=60)  # the next call writes it
            kept = pg_store.get(task_id)
            assert kept is not None and kept.finished  # main: unfinished, and adopted later
    finally:
        store.close()
