"""Leases kept alive while their waits wait: one daemon thread per store renews every lease held
in it a third of a ttl before it would lapse, so a person taking their time to answer does not
lose the task to another process. The thread starts with the first lease held in a store and is
joined when the last one is let go.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
import time

from mcp_tasks._redact import short_id
from mcp_tasks._store._bound import store_deadline
from mcp_tasks._store._protocol import TaskStore

__all__ = ["Lease", "hold", "let_go"]

log = logging.getLogger("mcp_tasks")

RENEW_PATIENCE = 1.0
"""Seconds one renewal waits for a busy store before it is tried again."""


class Lease:
    """A lease a wait holds on a task: renewed in the background until `let_go`; `lost` once a
    renewal found another holder (the lease had lapsed and was taken).
    """

    def __init__(self, store: TaskStore, task_id: str, holder: str, ttl: float) -> None:
        self.store = store
        self.task_id = task_id
        self.holder = holder
        self.ttl = ttl
        self.renewed = time.monotonic()
        self.lost = False


class _Renewer:
    """The thread that renews the leases held in one store."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store
        self.leases: set[Lease] = set()
        self.stopping = False
        self.wake = threading.Condition()
        self.thread = threading.Thread(target=self._run, name="mcp_tasks-lease-renewer", daemon=True)

    def _run(self) -> None:
        contextvars.Context().run(self._loop)  # no store bound of the thread that started it

    def _loop(self) -> None:
        while True:
            with self.wake:
                due = self._due()
                while not self.stopping and due > 0:
                    self.wake.wait(due)
                    due = self._due()
                if self.stopping:
                    return
                leases = [lease for lease in self.leases if not lease.lost]
            for lease in leases:
                if time.monotonic() - lease.renewed >= lease.ttl / 3:
                    self._renew(lease)

    def _due(self) -> float:
        """Seconds until a lease needs renewing (a lease lost needs nothing)."""
        now = time.monotonic()
        waits = [lease.renewed + lease.ttl / 3 - now for lease in self.leases if not lease.lost]
        return min(waits) if waits else 3600.0

    def _renew(self, lease: Lease) -> None:
        started = time.monotonic()
        try:
            # No use once it has lapsed; and a busy store is tried again soon rather than waited
            # for long, so that letting the last lease go (joining this thread) is quick.
            with store_deadline(min(lease.renewed + lease.ttl, started + RENEW_PATIENCE)):
                kept = self.store.renew(lease.task_id, lease.holder, lease.ttl)
        except Exception as exc:  # try again soon; the lease lapses if this goes on for its ttl
            log.warning("task %s: could not renew its lease: %s", short_id(lease.task_id), exc)
            lease.renewed = max(lease.renewed, started - lease.ttl / 3 + min(lease.ttl / 6, RENEW_PATIENCE))
            return
        if kept:
            lease.renewed = started
        else:
            lease.lost = True
            log.info("task %s: its lease lapsed and another wait took it", short_id(lease.task_id))


_renewers: dict[int, _Renewer] = {}
_lock = threading.Lock()


def _forked() -> None:
    """A forked child has none of its parent's threads: its leases need renewers of its own."""
    global _lock
    _renewers.clear()
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def hold(store: TaskStore, task_id: str, holder: str, ttl: float) -> Lease:
    """Keep renewing the lease `holder` has just taken on `task_id` in `store`, until `let_go`."""
    lease = Lease(store, task_id, holder, ttl)
    with _lock:
        renewer = _renewers.get(id(store))
        if renewer is None:
            renewer = _renewers[id(store)] = _Renewer(store)
            renewer.thread.start()
        with renewer.wake:
            renewer.leases.add(lease)
            renewer.wake.notify()
    return lease


def let_go(lease: Lease) -> None:
    """Stop renewing `lease` (the caller then releases it); the store's renewer thread ends and
    is joined with its last lease.
    """
    with _lock:
        renewer = _renewers.get(id(lease.store))
        if renewer is None or lease not in renewer.leases:
            return
        with renewer.wake:
            renewer.leases.discard(lease)
            if renewer.leases:
                renewer.wake.notify()
                return
            renewer.stopping = True
            renewer.wake.notify()
        del _renewers[id(lease.store)]
    if renewer.thread is not threading.current_thread():
        renewer.thread.join()
