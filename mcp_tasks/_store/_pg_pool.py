"""The PostgreSQL store's connections: a psycopg pool per process. A process forked from one that
had opened the store (a web server's workers, forked after the app loaded) gets a pool of its own
at its first call; the parent's connections are left to the parent, never used nor closed here.
"""

from __future__ import annotations

import functools
import os
import threading
from typing import TYPE_CHECKING, Any

from mcp_tasks._store._pg_deadline import network_options

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    Conn = psycopg.Connection[tuple[Any, ...]]

__all__ = ["RECONNECT_AT_MOST", "Pools"]

RECONNECT_AT_MOST = 0.5
"""Seconds at most between two attempts to reconnect a pool's connection after an outage.
psycopg_pool doubles the pause after each failure (1, 2, 4, 8 s...), so the first store call
after a 10 s outage waited up to 5 s more for a connection: leases lapsed that a prompt
reconnection would have kept.
"""


@functools.cache
def _prompt_pool() -> type[Any]:
    """A psycopg pool that tries to reconnect every `RECONNECT_AT_MOST` seconds at most."""
    from psycopg_pool import ConnectionPool
    from psycopg_pool.pool import AddConnection

    class PromptPool(ConnectionPool):
        def schedule_task(self, task: Any, delay: float) -> None:
            """Schedule `task`; a reconnection after a failed one, within `RECONNECT_AT_MOST`."""
            super().schedule_task(task, min(delay, RECONNECT_AT_MOST) if isinstance(task, AddConnection) else delay)

    return PromptPool


class Pools:
    """The pool of the current process for one store (threads named ``mcp_tasks-postgres-…``)."""

    def __init__(self, conninfo: str, *, size: int, connect_timeout: int, busy_timeout: float) -> None:
        self._conninfo = conninfo
        self._size = size
        self._connect = {"connect_timeout": connect_timeout, **network_options(conninfo)}
        self._busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._inherited: list[ConnectionPool[Conn]] = []  # a parent's pools: kept from the garbage collector
        self._pid = os.getpid()
        self._pool = self._new()
        self._line: ConnectionPool[Conn] | None = self._new(1, "mcp_tasks-postgres-line")

    def _new(self, size: int | None = None, name: str = "mcp_tasks-postgres") -> ConnectionPool[Conn]:
        timeout_ms = int(self._busy_timeout * 1000)

        def configure(conn: Conn) -> None:  # in autocommit: one round trip, not three (BEGIN, SET, COMMIT)
            conn.autocommit = True
            conn.execute(f"SET statement_timeout = {timeout_ms}")
            conn.autocommit = False

        pool: ConnectionPool[Conn] = _prompt_pool()(
            self._conninfo,
            min_size=1,
            max_size=self._size if size is None else size,
            kwargs=self._connect,
            configure=configure,
            name=name,
            timeout=self._busy_timeout,
            num_workers=2 if size is None else 1,
            open=False,
        )
        pool.open(wait=False)
        return pool

    def get(self) -> ConnectionPool[Conn]:
        """The pool of the current process (made now in a process forked since the last call)."""
        if self._pid != os.getpid():
            with self._lock:
                if self._pid != os.getpid():
                    self._inherited += [self._pool] if self._line is None else [self._pool, self._line]
                    self._pool, self._line = self._new(), None
                    self._pid = os.getpid()
        return self._pool

    def line(self) -> ConnectionPool[Conn]:
        """The lease renewals' own connection (a pool of one, opened with the store, reopened in
        the background, threads ``mcp_tasks-postgres-line…``): a renewal never waits behind the
        store's other calls for a pooled connection (on a slow link, longer than its lease had
        left), nor opens one over the slow link when its turn comes.
        """
        self.get()  # a forked child's line is its own too
        with self._lock:
            if self._line is None:
                self._line = self._new(1, "mcp_tasks-postgres-line")
            return self._line

    def close(self) -> None:
        """Close this process's pool (joining its threads); a parent's is left to the parent."""
        if self._pid == os.getpid():
            with self._lock:
                line, self._line = self._line, None
            if line is not None:
                line.close()
            self._pool.close()
