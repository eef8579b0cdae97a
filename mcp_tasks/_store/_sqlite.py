"""`SqliteTaskStore`: the task store that ships, one SQLite file shared by the threads and the
processes of one machine (WAL mode, one short transaction per method, a busy database retried).
"""

from __future__ import annotations

import json
import logging
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import mcp_tasks._store._sqlite_batch as batch
from mcp_tasks._clock import SLICE
from mcp_tasks._status import Status
from mcp_tasks._store._bound import store_bound
from mcp_tasks._store._error import StoreError, lease_lost
from mcp_tasks._store._protocol import LEASE_TTL, check_ends, check_lease_ttl, lease_ttl_of
from mcp_tasks._store._ref import TaskRef
from mcp_tasks._store._sqlite_file import SCHEMA, STORE_ENV, TABLES, check_layout, default_store_path
from mcp_tasks._store._sqlite_intents import SqliteIntents
from mcp_tasks._store._sqlite_leases import SqliteLeases, lease_from_start

__all__ = ["SCHEMA", "STORE_ENV", "SqliteTaskStore", "StoreError", "default_store_path"]

log = logging.getLogger("mcp_tasks")
T = TypeVar("T")

DEFAULT_KEEP_FINISHED = 7 * 24 * 3600.0
PRUNE_EVERY = 64


def _busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


class SqliteTaskStore(SqliteLeases, SqliteIntents):
    """A `TaskStore` in one SQLite file: `path`, or `default_store_path()` (created owner-only:
    mode 0600 in a 0700 folder). Safe for many threads and many processes of one machine: WAL
    mode, one short transaction per method, a busy database retried for up to `busy_timeout`
    seconds. Finished tasks not touched for `keep_finished` seconds (a week) are pruned. The waits
    on its tasks take leases of `lease_ttl` seconds (renewed while they wait).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        busy_timeout: float = 30.0,
        keep_finished: float = DEFAULT_KEEP_FINISHED,
        lease_ttl: float = LEASE_TTL,
    ) -> None:
        if not busy_timeout > 0 or not keep_finished > 0:
            raise ValueError("busy_timeout and keep_finished must be positive numbers of seconds")
        if path is not None and os.fspath(path) in ("", ":memory:"):
            raise ValueError(
                f"a task store is a file that outlives this process, not {os.fspath(path)!r}:"
                " give a path (or None for the default file)"
            )
        self.path = Path(path).expanduser() if path is not None else default_store_path()
        self.busy_timeout = float(busy_timeout)
        self.keep_finished = float(keep_finished)
        self.lease_ttl = check_lease_ttl(lease_ttl)
        self._writes = 0
        self._lock = threading.Lock()
        self._create_file()
        self._run(self._prepare)

    # -- the file ------------------------------------------------------------------------------

    def _create_file(self) -> None:
        if self.path.exists():
            return
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600))
        except OSError as exc:
            raise StoreError(f"cannot create the task store {self.path}: {exc.strerror or exc}") from exc

    def _prepare(self, db: sqlite3.Connection) -> None:
        check_layout(db, self.path)  # before anything changes: another program's file stays as it is
        if str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            db.execute("PRAGMA journal_mode=WAL")
        with self._write(db):
            found = check_layout(db, self.path)
            if found == 0:
                for statement in TABLES.split(";"):
                    if statement.strip():
                        db.execute(statement)
            db.execute(f"PRAGMA user_version={SCHEMA}")  # a write: fails now, not at the first task, when it cannot

    @contextmanager
    def _connect(self, deadline: float) -> Iterator[sqlite3.Connection]:
        wait = max(deadline - time.monotonic(), 0.001)
        db = sqlite3.connect(str(self.path), timeout=wait, isolation_level=None, check_same_thread=False)
        try:
            yield db
        finally:
            db.close()

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work` in a connection of its own; a busy or locked database is retried until
        `busy_timeout` has passed, or the caller's bound (`store_deadline`: a wait's deadline) if
        that comes first, waiting for the lock `SLICE` at a time (a client closing meanwhile ends
        it); any other failure raised as a `StoreError` naming the file.
        """
        deadline = time.monotonic() + self.busy_timeout
        bounded = False
        pause = 0.005
        while True:
            bound = store_bound()  # read again at each try: a client closing brings it forward
            if bound is not None and bound < deadline:
                deadline, bounded = bound, True
            try:
                with self._connect(min(deadline, time.monotonic() + SLICE)) as db:
                    return work(db)
            except StoreError:
                raise
            except sqlite3.Error as exc:
                if _busy(exc) and time.monotonic() < deadline:
                    time.sleep(min(pause * (1 + random.random()), max(deadline - time.monotonic(), 0)))
                    pause = min(pause * 2, 0.2)
                    continue
                raise self._error(exc, bounded) from exc
            except ValueError as exc:  # a record that does not decode (NewerRecord included)
                raise StoreError(f"the task store {self.path} has a record it cannot read: {exc}") from exc

    def _error(self, exc: sqlite3.Error, bounded: bool = False) -> StoreError:
        text = str(exc)
        if _busy(exc) and bounded:
            why = f"it stayed busy (locked by another connection) until the caller's deadline ({text})"
        elif _busy(exc):
            why = f"it stayed busy for {self.busy_timeout:g} s ({text})"
        elif "readonly" in text or "read-only" in text or "unable to open" in text:
            why = f"it cannot be written ({text}): check its permissions and the disk"
        elif isinstance(exc, sqlite3.DatabaseError) and ("not a database" in text or "malformed" in text):
            why = f"it is not a task store or it is damaged ({text}); it was left as it is"
        else:
            why = text
        return StoreError(f"cannot use the task store {self.path}: {why}")

    @contextmanager
    def _write(self, db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    # -- tasks ---------------------------------------------------------------------------------

    def record(self, ref: TaskRef, *, holder: str | None = None, ttl: float | None = None) -> None:
        """See `TaskStore.record` (`holder`'s lease in the same transaction); now and then,
        finished tasks older than `keep_finished` go.
        """
        if not isinstance(ref, TaskRef):
            raise TypeError(f"expected a TaskRef, got {type(ref).__name__}")
        with self._lock:
            self._writes += 1
            prune = self._writes % PRUNE_EVERY == 1

        def work(db: sqlite3.Connection) -> None:
            now = time.time()
            with self._write(db):
                db.execute(  # a finished ref stays as it is: records only move forward
                    "INSERT INTO tasks VALUES (?, ?, ?, ?, ?) ON CONFLICT (task_id) DO UPDATE SET finished = "
                    "excluded.finished, created_at = excluded.created_at, updated_at = excluded.updated_at, "
                    "ref = excluded.ref WHERE tasks.finished = 0",
                    (ref.task_id, int(ref.finished), ref.created_at, now, ref.to_json()),
                )
                if holder is not None:
                    lease_from_start(db, ref.task_id, holder, now, lease_ttl_of(self) if ttl is None else ttl)
                if prune:
                    self._prune(db, now)

        self._run(work)

    def _prune(self, db: sqlite3.Connection, now: float) -> None:
        old = [
            row[0]
            for row in db.execute(
                "SELECT task_id FROM tasks WHERE finished = 1 AND updated_at < ?", (now - self.keep_finished,)
            )
        ]
        for task_id in old:
            self._drop(db, task_id)
        if old:
            log.debug("pruned %d finished task(s) from %s", len(old), self.path)

    @staticmethod
    def _drop(db: sqlite3.Connection, task_id: str) -> None:
        for table in ("tasks", "answers", "leases"):
            db.execute(f"DELETE FROM {table} WHERE task_id = ?", (task_id,))

    def update(self, task_id: str, status: Status, *, holder: str | None = None) -> None:
        """See `TaskStore.update`: decided in the write transaction that writes it."""
        if not isinstance(status, Status):
            raise TypeError(f"expected a Status, got {type(status).__name__}")

        def work(db: sqlite3.Connection) -> None:
            with self._write(db):
                batch.move_forward(db, task_id, status, holder, time.time())

        self._run(work)

    def get(self, task_id: str) -> TaskRef | None:
        """See `TaskStore.get`."""

        def work(db: sqlite3.Connection) -> TaskRef | None:
            row = db.execute("SELECT ref FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
            return TaskRef.from_json(row[0]) if row is not None else None

        return self._run(work)

    def unfinished(self) -> list[TaskRef]:
        """See `TaskStore.unfinished`."""

        def work(db: sqlite3.Connection) -> list[TaskRef]:
            rows = db.execute("SELECT ref FROM tasks WHERE finished = 0 ORDER BY created_at, task_id").fetchall()
            return [TaskRef.from_json(row[0]) for row in rows]

        return self._run(work)

    def forget(self, task_id: str) -> None:
        """See `TaskStore.forget`."""

        def work(db: sqlite3.Connection) -> None:
            with self._write(db):
                self._drop(db, task_id)

        self._run(work)

    # -- the ledger ----------------------------------------------------------------------------

    def write_answers(self, task_id: str, answers: Mapping[str, Any], *, holder: str | None = None) -> None:
        """See `TaskStore.write_answers` (committed, with the file synced, before it returns)."""
        rows = [(task_id, str(key), json.dumps(value), time.time()) for key, value in answers.items()]

        def work(db: sqlite3.Connection) -> None:
            with self._write(db):
                self._fence(db, task_id, holder, "its answers were not written")
                db.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, 0, ?)", rows)

        self._run(work)

    def acknowledge(self, task_id: str, keys: Iterable[str], *, holder: str | None = None) -> None:
        """See `TaskStore.acknowledge`."""
        rows = [(task_id, str(key)) for key in keys]

        def work(db: sqlite3.Connection) -> None:
            with self._write(db):
                self._fence(db, task_id, holder, "its answers were not acknowledged")
                db.executemany("UPDATE answers SET acknowledged = 1 WHERE task_id = ? AND key = ?", rows)

        self._run(work)

    def _fence(self, db: sqlite3.Connection, task_id: str, holder: str | None, what: str) -> None:
        """Refuse (StoreError, rolling the write back) when `holder` does not hold the lease now."""
        if holder is None:
            return
        row = db.execute("SELECT holder, expires FROM leases WHERE task_id = ?", (task_id,)).fetchone()
        if row is None or row[0] != holder or row[1] <= time.time():
            raise lease_lost(task_id, f"the task store {self.path}", what)

    def unacknowledged(self, task_id: str) -> dict[str, Any]:
        """See `TaskStore.unacknowledged`."""

        def work(db: sqlite3.Connection) -> dict[str, Any]:
            rows = db.execute(
                "SELECT key, response FROM answers WHERE task_id = ? AND acknowledged = 0 ORDER BY key", (task_id,)
            ).fetchall()
            return {key: json.loads(response) for key, response in rows}

        return self._run(work)

    def finish_many(self, ends: Sequence[tuple[str, Status, str | None]]) -> None:
        """The ends of many tasks in one transaction: for each ``(task_id, status, holder)``, its
        final `status` recorded as ``update(task_id, status, holder=holder)`` would (fenced by a
        `holder`; None: it held none, unfenced), its unacknowledged answers acknowledged, and the
        lease `holder` holds freed. Optional in a store: without it a wait's end takes `update`,
        `unacknowledged` and `release`.
        """
        checked = check_ends(ends)

        def work(db: sqlite3.Connection) -> None:
            with self._write(db):
                batch.finish_many(db, checked, time.time())

        if checked:
            self._run(work)

    def close(self) -> None:
        """Nothing to close (each call opens and closes its own connection): there so that any
        store `open_store` gives can be closed, or used as a context manager, alike.
        """

    def __enter__(self) -> SqliteTaskStore:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<SqliteTaskStore {self.path}>"
