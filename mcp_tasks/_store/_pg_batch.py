"""The PostgreSQL store's statements that decide as they write (a status moving forward, `claim`
and the optional batch methods): what lets a worker waiting for thousands of tasks make a handful
of round trips per round, not several per task. Each runs on the connection `PostgresTaskStore`
gives it, inside its transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from mcp_tasks._status import Status
from mcp_tasks._store._forward import moves_forward
from mcp_tasks._store._holder import holder_gone
from mcp_tasks._store._ref import TaskRef

if TYPE_CHECKING:
    import psycopg

    Conn = psycopg.Connection[tuple[Any, ...]]

__all__ = [
    "Tables",
    "acquire_many",
    "claim",
    "finish_many",
    "lease_from_start",
    "move_forward",
    "release_many",
    "renew_many",
]

_EXPIRES = "now() + make_interval(secs => %(ttl)s::float8)"


@attrs.frozen
class Tables:
    """The quoted names of a schema's tables."""

    tasks: str
    answers: str
    leases: str

    @classmethod
    def of(cls, schema: str) -> Tables:
        """The tables of `schema` (a name `check_schema_name` accepted)."""
        quoted = f'"{schema}"'
        return cls(f"{quoted}.tasks", f"{quoted}.answers", f"{quoted}.leases")


def _lock_leases(conn: Conn, t: Tables, task_ids: Sequence[str]) -> None:
    """Lock the lease rows of `task_ids` in the order of their ids: every batch that writes many
    leases locks them so first, and two batches (a renewal and a round of ends) never deadlock.
    """
    conn.execute(
        f"SELECT 1 FROM {t.leases} WHERE task_id = ANY(%s) ORDER BY task_id FOR UPDATE", (sorted(set(task_ids)),)
    )


def renew_many(conn: Conn, t: Tables, pairs: Sequence[tuple[str, str]], ttl: float) -> list[bool]:
    """Extend each ``(task_id, holder)`` lease its holder still holds; for each, whether it did.
    One statement (one round trip in autocommit), its rows locked in the order of their ids.
    """
    rows = conn.execute(
        f"UPDATE {t.leases} AS l SET expires = {_EXPIRES} FROM (SELECT k.task_id FROM {t.leases} AS k "
        "JOIN unnest(%(ts)s::text[], %(hs)s::text[]) AS r(task_id, holder) "
        "ON k.task_id = r.task_id AND k.holder = r.holder ORDER BY k.task_id FOR UPDATE OF k) AS r "
        "WHERE l.task_id = r.task_id RETURNING l.task_id, l.holder",
        {"ttl": float(ttl), "ts": [task_id for task_id, _ in pairs], "hs": [holder for _, holder in pairs]},
    ).fetchall()
    kept = {(row[0], row[1]) for row in rows}
    return [pair in kept for pair in pairs]


def acquire_many(conn: Conn, t: Tables, wanted: Sequence[str], holder: str, ttl: float, here: str) -> set[str]:
    """Take the leases of `wanted` (sorted: two batches lock in one order) for `holder`, each as
    `acquire` would; `here`: the holder prefix of this machine's processes, whose gone ones free
    their leases at once.
    """
    rows = conn.execute(
        f"INSERT INTO {t.leases} AS l SELECT t, %(h)s, {_EXPIRES} "
        "FROM unnest(%(ts)s::text[]) AS t ON CONFLICT (task_id) DO UPDATE SET holder = EXCLUDED.holder, "
        "expires = EXCLUDED.expires WHERE l.holder = EXCLUDED.holder OR l.expires <= now() RETURNING task_id",
        {"ts": list(wanted), "h": holder, "ttl": float(ttl)},
    ).fetchall()
    taken = {row[0] for row in rows}
    held = conn.execute(  # held by another: those of this machine's processes that are gone are free
        f"SELECT task_id, holder FROM {t.leases} WHERE task_id = ANY(%s) AND starts_with(holder, %s) "
        "AND holder <> %s ORDER BY task_id FOR UPDATE",
        ([task_id for task_id in wanted if task_id not in taken], here, holder),
    ).fetchall()
    gone = [task_id for task_id, other in held if holder_gone(other)]
    if gone:
        conn.execute(
            f"UPDATE {t.leases} SET holder = %(h)s, expires = {_EXPIRES} WHERE task_id = ANY(%(ts)s)",
            {"h": holder, "ttl": float(ttl), "ts": gone},
        )
        taken.update(gone)
    return taken


def release_many(conn: Conn, t: Tables, pairs: Sequence[tuple[str, str]]) -> None:
    """Free each ``(task_id, holder)`` lease its holder holds."""
    _lock_leases(conn, t, [task_id for task_id, _ in pairs])
    conn.execute(
        f"DELETE FROM {t.leases} AS l USING unnest(%s::text[], %s::text[]) AS r(task_id, holder) "
        "WHERE l.task_id = r.task_id AND l.holder = r.holder",
        ([task_id for task_id, _ in pairs], [holder for _, holder in pairs]),
    )


def move_forward(conn: Conn, t: Tables, statuses: Sequence[tuple[str, Status, str | None]]) -> None:
    """Make each ``(task_id, status, holder)``'s status its task's last, as `update` does: only
    when it moves the record forward (`moves_forward`; in order, so a task given twice keeps the
    first end that could be written) and, with a holder, only when that holder holds the lease
    now. The task rows, then the lease rows of those given a holder, are locked (in the order of
    their ids) before anything is decided, and stay so until the write commits. The two reads go
    out together: one round trip in pipeline mode.
    """
    tasks = conn.execute(
        f"SELECT task_id, ref FROM {t.tasks} WHERE task_id = ANY(%s) AND NOT finished ORDER BY task_id FOR UPDATE",
        (sorted({task_id for task_id, _, _ in statuses}),),
    )
    fenced = sorted({task_id for task_id, _, holder in statuses if holder is not None})
    leases = conn.execute(
        f"SELECT task_id, holder, expires > now() FROM {t.leases} WHERE task_id = ANY(%s) ORDER BY task_id FOR UPDATE",
        (fenced,),
    )
    kept = {task_id: TaskRef.from_json(ref) for task_id, ref in tasks.fetchall()}
    held = {(row[0], row[1]) for row in leases.fetchall() if row[2]}
    moved: dict[str, TaskRef] = {}
    for task_id, status, holder in statuses:
        ref = moved.get(task_id) or kept.get(task_id)
        if ref is not None and (holder is None or (task_id, holder) in held) and moves_forward(ref, status):
            moved[task_id] = ref.with_status(status)
    if not moved:
        return
    refs = list(moved.values())
    conn.execute(
        f"UPDATE {t.tasks} AS k SET finished = r.finished, updated_at = now(), ref = r.ref "
        "FROM unnest(%(ts)s::text[], %(fs)s::boolean[], %(rs)s::text[]) AS r(task_id, finished, ref) "
        "WHERE k.task_id = r.task_id AND NOT k.finished",
        {"ts": [ref.task_id for ref in refs], "fs": [ref.finished for ref in refs], "rs": [r.to_json() for r in refs]},
    )


def finish_many(conn: Conn, t: Tables, ends: Sequence[tuple[str, Status, str | None]]) -> None:
    """Record each end as `move_forward` does (which locks the leases given a holder), acknowledge
    what its ledger holds (nobody can answer a task that is over) and free the lease its holder
    (when not None) holds. In pipeline mode, two round trips: the reads, then the writes with
    the commit.
    """
    move_forward(conn, t, ends)
    leases = sorted({(task_id, holder) for task_id, _, holder in ends if holder is not None})
    conn.execute(
        f"WITH a AS (UPDATE {t.answers} SET acknowledged = true WHERE task_id = ANY(%(ids)s) AND NOT acknowledged) "
        f"DELETE FROM {t.leases} AS l USING unnest(%(lt)s::text[], %(lh)s::text[]) AS r(task_id, holder) "
        "WHERE l.task_id = r.task_id AND l.holder = r.holder",
        {
            "ids": sorted({task_id for task_id, _, _ in ends}),
            "lt": [task_id for task_id, _ in leases],
            "lh": [holder for _, holder in leases],
        },
    )


def claim(conn: Conn, t: Tables, holder: str, ttl: float, count: int, here: str) -> list[TaskRef]:
    """Take up to `count` free leases of unfinished tasks, oldest first, skipping the rows other
    claimers hold locked (``FOR UPDATE SKIP LOCKED``); `here` as for `acquire_many`.
    """
    mine = conn.execute(  # leases of this machine's processes: those gone are free
        f"SELECT l.holder FROM {t.leases} l JOIN {t.tasks} k USING (task_id) "
        "WHERE NOT k.finished AND l.expires > now() AND starts_with(l.holder, %s)",
        (here,),
    ).fetchall()
    gone = sorted({row[0] for row in mine if row[0] != holder and holder_gone(row[0])})
    rows = conn.execute(
        f"WITH free AS (SELECT k.task_id, k.ref, k.created_at FROM {t.tasks} k LEFT JOIN {t.leases} l "
        "ON l.task_id = k.task_id WHERE NOT k.finished AND (l.task_id IS NULL OR l.expires <= now() OR "
        "l.holder = ANY(%(gone)s)) ORDER BY k.created_at, k.task_id LIMIT %(n)s FOR UPDATE OF k SKIP LOCKED), "
        f"taken AS (INSERT INTO {t.leases} AS l SELECT task_id, %(h)s, {_EXPIRES} FROM free "
        "ON CONFLICT (task_id) DO UPDATE SET holder = EXCLUDED.holder, expires = EXCLUDED.expires "
        "WHERE l.expires <= now() OR l.holder = ANY(%(gone)s) RETURNING task_id) "
        "SELECT f.ref FROM free f JOIN taken USING (task_id) ORDER BY f.created_at, f.task_id",
        {"gone": gone, "n": count, "h": holder, "ttl": float(ttl)},
    ).fetchall()
    return [TaskRef.from_json(row[0]) for row in rows]


def lease_from_start(conn: Conn, t: Tables, task_id: str, holder: str, ttl: float) -> None:
    """Give `holder` the lease of a task whose record is written in this transaction (`record`'s
    ``holder=``): taken when free, expired or its own already, on the database's clock.
    """
    conn.execute(
        f"INSERT INTO {t.leases} AS l VALUES (%(t)s, %(h)s, {_EXPIRES}) ON CONFLICT (task_id) DO UPDATE SET "
        "holder = EXCLUDED.holder, expires = EXCLUDED.expires WHERE l.holder = EXCLUDED.holder OR l.expires <= now()",
        {"t": task_id, "h": holder, "ttl": float(ttl)},
    )
