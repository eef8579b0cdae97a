"""psycopg's words about a connection our own deadline cut (`_pg_deadline.py`). Cut in pipeline
mode, psycopg cannot end the pipeline (its closing sync needs the socket we shut) and warns
"error ignored terminating <psycopg.Pipeline [BAD]>"; handed back closed, its pool warns
"discarding closed connection". No public call of psycopg ends a pipeline without that sync, so
these two warnings, and only while the call that logs them is one whose cut fired, are dropped:
the cut is expected, and said once, by the `StoreError` its caller gets. Any other record, or
these where no cut of ours fired (a connection the server ended), passes as psycopg logs it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

__all__ = ["EXPECTED", "calls_cut", "quiet_cut_warnings"]

EXPECTED = ("error ignored terminating <psycopg.Pipeline", "error ignored exiting <psycopg.Pipeline",
            "discarding closed connection")  # fmt: skip
"""How the warnings dropped begin (psycopg's pipeline; psycopg_pool's return of a connection)."""

_LOGGERS = ("psycopg", "psycopg.pool")


class _Fired(Protocol):
    fired: bool


_CALL: ContextVar[_Fired | None] = ContextVar("mcp_tasks_pg_cut", default=None)
_installed = False
_install_lock = threading.Lock()


class _CutConnections(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        call = _CALL.get()
        if call is None or not call.fired or record.levelno < logging.WARNING:
            return True
        return not record.getMessage().startswith(EXPECTED)


def quiet_cut_warnings() -> None:
    """Have psycopg's loggers drop the warnings about connections cut by us (idempotent)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        _installed = True
        for name in _LOGGERS:
            logging.getLogger(name).addFilter(_CutConnections())


@contextmanager
def calls_cut(cut: _Fired) -> Iterator[None]:
    """Inside, psycopg's records are of the call `cut` watches (dropped as above once it fired)."""
    token = _CALL.set(cut)
    try:
        yield
    finally:
        _CALL.reset(token)
