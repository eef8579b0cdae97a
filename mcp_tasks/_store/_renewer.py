"""Leases kept alive while their waits wait: a `Renewer`'s one daemon thread renews every lease
held through it a third of a ttl before it would lapse, so a person taking their time to answer
does not lose the task to another process. The thread starts with the first lease held and is
joined when the last one is let go, or when its `closing` signal is set (a client's: the tasks
code keeps one renewer per client) and it is closed.

`hold` and `let_go` use one renewer per store, with no closing signal of its own.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
import time
from typing import Any

from mcp_tasks._clock import wait_condition
from mcp_tasks._redact import short_id
from mcp_tasks._store._bound import Hurry, store_deadline
from mcp_tasks._store._protocol import TaskStore
from mcp_tasks._threads import join_all

__all__ = ["Lease", "Renewer", "hold", "let_go", "renewal_bound"]

log = logging.getLogger("mcp_tasks")

RENEW_PATIENCE = 1.0
"""Seconds one renewal waits for a busy store at least before it is tried again; more when its
lease has longer left (`renewal_bound`)."""
THREAD = "mcp_tasks-lease-renewer"


def renewal_bound(lapse: float, now: float) -> float:
    """When a renewal begun `now` gives up (monotonic), its lease lapsing at `lapse`: a third of
    the time the lease has left, `RENEW_PATIENCE` at least, never past the lapse. A slow link
    (each round trip a second, a new connection several) still renews, where a bound of one
    second cut every try and let the lease lapse; a renewal that failed is tried again soon.
    """
    return min(lapse, now + max(RENEW_PATIENCE, (lapse - now) / 3))


class Failures:
    """The renewals that failed in a row, per store: an outage is said twice (a warning when the
    first fails, one with the count when a renewal succeeds again), each failure in between at
    debug level, not a warning every second for as long as it lasts.
    """

    def __init__(self) -> None:
        self.count: dict[int, int] = {}

    def failed(self, store: TaskStore) -> bool:
        """A renewal in `store` failed: True when it is the first in a row (warn)."""
        key = id(store)
        self.count[key] = self.count.get(key, 0) + 1
        return self.count[key] == 1

    def renewed(self, store: TaskStore) -> int:
        """A renewal in `store` succeeded: how many had failed in a row before (0: none, say nothing)."""
        return self.count.pop(id(store), 0)


class Lease:
    """A lease a wait holds on a task: renewed in the background until let go; `lost` once a
    renewal found another holder (the lease had lapsed and was taken).
    """

    def __init__(self, store: TaskStore, task_id: str, holder: str, ttl: float, taken_at: float | None = None) -> None:
        self.store = store
        self.task_id = task_id
        self.holder = holder
        self.ttl = ttl
        self.renewed = time.monotonic() if taken_at is None else taken_at
        self.lost = False


class Renewer:
    """One thread that renews the leases held through it, in any store. It sleeps until the
    next lease is due, a lease is added, the last is let go, or `closing` is set (then `close()`
    wakes it, and it renews nothing more: the waits it renewed for are ending). Its `hurry` is
    set by `close()` too: a renewal under way, and the store calls of the waits that follow it,
    then end within `QUICK` seconds, whatever the store does.
    """

    def __init__(self, closing: threading.Event | None = None) -> None:
        self.closing = closing or threading.Event()
        self.hurry = Hurry()
        self.passing = Hurry()  # this pass's: set when its renewals are no use any more (`let_go`, `close`)
        self.leases: set[Lease] = set()
        self.wake = threading.Condition()
        self.thread: threading.Thread | None = None
        self.stopping = False
        self.failures = Failures()  # written by its thread only

    def hold(self, store: TaskStore, task_id: str, holder: str, ttl: float, taken_at: float | None = None) -> Lease:
        """Keep renewing the lease `holder` has taken on `task_id` in `store`, until `let_go`
        (once closing, the lease is kept as it is: nothing renews it). `taken_at`: when it was
        taken (monotonic; None: just now), where its renewal clock starts.
        """
        lease = Lease(store, task_id, holder, ttl, taken_at)
        with self.wake:
            if self.closing.is_set():
                return lease
            self.leases.add(lease)
            if self.thread is None or not self.thread.is_alive():  # none yet, or a forked child's
                self.stopping = False
                self.thread = threading.Thread(target=self._run, name=THREAD, daemon=True)
                self.thread.start()
            self.wake.notify()
        return lease

    def let_go(self, lease: Lease) -> None:
        """Stop renewing `lease` (the caller then releases it); with the last lease, the thread
        ends and is joined.
        """
        with self.wake:
            if lease not in self.leases:
                return
            self.leases.discard(lease)
            self.wake.notify()
            if self.leases:
                return
            thread, self.thread, self.stopping = self.thread, None, True
            passing = self.passing
        if thread is not None:
            passing.set()  # a renewal under way (a slow store's) ends within QUICK: nothing left to renew
            join_all([thread], RENEW_PATIENCE + 1.0)

    def close(self) -> None:
        """Renew nothing more and end the thread (the closing signal is set); the store calls
        under way are hurried.
        """
        with self.wake:
            self.stopping = True
            self.wake.notify_all()
            passing = self.passing
        self.hurry.set()
        passing.set()

    def join(self, timeout: float = RENEW_PATIENCE + 1.0) -> None:
        """Join the thread (a renewal under way was hurried by `close`)."""
        with self.wake:
            thread, self.thread = self.thread, None
            self.leases.clear()
        if thread is not None:
            join_all([thread], timeout)

    def _run(self) -> None:
        contextvars.Context().run(self._loop)  # no store bound of the thread that started it

    def _over(self) -> bool:
        return self.stopping or self.closing.is_set() or threading.current_thread() is not self.thread

    def _loop(self) -> None:
        while True:
            with self.wake:
                while not self._over():
                    due = self._due()
                    if due is not None and due <= time.monotonic():
                        break
                    wait_condition(self.wake, due)
                if self._over():
                    return
                leases = self._batches()
                self.passing = passing = Hurry()
            for batch in leases:
                if self.closing.is_set():
                    return
                many = getattr(batch[0].store, "renew_many", None)
                with store_deadline(None, passing):
                    if callable(many) and len(batch) > 1:
                        self._renew_batch(batch, many)
                    else:
                        for lease in batch:
                            self._renew(lease)

    def _due(self) -> float | None:
        """When a lease needs renewing next (on the monotonic clock; a lease lost needs nothing)."""
        dues = [lease.renewed + lease.ttl / 3 for lease in self.leases if not lease.lost]
        return min(dues) if dues else None

    def _batches(self) -> list[list[Lease]]:
        """The leases to renew now, by store and ttl: those due, with those of their store that
        are a sixth of a ttl old or more (renewed a little early, so that one call renews them).
        """
        now = time.monotonic()
        due: dict[tuple[int, float], list[Lease]] = {}
        for lease in self.leases:
            if not lease.lost and now - lease.renewed >= lease.ttl / 6:
                due.setdefault((id(lease.store), lease.ttl), []).append(lease)
        return [batch for batch in due.values() if any(now - lease.renewed >= lease.ttl / 3 for lease in batch)]

    def _failed(self, store: TaskStore, what: str, exc: Exception) -> None:
        if self.failures.failed(store):
            log.warning("%s: %s (said once; renewals go on, each tried again soon)", what, exc)
        else:
            log.debug("%s (%d failed in a row): %s", what, self.failures.count[id(store)], exc)

    def _succeeded(self, store: TaskStore) -> None:
        failed = self.failures.renewed(store)
        if failed:
            log.warning("leases renewed again in %r, after %d failed renewal(s)", store, failed)

    def _renew_batch(self, batch: list[Lease], many: Any) -> None:
        """Renew `batch` (one store, one ttl) with the store's ``renew_many``: one round trip."""
        started = time.monotonic()
        first = batch[0]
        try:
            lapse = min(lease.renewed + lease.ttl for lease in batch)
            with store_deadline(renewal_bound(lapse, started)):
                kept = list(many([(lease.task_id, lease.holder) for lease in batch], first.ttl))
            if len(kept) != len(batch):
                raise ValueError(f"renew_many returned {len(kept)} answers for {len(batch)} leases")
            self._succeeded(first.store)
        except Exception as exc:  # try again soon, one by one if it goes on
            self._failed(first.store, f"could not renew {len(batch)} leases", exc)
            for lease in batch:
                lease.renewed = max(lease.renewed, started - lease.ttl / 3 + min(lease.ttl / 6, RENEW_PATIENCE))
            return
        for lease, held in zip(batch, kept, strict=True):
            if held:
                lease.renewed = started
            else:
                lease.lost = True
                log.info("task %s: its lease lapsed and another wait took it", short_id(lease.task_id))

    def _renew(self, lease: Lease) -> None:
        started = time.monotonic()
        try:
            # No use once it has lapsed; a slow store is given a third of the time left.
            with store_deadline(renewal_bound(lease.renewed + lease.ttl, started)):
                kept = lease.store.renew(lease.task_id, lease.holder, lease.ttl)
        except Exception as exc:  # try again soon; the lease lapses if this goes on for its ttl
            self._failed(lease.store, f"task {short_id(lease.task_id)}: could not renew its lease", exc)
            lease.renewed = max(lease.renewed, started - lease.ttl / 3 + min(lease.ttl / 6, RENEW_PATIENCE))
            return
        self._succeeded(lease.store)
        if kept:
            lease.renewed = started
        else:
            lease.lost = True
            log.info("task %s: its lease lapsed and another wait took it", short_id(lease.task_id))


_renewers: dict[int, Renewer] = {}
_lock = threading.Lock()


def _forked() -> None:
    """A forked child has none of its parent's threads: its leases need renewers of its own."""
    global _lock
    _renewers.clear()
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def hold(store: TaskStore, task_id: str, holder: str, ttl: float) -> Lease:
    """Keep renewing the lease `holder` has just taken on `task_id` in `store`, until `let_go`
    (one renewer per store).
    """
    with _lock:
        renewer = _renewers.setdefault(id(store), Renewer())
        return renewer.hold(store, task_id, holder, ttl)


def let_go(lease: Lease) -> None:
    """Stop renewing a lease `hold` kept (the caller then releases it); the store's renewer
    thread ends and is joined with its last lease.
    """
    with _lock:
        renewer = _renewers.get(id(lease.store))
        if renewer is None:
            return
        if lease in renewer.leases and len(renewer.leases) == 1:
            del _renewers[id(lease.store)]
    renewer.let_go(lease)
