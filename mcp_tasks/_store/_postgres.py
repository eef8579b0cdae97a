"""`PostgresTaskStore`: the task store shared by the processes of many machines, on PostgreSQL
(psycopg 3 and its connection pool, from the ``postgres`` extra). One transaction per method;
lease times are the database's clock; `claim` skips the rows another claimer has locked.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import mcp_tasks._store._pg_batch as batch
from mcp_tasks._redact import short_id
from mcp_tasks._status import Status
from mcp_tasks._store._bound import store_bound
from mcp_tasks._store._error import StoreError, lease_lost
from mcp_tasks._store._holder import holder_gone, machine_id, pid_namespace
from mcp_tasks._store._pg_deadline import Deadlines
from mcp_tasks._store._pg_intents import PgIntents
from mcp_tasks._store._pg_pool import Pools
from mcp_tasks._store._pg_schema import check_conninfo, check_schema_name, load_psycopg, migrate, pg_error, server_name
from mcp_tasks._store._protocol import LEASE_TTL, check_ends, check_lease_ttl, claim_limit, lease_ttl_of
from mcp_tasks._store._ref import TaskRef

if TYPE_CHECKING:
    import psycopg

    Conn = psycopg.Connection[tuple[Any, ...]]

__all__ = ["PostgresTaskStore"]

log = logging.getLogger("mcp_tasks")
T = TypeVar("T")

DEFAULT_KEEP_FINISHED = 7 * 24 * 3600.0
PRUNE_EVERY = 64
LAST_TRY_MS = 100  # what a call whose caller's bound has (all but) passed still gets: one quick try
_RETRIED = ("40001", "40P01")  # serialization failure, deadlock detected: tried again


class PostgresTaskStore(PgIntents):
    """A `TaskStore` on PostgreSQL, for the processes of many machines: its tables live in
    `schema` (created, and migrated, on first use; versioned), reached through a pool of up to
    `pool_size` connections (safe for many threads). `conninfo` is a libpq connection string or
    a ``postgresql://`` URL. Lease times are the database's ``now()``; the waits on its tasks take
    leases of `lease_ttl` seconds. A call waits up to `busy_timeout` seconds for a connection and
    its statements (less within a caller's deadline). Finished tasks not touched for
    `keep_finished` seconds (a week) are pruned. `close()` it, or use it as a context manager.

    Errors are `StoreError` naming the server (``host:port/database``), never the password.
    """

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = "mcp_tasks",
        lease_ttl: float = LEASE_TTL,
        keep_finished: float = DEFAULT_KEEP_FINISHED,
        busy_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        pool_size: int = 10,
    ) -> None:
        if not isinstance(conninfo, str) or not conninfo.strip():
            raise TypeError("conninfo must be a PostgreSQL connection string or URL")
        if not busy_timeout > 0 or not keep_finished > 0 or not connect_timeout > 0:
            raise ValueError("busy_timeout, keep_finished and connect_timeout must be positive numbers of seconds")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise ValueError(f"pool_size must be a whole number, 1 or more, got {pool_size!r}")
        load_psycopg()
        import psycopg

        check_conninfo(conninfo)

        self.schema = check_schema_name(schema)
        self.server = server_name(conninfo)
        self.lease_ttl = check_lease_ttl(lease_ttl)
        self.keep_finished = float(keep_finished)
        self.busy_timeout = float(busy_timeout)
        self._conninfo = conninfo
        self._writes = 0
        self._lock = threading.Lock()
        self._closed = False
        self._t = batch.Tables.of(self.schema)
        self._tasks, self._answers, self._leases = self._t.tasks, self._t.answers, self._t.leases
        connect = {"connect_timeout": max(1, math.ceil(connect_timeout))}
        try:
            with psycopg.connect(conninfo, autocommit=True, **connect) as conn:  # type: ignore[arg-type]
                migrate(conn, self.schema, self.server)
        except psycopg.Error as exc:
            raise self._error(exc, "cannot open it") from None
        self._pools = Pools(
            conninfo, size=pool_size, connect_timeout=connect["connect_timeout"], busy_timeout=busy_timeout
        )
        self._deadlines = Deadlines(self.schema)

    # -- the connection ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the pool's connections (and join its threads); the store cannot be used after."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._deadlines.close()
        self._pools.close()

    def __enter__(self) -> PostgresTaskStore:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def _error(self, exc: Exception, doing: str = "cannot use it") -> StoreError:
        return pg_error(exc, f"the task store on {self.server}, schema {self.schema}", self._conninfo, doing)

    def _run(self, work: Callable[[Conn], T], *, single: bool = False, line: bool = False, piped: bool = False) -> T:
        """`work` in a transaction of a pooled connection (`line`: the renewals' own; `single`: one
        statement, autocommit; `piped`: in pipeline mode, see `Cut.run`), within `busy_timeout` or
        the caller's bound, on the client's clock: a connection silent at the deadline is cut
        (`Deadlines`); a serialization failure, deadlock or broken connection is tried again
        meanwhile; any other failure is a `StoreError`.
        """
        import psycopg
        from psycopg_pool import PoolTimeout

        deadline = time.monotonic() + self.busy_timeout
        bound = store_bound()
        bounded = bound is not None and bound < deadline
        deadline = bound if bound is not None and bounded else deadline
        pause = 0.005
        while True:
            if self._closed:
                raise StoreError(f"the task store on {self.server} is closed")
            left = deadline - time.monotonic()
            try:
                with (
                    self._deadlines.watching(max(deadline, time.monotonic() + LAST_TRY_MS / 1000)) as cut,
                    (self._pools.line() if line else self._pools.get()).connection(timeout=max(left, 0.001)) as conn,
                ):
                    ms = max(int(left * 1000), LAST_TRY_MS) if bounded else None
                    return cut.run(conn, work, ms, single=single, piped=piped)
            except StoreError as exc:
                if cut.fired:
                    raise StoreError(f"the task store on {self.server}: {exc}") from None
                raise
            except PoolTimeout as exc:
                raise StoreError(
                    f"the task store on {self.server}: no connection within "
                    f"{'the caller' + chr(39) + 's deadline' if bounded else f'{self.busy_timeout:g} s'} ({exc})"
                ) from None
            except psycopg.Error as exc:
                code = getattr(exc, "sqlstate", None)
                again = code in _RETRIED or (isinstance(exc, psycopg.OperationalError) and code is None)
                if again and time.monotonic() + pause < deadline:
                    time.sleep(pause)
                    pause = min(pause * 2, 0.2)
                    continue
                raise self._error(exc) from None
            except ValueError as exc:  # a record that does not decode (NewerRecord included)
                raise StoreError(f"the task store on {self.server} has a record it cannot read: {exc}") from exc

    # -- tasks ---------------------------------------------------------------------------------

    def record(self, ref: TaskRef, *, holder: str | None = None, ttl: float | None = None) -> None:
        """See `TaskStore.record` (with `holder`'s lease); finished tasks past `keep_finished` go now and then."""
        if not isinstance(ref, TaskRef):
            raise TypeError(f"expected a TaskRef, got {type(ref).__name__}")
        with self._lock:
            self._writes += 1
            prune = self._writes % PRUNE_EVERY == 1
        row = (ref.task_id, ref.finished, ref.created_at, ref.to_json())

        def work(conn: Conn) -> None:
            conn.execute(  # a finished ref stays as it is: records only move forward
                f"INSERT INTO {self._tasks} AS k (task_id, finished, created_at, ref) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (task_id) DO UPDATE SET finished = EXCLUDED.finished, created_at = EXCLUDED.created_at, "
                "updated_at = now(), ref = EXCLUDED.ref WHERE NOT k.finished",
                row,
            )
            if holder is not None:
                batch.lease_from_start(conn, self._t, ref.task_id, holder, lease_ttl_of(self) if ttl is None else ttl)
            if prune:
                self._prune(conn)

        self._run(work, single=holder is None and not prune, piped=True)

    def _prune(self, conn: Conn) -> None:
        gone = conn.execute(
            f"WITH gone AS (DELETE FROM {self._tasks} WHERE finished AND updated_at < now() - make_interval(secs => "
            f"%s::float8) RETURNING task_id), a AS (DELETE FROM {self._answers} WHERE task_id IN (SELECT task_id FROM "
            f"gone)), l AS (DELETE FROM {self._leases} WHERE task_id IN (SELECT task_id FROM gone)) "
            "SELECT count(*) FROM gone",
            (self.keep_finished,),
        ).fetchone()
        if gone is not None and gone[0]:
            log.debug("pruned %d finished task(s) from %s", gone[0], self.server)

    def update(self, task_id: str, status: Status, *, holder: str | None = None) -> None:
        """See `TaskStore.update`: decided with the task's row (and its lease's) locked until the
        write commits.
        """
        if not isinstance(status, Status):
            raise TypeError(f"expected a Status, got {type(status).__name__}")
        self._run(lambda conn: batch.move_forward(conn, self._t, [(task_id, status, holder)]), piped=True)

    def get(self, task_id: str) -> TaskRef | None:
        """See `TaskStore.get`."""

        def work(conn: Conn) -> TaskRef | None:
            row = conn.execute(f"SELECT ref FROM {self._tasks} WHERE task_id = %s".encode(), (task_id,)).fetchone()
            return TaskRef.from_json(row[0]) if row is not None else None

        return self._run(work, single=True)

    def unfinished(self) -> list[TaskRef]:
        """See `TaskStore.unfinished`."""

        def work(conn: Conn) -> list[TaskRef]:
            query = f"SELECT ref FROM {self._tasks} WHERE NOT finished ORDER BY created_at, task_id"
            return [TaskRef.from_json(row[0]) for row in conn.execute(query.encode()).fetchall()]

        return self._run(work, single=True)

    def forget(self, task_id: str) -> None:
        """See `TaskStore.forget`."""

        def work(conn: Conn) -> None:
            conn.execute(
                f"WITH a AS (DELETE FROM {self._answers} WHERE task_id = %(t)s), l AS (DELETE FROM {self._leases} "
                f"WHERE task_id = %(t)s) DELETE FROM {self._tasks} WHERE task_id = %(t)s",
                {"t": task_id},
            )

        self._run(work, single=True)

    # -- the ledger ----------------------------------------------------------------------------

    def _fence(self, conn: Conn, task_id: str, holder: str | None, what: str) -> None:
        """Refuse (StoreError, rolling back) unless `holder` holds the lease now; the lease row is
        locked until the write commits, so no one takes it over in between.
        """
        if holder is None:
            return
        held = conn.execute(
            f"SELECT 1 FROM {self._leases} WHERE task_id = %s AND holder = %s AND expires > now() FOR SHARE",
            (task_id, holder),
        ).fetchone()
        if held is None:
            raise lease_lost(task_id, f"the task store on {self.server}", what)

    def write_answers(self, task_id: str, answers: Mapping[str, Any], *, holder: str | None = None) -> None:
        """See `TaskStore.write_answers` (committed before it returns)."""
        rows = [(task_id, str(key), json.dumps(value)) for key, value in answers.items()]

        def work(conn: Conn) -> None:
            self._fence(conn, task_id, holder, "its answers were not written")
            with conn.cursor() as cursor:
                cursor.executemany(
                    f"INSERT INTO {self._answers} (task_id, key, response, acknowledged) VALUES (%s, %s, %s, false) "
                    "ON CONFLICT (task_id, key) DO UPDATE SET response = EXCLUDED.response, acknowledged = false, "
                    "written_at = now()",
                    rows,
                )

        self._run(work)

    def acknowledge(self, task_id: str, keys: Iterable[str], *, holder: str | None = None) -> None:
        """See `TaskStore.acknowledge`."""
        names = [str(key) for key in keys]

        def work(conn: Conn) -> None:
            self._fence(conn, task_id, holder, "its answers were not acknowledged")
            conn.execute(
                f"UPDATE {self._answers} SET acknowledged = true WHERE task_id = %s AND key = ANY(%s)",
                (task_id, names),
            )

        self._run(work, single=holder is None)

    def unacknowledged(self, task_id: str) -> dict[str, Any]:
        """See `TaskStore.unacknowledged`."""

        def work(conn: Conn) -> dict[str, Any]:
            rows = conn.execute(
                f"SELECT key, response FROM {self._answers} WHERE task_id = %s AND NOT acknowledged ORDER BY key",
                (task_id,),
            ).fetchall()
            return {key: json.loads(response) for key, response in rows}

        return self._run(work, single=True)

    # -- leases --------------------------------------------------------------------------------

    def acquire(self, task_id: str, holder: str, ttl: float) -> bool:
        """See `TaskStore.acquire` (expiry on the database's clock)."""

        def work(conn: Conn) -> bool:
            taken = conn.execute(
                f"INSERT INTO {self._leases} AS l VALUES (%(t)s, %(h)s, now() + make_interval(secs => %(ttl)s::float8))"
                " ON CONFLICT (task_id) DO UPDATE SET holder = EXCLUDED.holder, expires = EXCLUDED.expires "
                "WHERE l.holder = EXCLUDED.holder OR l.expires <= now() RETURNING holder",
                {"t": task_id, "h": holder, "ttl": float(ttl)},
            ).fetchone()
            if taken is not None:
                return True
            row = conn.execute(
                f"SELECT holder FROM {self._leases} WHERE task_id = %s FOR UPDATE".encode(), (task_id,)
            ).fetchone()
            if row is None or not holder_gone(row[0]):
                return False
            conn.execute(
                f"UPDATE {self._leases} SET holder = %s, expires = now() + make_interval(secs => %s::float8) "
                "WHERE task_id = %s",
                (holder, float(ttl), task_id),
            )
            log.debug("task %s: lease taken over from a holder gone", short_id(task_id))
            return True

        return self._run(work, piped=True)

    def renew(self, task_id: str, holder: str, ttl: float) -> bool:
        """See `TaskStore.renew`."""

        def work(conn: Conn) -> bool:
            done = conn.execute(
                f"UPDATE {self._leases} SET expires = now() + make_interval(secs => %s::float8) "
                "WHERE task_id = %s AND holder = %s",
                (float(ttl), task_id, holder),
            )
            return done.rowcount == 1

        return self._run(work, single=True, line=True)

    def renew_many(self, leases: Sequence[tuple[str, str]], ttl: float) -> list[bool]:
        """Renew many leases in one statement (each ``(task_id, holder)`` as `renew` would): for
        each, whether its holder still held it. Optional in a store: a renewer renews one lease at
        a time without it.
        """
        pairs = [(str(task_id), str(holder)) for task_id, holder in leases]
        return (
            self._run(lambda conn: batch.renew_many(conn, self._t, pairs, ttl), single=True, line=True) if pairs else []
        )

    def acquire_many(self, task_ids: Iterable[str], holder: str, ttl: float) -> set[str]:
        """Take the leases of many tasks for `holder` in one transaction (each as `acquire` would,
        on the database's clock): the ids of those taken. Optional in a store: a group takes one
        lease at a time without it.
        """
        wanted = sorted({str(task_id) for task_id in task_ids})  # in one order: no deadlock between two
        here = f"{machine_id()}/{pid_namespace()}/"
        return self._run(lambda conn: batch.acquire_many(conn, self._t, wanted, holder, ttl, here)) if wanted else set()

    def release(self, task_id: str, holder: str) -> None:
        """See `TaskStore.release`."""

        def work(conn: Conn) -> None:
            conn.execute(f"DELETE FROM {self._leases} WHERE task_id = %s AND holder = %s".encode(), (task_id, holder))

        self._run(work, single=True)

    def release_many(self, leases: Sequence[tuple[str, str]]) -> None:
        """Free many leases in one statement (each ``(task_id, holder)`` as `release` would).
        Optional in a store: a group frees one lease at a time without it.
        """
        pairs = [(str(task_id), str(holder)) for task_id, holder in leases]
        if pairs:
            self._run(lambda conn: batch.release_many(conn, self._t, pairs), piped=True)

    def finish_many(self, ends: Sequence[tuple[str, Status, str | None]]) -> None:
        """The ends of many tasks in one transaction: for each ``(task_id, status, holder)``, its
        final `status` recorded as ``update(task_id, status, holder=holder)`` would (fenced by a
        `holder`; None: it held none, unfenced), its unacknowledged answers acknowledged, and the
        lease `holder` holds freed. Optional in a store: without it a wait's end takes `update`,
        `unacknowledged` and `release`.
        """
        checked = check_ends(ends)
        if checked:
            self._run(lambda conn: batch.finish_many(conn, self._t, checked), piped=True)

    def claim(self, holder: str, ttl: float, limit: int) -> list[TaskRef]:
        """See `TaskStore.claim`: the rows other claimers hold locked are skipped (``FOR UPDATE
        SKIP LOCKED``), so concurrent claimers take different tasks without waiting on each other.
        """
        count = claim_limit(limit)
        if not count:
            return []
        here = f"{machine_id()}/{pid_namespace()}/"

        return self._run(lambda conn: batch.claim(conn, self._t, holder, ttl, count, here))

    def __repr__(self) -> str:
        return f"<PostgresTaskStore {self.server} schema={self.schema}>"
