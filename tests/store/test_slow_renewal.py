"""A lease is kept over a slow link to PostgreSQL: each renewal is given a third of the time its
lease has left (at least `RENEW_PATIENCE`), where a bound of one second cut every try on a link
whose answers come a second late (the connection cut at its deadline, a new one several round
trips away), so every renewal failed and leases lapsed on a working database (issue 33's bench:
16 tasks delivered twice). Through a socket-level proxy of the tests' own.
"""

from __future__ import annotations

import threading
import time

import mcp_tasks as mt
from mcp_tasks._store import Renewer, new_holder
from tests.foreign.slow_link import SlowLink

TTL = 30.0
LATE = 1.2  # seconds each answer comes late: a round trip is more than RENEW_PATIENCE


class Noted(mt.PostgresTaskStore):
    """Says each renewal's outcome (True, False, or the error) as it comes."""

    def __init__(self, url: str, pool_size: int = 10) -> None:
        super().__init__(url, lease_ttl=TTL, pool_size=pool_size)
        self.outcomes: list[object] = []
        self.came = threading.Event()

    def renew(self, task_id: str, holder: str, ttl: float) -> bool:
        try:
            kept = super().renew(task_id, holder, ttl)
        except mt.StoreError as exc:
            self.outcomes.append(exc)
            self.came.set()
            raise
        self.outcomes.append(kept)
        self.came.set()
        return kept


def test_a_renewal_over_a_slow_link_keeps_the_lease(
    pg_store: mt.PostgresTaskStore, pg_url: str, pg_slow_link: SlowLink
) -> None:
    holder = new_holder()
    assert pg_store.acquire("task-1", holder, TTL)  # taken over the fast link
    store = Noted(pg_slow_link.url_of(pg_url))
    renewer = Renewer()
    try:
        assert store.get("task-1") is None  # its pooled connection opened while the link is fast
        assert store.renew("task-1", holder, TTL)  # and the renewals' own
        pg_slow_link.delay = LATE
        store.outcomes.clear()
        store.came.clear()
        # Taken a third of a ttl ago: due at once (two thirds of its ttl left).
        renewer.hold(store, "task-1", holder, TTL, taken_at=time.monotonic() - TTL / 3)
        assert store.came.wait(60)
    finally:
        renewer.close()
        renewer.join()
        store.close()
    assert store.outcomes[0] is True  # the old bound: a StoreError (cut at one second)


def test_a_renewal_does_not_wait_behind_the_stores_other_calls(
    pg_store: mt.PostgresTaskStore, pg_url: str, pg_slow_link: SlowLink
) -> None:
    """Many calls in flight on the slow link hold every pooled connection for seconds (three
    round trips a transaction): a renewal that queued for one waited past its bound, and the
    lease lapsed on a working database (issue 33's bench: 15 tasks delivered twice). The
    renewals have a connection of their own.
    """
    holder = new_holder()
    assert pg_store.acquire("task-1", holder, TTL)
    store = Noted(pg_slow_link.url_of(pg_url), pool_size=2)
    renewer = Renewer()
    stop, busy = threading.Event(), threading.Semaphore(0)
    flooders = [threading.Thread(target=_flood, args=(store, stop, busy), name="flood") for _ in range(6)]
    try:
        assert store.renew("task-1", holder, TTL)  # connections opened while the link is fast
        store.outcomes.clear()
        store.came.clear()
        pg_slow_link.delay = 1.0
        for thread in flooders:
            thread.start()
        for _ in flooders:
            busy.acquire()  # every flooder has a call in flight, or queued for a connection
        renewer.hold(store, "task-1", holder, TTL, taken_at=time.monotonic() - TTL / 3)  # due at once
        assert store.came.wait(60)
    finally:
        stop.set()
        renewer.close()
        renewer.join()
        for thread in flooders:
            thread.join(60)
        store.close()
    assert store.outcomes[0] is True  # main: "no connection within the caller's deadline"


def _flood(store: mt.PostgresTaskStore, stop: threading.Event, busy: threading.Semaphore) -> None:
    first = True
    while not stop.is_set():
        if first:
            busy.release()
            first = False
        store.unfinished()
