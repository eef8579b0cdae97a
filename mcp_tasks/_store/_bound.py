"""How long a store call may wait for a busy store: a bound the caller sets around its calls (a
wait's deadline, a lease renewal's), kept per thread, so the `TaskStore` methods need no deadline
parameter and a store of one's own keeps its signature.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["END_BUDGET", "STATUS_BUDGET", "best_effort", "store_bound", "store_deadline"]

STATUS_BUDGET = 2.0
"""Seconds a best-effort store write (a status read) may wait for a busy store, at most a quarter
of the time its caller has left: a store locked by another connection must not make a task that
has ended look timed out, while processes taking turns at one file (each a few milliseconds, up
to a second on a loaded machine) still get their statuses through."""

END_BUDGET = 10.0
"""Seconds the record of a task's end may wait for a busy store (at most half the time its caller
has left): more than a status's, for an end left unrecorded makes a finished task look unfinished
(adopted and delivered again), yet bounded, for the caller has its result already."""

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
def best_effort(*, end: bool = False) -> Iterator[None]:
    """Store calls made inside give up on a busy store after `STATUS_BUDGET` seconds, or a
    quarter of the time to the bound already set if that is less: for writes a wait can do
    without, such as a status's. For a task's `end`: `END_BUDGET`, or half the time left.
    """
    now = time.monotonic()
    outer = _BOUND.get()
    most, share = (END_BUDGET, 2) if end else (STATUS_BUDGET, 4)
    budget = most if outer is None else min(most, max(outer - now, 0.0) / share)
    with store_deadline(now + budget):
        yield
