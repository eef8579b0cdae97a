"""The PostgreSQL store's calls end on the client's own clock. A server that stops answering (a
partition, a frozen machine) never applies its ``statement_timeout``, and a frozen server on the
same host still acknowledges at the TCP level: only the client can end the wait. Each call holds
a `Cut` with its deadline; at the deadline a watchdog thread (``mcp_tasks-postgres-deadline``,
one per store, started with the first call, joined by `Deadlines.close`) shuts the connection's
socket down, which wakes psycopg's blocked read at once; the call then raises `StoreError` and its
connection is closed, never pooled. A `Hurry` (the caller's owner closing) moves it earlier.

psycopg's warnings about a connection so cut are dropped (`_pg_cut_logs.py`): expected, and said
by the caller's `StoreError`.

TCP keepalives and a ``tcp_user_timeout`` (`NETWORK`) are added to the connections too, unless
the connection string sets them: across a real network they end a connection whose peer is gone.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from mcp_tasks._store._bound import on_hurry
from mcp_tasks._store._error import StoreError
from mcp_tasks._store._pg_cut_logs import calls_cut, quiet_cut_warnings
from mcp_tasks._threads import join_all, start_thread

if TYPE_CHECKING:
    import psycopg

    Conn = psycopg.Connection[tuple[Any, ...]]

__all__ = ["NETWORK", "Cut", "Deadlines", "network_options"]

T = TypeVar("T")

NETWORK: dict[str, int] = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 30_000,
}
"""libpq's options for a peer that goes away: probe an idle connection after 10 s, give up after
3 probes 5 s apart; data unacknowledged for 30 s ends the connection."""


def network_options(conninfo: str) -> dict[str, int]:
    """`NETWORK`, less the options `conninfo` sets itself (its own choice wins)."""
    from psycopg.conninfo import conninfo_to_dict

    given = conninfo_to_dict(conninfo)
    return {key: value for key, value in NETWORK.items() if key not in given}


class Cut:
    """One call's watch: its connection's socket is shut down at `at`, or when `move`d earlier
    and that passes. `fired` once it was (then the connection must be closed, not pooled).
    """

    __slots__ = ("_dog", "at", "closed", "fd", "fired")

    def __init__(self, dog: Deadlines, at: float) -> None:
        self._dog = dog
        self.at = at
        self.fd: int | None = None
        self.fired = False
        self.closed = False

    def attach(self, fd: int) -> None:
        """Watch the socket `fd` (shut down at once when the deadline has passed already)."""
        with self._dog.lock:
            self.fd = fd
            if self.fired:
                _shut(fd)

    def move(self, at: float) -> None:
        """End the call by `at` if that is earlier (the caller's owner is closing)."""
        self._dog.move(self, at)

    def fire(self) -> None:
        """Shut the socket down now. The lock is held while it is: the socket cannot be closed
        (nor its number reused) meanwhile, as `close` takes the lock first.
        """
        with self._dog.lock:
            if self.fired or self.closed:
                return
            self.fired = True
            if self.fd is not None:
                _shut(self.fd)

    def close(self) -> bool:
        """The call is over: its socket is never shut from here on. True when it was."""
        return self._dog.release(self)

    def run(
        self,
        conn: Conn,
        work: Callable[[Conn], T],
        statement_ms: int | None = None,
        *,
        single: bool = False,
        piped: bool = False,
    ) -> T:
        """`work(conn)` and its commit (or rollback) under this watch, its statements bounded by
        the server too (`statement_ms`: in this transaction); a connection cut is closed. A
        `single` statement runs in autocommit: one round trip, where a transaction takes three
        or four (BEGIN, the bound, the statement, COMMIT), which on a slow link is seconds. A
        `piped` transaction is sent in pipeline mode: its statements go out without waiting for
        each other's answers, a round trip only where `work` reads a result and one for the rest
        with the commit (a task's end: two, not eight, its rows locked for one), so it fits its
        bound on a link a second slow. Its BEGIN and COMMIT are statements of its own (psycopg's
        own BEGIN waits for its answer).
        """
        import psycopg

        self.attach(conn.pgconn.socket)
        try:
            try:
                if single or piped:
                    conn.autocommit = True
                    try:
                        return work(conn) if single else _piped(conn, work, statement_ms)
                    except BaseException:
                        if piped and not self.fired:
                            _roll_back(conn)  # before leaving autocommit, which needs no transaction open
                        raise
                    finally:
                        _back_to_transactions(conn)
                if statement_ms is not None:
                    conn.execute(_bound(statement_ms))
                result = work(conn)
                conn.commit()
                return result
            except BaseException:
                if not self.fired and not single and not piped:
                    _roll_back(conn)
                raise
        except psycopg.Error as exc:
            if self.fired:
                raise StoreError("the server did not answer in time: the call was cut at its deadline") from exc
            raise
        finally:
            if self.close():
                conn.close()


class Deadlines:
    """One thread for the `Cut`s of one store (see the module)."""

    def __init__(self, name: str) -> None:
        self.lock = threading.Lock()
        self._wake = threading.Condition(self.lock)
        self._name = name
        self._open: set[Cut] = set()
        self._target: float | None = None  # when the sleeper wakes next (None: not before notified)
        self._thread: threading.Thread | None = None
        self._closed = False
        quiet_cut_warnings()

    def cut(self, at: float) -> Cut:
        """A watch for one call that must end by `at` (monotonic)."""
        cut = Cut(self, at)
        with self.lock:
            cut.fired = self._closed  # the store is closing: nothing more goes out
            self._open.add(cut)
            if self._thread is None and not self._closed:
                self._target = at
                self._thread = start_thread(f"postgres-deadline-{self._name}", self._run)
            else:
                self._sooner(at)
        return cut

    def watching(self, at: float) -> _Watching:
        """`cut(at)` as a context manager, following the caller's hurry (`on_hurry`)."""
        return _Watching(self, at)

    def move(self, cut: Cut, at: float) -> None:
        """See `Cut.move`."""
        with self.lock:
            if at < cut.at and not cut.closed:
                cut.at = at
                self._sooner(at)

    def _sooner(self, at: float) -> None:
        # the lock held: wake the sleeper only when it would wake too late (one wake-up, not one per call)
        if self._target is None or at < self._target:
            self._target = at
            self._wake.notify()

    def release(self, cut: Cut) -> bool:
        """See `Cut.close`."""
        with self.lock:
            cut.closed = True
            cut.fd = None
            self._open.discard(cut)
            return cut.fired

    def close(self) -> None:
        """Cut the calls still open and join the thread."""
        with self.lock:
            self._closed = True
            thread, self._thread = self._thread, None
            left = list(self._open)
            self._wake.notify()
        for cut in left:
            cut.fire()
        if thread is not None:
            join_all([thread], 1.0)

    def _run(self) -> None:
        while True:
            with self.lock:
                while True:
                    if self._closed:
                        return
                    now = time.monotonic()
                    due = [cut for cut in self._open if cut.at <= now]
                    if due:
                        break
                    nearest = min((cut.at for cut in self._open), default=None)
                    self._target = nearest
                    self._wake.wait(None if nearest is None else nearest - now)
                for cut in due:
                    self._open.discard(cut)
            for cut in due:
                cut.fire()


class _Watching:
    __slots__ = ("_at", "_cut", "_dog", "_hurry", "_logs")

    def __init__(self, dog: Deadlines, at: float) -> None:
        self._dog, self._at = dog, at

    def __enter__(self) -> Cut:
        self._cut = self._dog.cut(self._at)
        self._hurry = on_hurry(self._cut.move)
        self._hurry.__enter__()
        self._logs = calls_cut(self._cut)  # the pool's return of the connection included
        self._logs.__enter__()
        return self._cut

    def __exit__(self, *exc: object) -> None:
        try:
            self._logs.__exit__(None, None, None)
            self._hurry.__exit__(None, None, None)
        finally:
            self._cut.close()


def _bound(statement_ms: int) -> bytes:
    return f"SET LOCAL statement_timeout = {int(statement_ms)}".encode()


def _piped(conn: Conn, work: Callable[[Conn], T], statement_ms: int | None) -> T:
    """`work` in a transaction of its own statements, in pipeline mode (`conn` in autocommit):
    the last round trip, the pipeline's closing sync, brings the commit's answer too.
    """
    with conn.pipeline():
        conn.execute(b"BEGIN")
        if statement_ms is not None:
            conn.execute(_bound(statement_ms))
        result = work(conn)
        conn.execute(b"COMMIT")
    return result


def _roll_back(conn: Conn) -> None:
    import psycopg

    try:
        conn.rollback()
    except psycopg.Error:
        pass  # the connection is broken: the pool discards it


def _back_to_transactions(conn: Conn) -> None:
    """Leave `conn` out of autocommit for the pool's next caller (closed if it cannot be)."""
    import psycopg

    if conn.closed:
        return
    try:
        conn.autocommit = False
    except psycopg.Error:
        conn.close()  # never pooled in autocommit: a transaction of many statements would not be one


def _shut(fd: int) -> None:
    """Shut down the socket `fd` (both ways), leaving the descriptor itself to its owner."""
    try:
        sock = socket.socket(fileno=fd)
    except OSError:
        return  # closed already
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # not connected any more
    finally:
        sock.detach()
