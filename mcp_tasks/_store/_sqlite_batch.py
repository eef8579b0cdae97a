"""The SQLite store's work on many tasks at once (`claim` and the optional batch methods), each
run inside the one write transaction `SqliteTaskStore` opens for it: one lock of the file for a
whole round of a worker's tasks, not one per task.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from mcp_tasks._status import Status
from mcp_tasks._store._holder import holder_gone
from mcp_tasks._store._ref import TaskRef

__all__ = ["acquire_many", "claim", "finish_many", "release_many", "renew_many"]


def renew_many(db: sqlite3.Connection, pairs: Sequence[tuple[str, str]], expires: float) -> list[bool]:
    """Move each ``(task_id, holder)`` lease its holder still holds to `expires`; for each, whether it did."""
    update = "UPDATE leases SET expires = ? WHERE task_id = ? AND holder = ?"
    return [db.execute(update, (expires, task_id, holder)).rowcount == 1 for task_id, holder in pairs]


def acquire_many(db: sqlite3.Connection, wanted: Sequence[str], holder: str, now: float, ttl: float) -> set[str]:
    """Take the leases of `wanted` for `holder`, each as `acquire` would: the ids taken."""
    taken: set[str] = set()
    for task_id in wanted:
        row = db.execute("SELECT holder, expires FROM leases WHERE task_id = ?", (task_id,)).fetchone()
        if row is not None and row[0] != holder and row[1] > now and not holder_gone(row[0]):
            continue
        db.execute("INSERT OR REPLACE INTO leases VALUES (?, ?, ?)", (task_id, holder, now + ttl))
        taken.add(task_id)
    return taken


def release_many(db: sqlite3.Connection, pairs: Sequence[tuple[str, str]]) -> None:
    """Free each ``(task_id, holder)`` lease its holder holds."""
    db.executemany("DELETE FROM leases WHERE task_id = ? AND holder = ?", pairs)


def claim(db: sqlite3.Connection, holder: str, now: float, ttl: float, count: int) -> list[TaskRef]:
    """Take up to `count` free leases of unfinished tasks, oldest first (the write transaction
    keeps claimers in other processes out meanwhile).
    """
    taken: list[TaskRef] = []
    rows = db.execute(
        "SELECT t.ref, l.holder, l.expires FROM tasks t LEFT JOIN leases l USING (task_id) "
        "WHERE t.finished = 0 ORDER BY t.created_at, t.task_id"
    )
    for saved, current, expires in rows:
        if len(taken) >= count:
            break
        if current is not None and expires > now and (current == holder or not holder_gone(current)):
            continue
        taken.append(TaskRef.from_json(saved))
    leases = [(ref.task_id, holder, now + ttl) for ref in taken]
    db.executemany("INSERT OR REPLACE INTO leases VALUES (?, ?, ?)", leases)
    return taken


def finish_many(db: sqlite3.Connection, ends: Sequence[tuple[str, Status, str | None]], now: float) -> None:
    """Record each task's final status (as `update`), acknowledge what its ledger holds and free
    the lease its holder (when not None) holds.
    """
    last = {task_id: status for task_id, status, _ in ends}  # a task given twice: its last status
    for task_id, status in last.items():
        row = db.execute("SELECT ref FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
        if row is not None:
            ref = TaskRef.from_json(row[0]).with_status(status)
            db.execute(
                "UPDATE tasks SET finished = ?, updated_at = ?, ref = ? WHERE task_id = ?",
                (int(ref.finished), now, ref.to_json(), task_id),
            )
        db.execute("UPDATE answers SET acknowledged = 1 WHERE task_id = ? AND acknowledged = 0", (task_id,))
    release_many(db, [(task_id, holder) for task_id, _, holder in ends if holder is not None])
