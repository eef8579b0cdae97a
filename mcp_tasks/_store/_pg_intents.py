"""The PostgreSQL store's intents (calls recorded before they are sent; see _intent.py): the
methods `PostgresTaskStore` takes from `PgIntents`, each one transaction of its own (those on a
call's way, `record_intent` and `join_intent`, in pipeline mode: few round trips on a slow link).
Their table came with version 2 of the schema (_pg_schema.py).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from mcp_tasks._store._intent import Intent, result_json
from mcp_tasks._store._pg_batch import Tables, lease_from_start
from mcp_tasks._store._protocol import lease_ttl_of
from mcp_tasks._store._ref import TaskRef

if TYPE_CHECKING:
    import psycopg

    Conn = psycopg.Connection[tuple[Any, ...]]

__all__ = ["PRUNE_ONE_IN", "PgIntents"]

T = TypeVar("T")
PRUNE_ONE_IN = 64
"""One intent written in this many also drops the joined intents older than `keep_finished`."""
_COLUMNS = "endpoint, key, tool, digest, created_at, task_id, result"


class PgIntents:
    """The optional intent methods of a `TaskStore`, for `PostgresTaskStore` (which runs them)."""

    schema: str
    keep_finished: float

    def _run(self, work: Callable[[Conn], T], *, single: bool = False, line: bool = False, piped: bool = False) -> T:
        raise NotImplementedError

    @property
    def _intents(self) -> str:
        return f'"{self.schema}".intents'

    def record_intent(self, intent: Intent) -> Intent | None:
        """Keep `intent` (a call about to be sent) unless its endpoint and key are kept already:
        None when kept now, else the intent kept before (left as it is). Committed before it returns.
        """
        if not isinstance(intent, Intent):
            raise TypeError(f"expected an Intent, got {type(intent).__name__}")
        prune = random.randrange(PRUNE_ONE_IN) == 0
        row = (intent.endpoint, intent.key, intent.tool, intent.digest, intent.created_at)

        def work(conn: Conn) -> Intent | None:
            made = conn.execute(
                f"INSERT INTO {self._intents} (endpoint, key, tool, digest, created_at) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (endpoint, key) DO NOTHING RETURNING key".encode(),
                row,
            ).fetchone()
            if prune:
                conn.execute(
                    f"DELETE FROM {self._intents} WHERE (task_id IS NOT NULL OR result IS NOT NULL) "
                    "AND created_at < extract(epoch FROM now()) - %s".encode(),
                    (self.keep_finished,),
                )
            if made is not None:
                return None
            kept = conn.execute(
                f"SELECT {_COLUMNS} FROM {self._intents} WHERE endpoint = %s AND key = %s".encode(),
                (intent.endpoint, intent.key),
            ).fetchone()
            return Intent.from_row(*kept) if kept is not None else None

        return self._run(work, piped=True)  # two round trips, not four: a call on a slow link pays it first

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
        tasks = f'"{self.schema}".tasks'

        def work(conn: Conn) -> None:
            if ref is None:
                conn.execute(
                    f"UPDATE {self._intents} SET result = %s WHERE endpoint = %s AND key = %s".encode(),
                    (result_json(result), endpoint, key),
                )
                return
            conn.execute(
                f"INSERT INTO {tasks} AS k (task_id, finished, created_at, ref) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (task_id) DO UPDATE SET finished = EXCLUDED.finished, created_at = EXCLUDED.created_at, "
                "updated_at = now(), ref = EXCLUDED.ref WHERE NOT k.finished".encode(),  # as `record`: only forward
                (ref.task_id, ref.finished, ref.created_at, ref.to_json()),
            )
            if holder is not None:
                lease_from_start(
                    conn, Tables.of(self.schema), ref.task_id, holder, lease_ttl_of(self) if ttl is None else ttl
                )
            conn.execute(
                f"UPDATE {self._intents} SET task_id = %s WHERE endpoint = %s AND key = %s".encode(),
                (ref.task_id, endpoint, key),
            )

        self._run(work, piped=True)  # one round trip, not six

    def get_intent(self, endpoint: str, key: str) -> Intent | None:
        """The intent kept under `endpoint` and `key`, or None."""

        def work(conn: Conn) -> Intent | None:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM {self._intents} WHERE endpoint = %s AND key = %s".encode(), (endpoint, key)
            ).fetchone()
            return Intent.from_row(*row) if row is not None else None

        return self._run(work)

    def unrecorded_intents(self) -> list[Intent]:
        """The calls started whose task id (or result) was never recorded, oldest first."""

        def work(conn: Conn) -> list[Intent]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM {self._intents} WHERE task_id IS NULL AND result IS NULL "
                "ORDER BY created_at, endpoint, key".encode()
            ).fetchall()
            return [Intent.from_row(*row) for row in rows]

        return self._run(work)

    def forget_intent(self, endpoint: str, key: str) -> None:
        """Drop the intent kept under `endpoint` and `key` (its task, if any, stays)."""

        def work(conn: Conn) -> None:
            conn.execute(f"DELETE FROM {self._intents} WHERE endpoint = %s AND key = %s".encode(), (endpoint, key))

        self._run(work)
