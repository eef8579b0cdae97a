"""How long a store call may wait for a busy store: a bound the caller sets around its calls (a
wait's deadline, a lease renewal's), kept per thread, so the `TaskStore` methods need no deadline
parameter and a store of one's own keeps its signature.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["STATUS_BUDGET", "best_effort", "store_bound", "store_deadline"]

STATUS_BUDGET = 2.0
"""Seconds a best-effort store write (a status read) may wait for a busy store, at most a quarter
of the time its caller has left: a store locked by another connection must not make a task that
has ended look timed out, while processes taking turns at one file (each a few milliseconds, up
to a second on a loaded machine) still get their statuses through."""

_BOUND: ContextVar[float | None] = ContextVar("mcp_tasks_store_bound", default=None)


@contextmanager
def store_deadline(at: float | None) -> Iterator[None]:
    """Store calls made inside give up retrying a busy store at `at` (on the monotonic clock;
    None: no bound of the caller's). A bound already set and earlier is kept.
    """
    outer = _BOUND.get()
    token = _BOUND.set(at if outer is None else outer if at is None else min(at, outer))
    try:
        yield
    finally:
        _BOUND.reset(token)


def store_bound() -> float | None:
    """The monotonic time the current caller's store calls must end by, or None."""
    return _BOUND.get()


@contextmanager
def best_effort() -> Iterator[None]:
    """Store calls made inside give up on a busy store after `STATUS_BUDGET` seconds, or a
    quarter of the time to the bound already set if that is less: for writes a wait can do
    without, such as a status's.
    """
    now = time.monotonic()
    outer = _BOUND.get()
    budget = STATUS_BUDGET if outer is None else min(STATUS_BUDGET, max(outer - now, 0.0) / 4)
    with store_deadline(now + budget):
        yield
