"""The SQLite store's writes that decide as they write (a status moving forward, `claim` and the
optional batch methods), each run inside the one write transaction `SqliteTaskStore` opens for it:
one lock of the file for a whole round of a worker's tasks, not one per task.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from mcp_tasks._status import Status
from mcp_tasks._store._forward import moves_forward
from mcp_tasks._store._holder import holder_gone
from mcp_tasks._store._ref import TaskRef

__all__ = ["acquire_many", "claim", "finish_many", "move_forward", "release_many", "renew_many"]


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


def move_forward(db: sqlite3.Connection, task_id: str, status: Status, holder: str | None, now: float) -> bool:
    """Make `status` the task's last status when it moves the record forward (`moves_forward`) and
    `holder`, when given, holds the task's lease now; whether it did. Run in the write transaction
    (the file's write lock), so nothing lands between the check and the write.
    """
    if holder is not None:
        lease = db.execute("SELECT holder, expires FROM leases WHERE task_id = ?", (task_id,)).fetchone()
        if lease is None or lease[0] != holder or lease[1] <= now:
            return False
    row = db.execute("SELECT ref FROM tasks WHERE task_id = ? AND finished = 0", (task_id,)).fetchone()
    if row is None:
        return False
    kept = TaskRef.from_json(row[0])
    if not moves_forward(kept, status):
        return False
    ref = kept.with_status(status)
    db.execute(
        "UPDATE tasks SET finished = ?, updated_at = ?, ref = ? WHERE task_id = ? AND finished = 0",
        (int(ref.finished), now, ref.to_json(), task_id),
    )
    return True


def finish_many(db: sqlite3.Connection, ends: Sequence[tuple[str, Status, str | None]], now: float) -> None:
    """Record each end as `update` would (in order: a task given twice keeps the first end that
    could be written), acknowledge what its ledger holds and free the lease its holder (when not
    None) holds.
    """
    for task_id, status, holder in ends:
        move_forward(db, task_id, status, holder, now)
    rows = [(task_id,) for task_id in dict.fromkeys(task_id for task_id, _, _ in ends)]
    db.executemany("UPDATE answers SET acknowledged = 1 WHERE task_id = ? AND acknowledged = 0", rows)
    release_many(db, [(task_id, holder) for task_id, _, holder in ends if holder is not None])
