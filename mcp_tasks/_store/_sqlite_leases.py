"""The SQLite store's leases: the methods `SqliteTaskStore` takes from `SqliteLeases`, each one
write transaction (claimers and renewers in other processes wait for it). A lease's times are the
machine's clock; a holder whose process is gone is taken over at once (`holder_gone`).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TypeVar

import mcp_tasks._store._sqlite_batch as batch
from mcp_tasks._redact import short_id
from mcp_tasks._store._holder import holder_gone
from mcp_tasks._store._protocol import claim_limit
from mcp_tasks._store._ref import TaskRef

__all__ = ["SqliteLeases", "lease_from_start"]

log = logging.getLogger("mcp_tasks")

T = TypeVar("T")


class SqliteLeases:
    """The lease methods of a `TaskStore`, for `SqliteTaskStore` (which runs them)."""

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        raise NotImplementedError

    def _write(self, db: sqlite3.Connection) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def acquire(self, task_id: str, holder: str, ttl: float) -> bool:
        """See `TaskStore.acquire`."""

        def work(db: sqlite3.Connection) -> bool:
            now = time.time()
            with self._write(db):
                row = db.execute("SELECT holder, expires FROM leases WHERE task_id = ?", (task_id,)).fetchone()
                if row is not None and row[0] != holder and row[1] > now and not holder_gone(row[0]):
                    return False
                db.execute("INSERT OR REPLACE INTO leases VALUES (?, ?, ?)", (task_id, holder, now + ttl))
                if row is not None and row[0] != holder:
                    log.debug("task %s: lease taken over from a holder gone or expired", short_id(task_id))
                return True

        return self._run(work)

    def renew(self, task_id: str, holder: str, ttl: float) -> bool:
        """See `TaskStore.renew`."""

        def work(db: sqlite3.Connection) -> bool:
            with self._write(db):
                done = db.execute(
                    "UPDATE leases SET expires = ? WHERE task_id = ? AND holder = ?",
                    (time.time() + ttl, task_id, holder),
                )
                return done.rowcount == 1

        return self._run(work)

    def renew_many(self, leases: Sequence[tuple[str, str]], ttl: float) -> list[bool]:
        """Renew many leases in one transaction (each ``(task_id, holder)`` as `renew` would):
        for each, whether its holder still held it. Optional in a store: a renewer renews one
        lease at a time without it.
        """
        pairs = [(str(task_id), str(holder)) for task_id, holder in leases]

        def work(db: sqlite3.Connection) -> list[bool]:
            with self._write(db):
                return batch.renew_many(db, pairs, time.time() + ttl)

        return self._run(work) if pairs else []

    def acquire_many(self, task_ids: Iterable[str], holder: str, ttl: float) -> set[str]:
        """Take the leases of many tasks for `holder` in one transaction (each as `acquire` would):
        the ids of those taken. Optional in a store: a group takes one lease at a time without it.
        """
        wanted = sorted({str(task_id) for task_id in task_ids})

        def work(db: sqlite3.Connection) -> set[str]:
            with self._write(db):
                return batch.acquire_many(db, wanted, holder, time.time(), ttl)

        return self._run(work) if wanted else set()

    def release(self, task_id: str, holder: str) -> None:
        """See `TaskStore.release`."""

        def work(db: sqlite3.Connection) -> None:
            with self._write(db):
                db.execute("DELETE FROM leases WHERE task_id = ? AND holder = ?", (task_id, holder))

        self._run(work)

    def release_many(self, leases: Sequence[tuple[str, str]]) -> None:
        """Free many leases in one transaction (each ``(task_id, holder)`` as `release` would).
        Optional in a store: a group frees one lease at a time without it.
        """
        pairs = [(str(task_id), str(holder)) for task_id, holder in leases]

        def work(db: sqlite3.Connection) -> None:
            with self._write(db):
                batch.release_many(db, pairs)

        if pairs:
            self._run(work)

    def claim(self, holder: str, ttl: float, limit: int) -> list[TaskRef]:
        """See `TaskStore.claim` (one write transaction: claimers in other processes wait for it)."""
        count = claim_limit(limit)

        def work(db: sqlite3.Connection) -> list[TaskRef]:
            with self._write(db):
                return batch.claim(db, holder, time.time(), ttl, count)

        return self._run(work) if count else []


def lease_from_start(db: sqlite3.Connection, task_id: str, holder: str, now: float, ttl: float) -> None:
    """Give `holder` the lease of a task whose record is written in this transaction (`record`'s
    ``holder=``): taken when free, expired or its own already.
    """
    db.execute(
        "INSERT INTO leases VALUES (?, ?, ?) ON CONFLICT (task_id) DO UPDATE SET holder = excluded.holder, "
        "expires = excluded.expires WHERE leases.holder = excluded.holder OR leases.expires <= ?",
        (task_id, holder, now + ttl, now),
    )
