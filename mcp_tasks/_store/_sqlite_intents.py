"""The SQLite store's intents (calls recorded before they are sent; see _intent.py): the methods
`SqliteTaskStore` takes from `SqliteIntents`, each one transaction of its own. Their table is made
on first use: a file stays at its layout, so older mcp_tasks versions keep opening it (they ignore
the table).
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from mcp_tasks._store._intent import Intent, result_json
from mcp_tasks._store._protocol import lease_ttl_of
from mcp_tasks._store._ref import TaskRef
from mcp_tasks._store._sqlite_leases import lease_from_start

__all__ = ["TABLE", "SqliteIntents"]

T = TypeVar("T")
PRUNE_ONE_IN = 64
"""One intent written in this many also drops the joined intents older than `keep_finished`."""

TABLE = """
CREATE TABLE IF NOT EXISTS intents (
    endpoint TEXT NOT NULL,
    key TEXT NOT NULL,
    tool TEXT NOT NULL,
    digest TEXT NOT NULL,
    created_at REAL NOT NULL,
    task_id TEXT,
    result TEXT,
    PRIMARY KEY (endpoint, key)
)
"""
_COLUMNS = "endpoint, key, tool, digest, created_at, task_id, result"


def _has_table(db: sqlite3.Connection) -> bool:
    """Whether the file has its intents table yet (a read leaves a file without one as it is)."""
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'intents'").fetchone()
    return found is not None


def _record(db: sqlite3.Connection, intent: Intent, prune_before: float | None) -> Intent | None:
    """Keep `intent` unless its endpoint and key are kept already: then the one kept (unchanged).
    `prune_before`: intents joined before then go (their tasks are pruned as finished ones are).
    """
    db.execute(TABLE)
    row = db.execute(
        f"SELECT {_COLUMNS} FROM intents WHERE endpoint = ? AND key = ?", (intent.endpoint, intent.key)
    ).fetchone()
    if row is not None:
        return Intent.from_row(*row)
    db.execute(
        f"INSERT INTO intents ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, NULL, NULL)",
        (intent.endpoint, intent.key, intent.tool, intent.digest, intent.created_at),
    )
    if prune_before is not None:
        db.execute(
            "DELETE FROM intents WHERE (task_id IS NOT NULL OR result IS NOT NULL) AND created_at < ?",
            (prune_before,),
        )
    return None


def _join(
    db: sqlite3.Connection,
    endpoint: str,
    key: str,
    ref: TaskRef | None,
    result: Mapping[str, Any] | None,
    now: float,
    lease: tuple[str, float] | None = None,
) -> None:
    """Join the task (`ref`, kept as `record` keeps one, with the `lease` (holder, ttl) given)
    or the immediate `result` to the intent.
    """
    db.execute(TABLE)
    if ref is not None:
        db.execute(  # as `record` writes it: a finished ref stays as it is (records only move forward)
            "INSERT INTO tasks VALUES (?, ?, ?, ?, ?) ON CONFLICT (task_id) DO UPDATE SET finished = "
            "excluded.finished, created_at = excluded.created_at, updated_at = excluded.updated_at, "
            "ref = excluded.ref WHERE tasks.finished = 0",
            (ref.task_id, int(ref.finished), ref.created_at, now, ref.to_json()),
        )
        if lease is not None:
            lease_from_start(db, ref.task_id, lease[0], now, lease[1])
        db.execute("UPDATE intents SET task_id = ? WHERE endpoint = ? AND key = ?", (ref.task_id, endpoint, key))
    else:
        text = result_json(result or {})
        db.execute("UPDATE intents SET result = ? WHERE endpoint = ? AND key = ?", (text, endpoint, key))


def _get(db: sqlite3.Connection, endpoint: str, key: str) -> Intent | None:
    """The intent kept under `endpoint` and `key`, or None."""
    if not _has_table(db):
        return None
    row = db.execute(f"SELECT {_COLUMNS} FROM intents WHERE endpoint = ? AND key = ?", (endpoint, key)).fetchone()
    return Intent.from_row(*row) if row is not None else None


def _unrecorded(db: sqlite3.Connection) -> list[Intent]:
    """The intents neither a task id nor a result joined, oldest first."""
    if not _has_table(db):
        return []
    rows = db.execute(
        f"SELECT {_COLUMNS} FROM intents WHERE task_id IS NULL AND result IS NULL ORDER BY created_at, endpoint, key"
    ).fetchall()
    return [Intent.from_row(*row) for row in rows]


def _forget(db: sqlite3.Connection, endpoint: str, key: str) -> None:
    """Drop the intent kept under `endpoint` and `key` (its task, if any, stays)."""
    if _has_table(db):
        db.execute("DELETE FROM intents WHERE endpoint = ? AND key = ?", (endpoint, key))


class SqliteIntents:
    """The optional intent methods of a `TaskStore`, for `SqliteTaskStore` (which runs them)."""

    keep_finished: float

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        raise NotImplementedError

    def _write(self, db: sqlite3.Connection) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def record_intent(self, intent: Intent) -> Intent | None:
        """Keep `intent` (a call about to be sent) unless its endpoint and key are kept already:
        None when kept now, else the intent kept before (left as it is). Committed before it returns.
        """
        if not isinstance(intent, Intent):
            raise TypeError(f"expected an Intent, got {type(intent).__name__}")
        prune = random.randrange(PRUNE_ONE_IN) == 0

        def work(db: sqlite3.Connection) -> Intent | None:
            with self._write(db):
                return _record(db, intent, time.time() - self.keep_finished if prune else None)

        return self._run(work)

    def join_intent(
        self,
        endpoint: str,
        key: str,
        *,
        ref: TaskRef | None = None,
        result: Mapping[str, Any] | None = None,
        holder: str | None = None,
        ttl: float | None = None,
    ) -> None:
        """Join the call's outcome to its intent, in one transaction: the task it made (`ref`, kept
        as `record` keeps one, with `holder`'s lease) or the `result` the server answered at once.
        """
        if (ref is None) == (result is None):
            raise TypeError("join_intent() takes a ref or a result, not both or neither")

        def work(db: sqlite3.Connection) -> None:
            with self._write(db):
                lease = (holder, lease_ttl_of(self) if ttl is None else ttl) if holder is not None else None
                _join(db, endpoint, key, ref, result, time.time(), lease)

        self._run(work)

    def get_intent(self, endpoint: str, key: str) -> Intent | None:
        """The intent kept under `endpoint` and `key`, or None."""
        return self._run(lambda db: _get(db, endpoint, key))

    def unrecorded_intents(self) -> list[Intent]:
        """The calls started whose task id (or result) was never recorded, oldest first."""
        return self._run(_unrecorded)

    def forget_intent(self, endpoint: str, key: str) -> None:
        """Drop the intent kept under `endpoint` and `key` (its task, if any, stays)."""

        def work(db: sqlite3.Connection) -> None:
            with self._write(db):
                _forget(db, endpoint, key)

        self._run(work)
