"""How long a store call may take: a bound the caller sets around its calls (a wait's deadline, a
lease renewal's), kept per thread, so the `TaskStore` methods need no deadline parameter and a
store of one's own keeps its signature. A store reads it with `store_bound()` as a call begins.

A `Hurry` (a client's, set when it closes) brings the bound of its calls forward to `QUICK`
seconds from then, those in flight included: a store that watches its calls on its own clock
follows the move with `on_hurry`, so a silent database never holds a closing client up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["END_BUDGET", "QUICK", "STATUS_BUDGET", "Hurry", "best_effort", "on_hurry", "store_bound", "store_deadline"]

QUICK = 0.1
"""Seconds a call gets when its caller's bound has (all but) passed, or its owner closes: one
quick try, so that a lease is still freed on a healthy store after a wait timed out."""

STATUS_BUDGET = 2.0
"""Seconds a best-effort store write (a status read) may wait for a busy store, at most a quarter
of the time its caller has left: a store locked by another connection must not make a task that
has ended look timed out, while processes taking turns at one file (each a few milliseconds, up
to a second on a loaded machine) still get their statuses through."""

END_BUDGET = 10.0
"""Seconds the record of a task's end may wait for a busy store (at most half the time its caller
has left): more than a status's, for an end left unrecorded makes a finished task look unfinished
(adopted and delivered again), yet bounded, for the caller has its result already."""


class Hurry:
    """The store calls of one owner (a client and its lease renewer): once `set`, each ends
    within `QUICK` seconds, those in flight counted from then, those made later from their start.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.at: float | None = None
        """When the calls in flight must end (monotonic), once set; None before."""
        self._moves: dict[int, Callable[[float], None]] = {}

    def set(self) -> None:
        """Hurry every call under this owner (idempotent)."""
        with self._lock:
            if self.at is not None:
                return
            self.at = time.monotonic() + QUICK
            moves = list(self._moves.values())
        for move in moves:
            move(self.at)

    def bound(self) -> float | None:
        """The bound it puts on a call beginning now (None: not set)."""
        return None if self.at is None else max(self.at, time.monotonic() + QUICK)

    @contextmanager
    def follow(self, move: Callable[[float], None]) -> Iterator[None]:
        """Have `move(at)` called if the owner is hurried while inside (at once if it already is)."""
        key = id(move)
        with self._lock:
            self._moves[key] = move
            at = self.at
        if at is not None:
            move(max(at, time.monotonic()))
        try:
            yield
        finally:
            with self._lock:
                self._moves.pop(key, None)


_BOUND: ContextVar[float | None] = ContextVar("mcp_tasks_store_bound", default=None)
_HURRY: ContextVar[Hurry | None] = ContextVar("mcp_tasks_store_hurry", default=None)


@contextmanager
def store_deadline(at: float | None, hurry: Hurry | None = None) -> Iterator[None]:
    """Store calls made inside end by `at` (on the monotonic clock; None: no bound of the
    caller's), and follow `hurry` (the owner's; None: the one already set). A bound already set
    and earlier is kept.
    """
    outer = _BOUND.get()
    token = _BOUND.set(at if outer is None else outer if at is None else min(at, outer))
    hurried = _HURRY.set(hurry) if hurry is not None else None
    try:
        yield
    finally:
        if hurried is not None:
            _HURRY.reset(hurried)
        _BOUND.reset(token)


def store_bound() -> float | None:
    """The monotonic time the current caller's store calls must end by (its hurry's, once set and
    earlier), or None.
    """
    bound = _BOUND.get()
    hurry = _HURRY.get()
    soon = hurry.bound() if hurry is not None else None
    return soon if bound is None else bound if soon is None else min(bound, soon)


@contextmanager
def on_hurry(move: Callable[[float], None]) -> Iterator[None]:
    """For a store's call: `move(at)` is called if the caller's owner is hurried meanwhile (its
    call must then end by `at`). Nothing happens without a hurry in the context.
    """
    hurry = _HURRY.get()
    if hurry is None:
        yield
        return
    with hurry.follow(move):
        yield


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
