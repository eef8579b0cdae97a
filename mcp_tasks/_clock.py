"""Deadlines on the monotonic clock, and waits cut into slices so Ctrl-C stops them promptly."""

from __future__ import annotations

import math
import queue
import threading
import time
from typing import Final, TypeVar

__all__ = ["SLICE", "Deadline", "check_duration", "check_timeout", "get_sliced", "wait_sliced"]

SLICE: Final = 0.25
"""The longest single block: a wait re-checks (and lets signals in) at least this often."""

T = TypeVar("T")


class Deadline:
    """A point on the monotonic clock, or none (`timeout=None` means wait for ever)."""

    __slots__ = ("at",)

    def __init__(self, timeout: float | None) -> None:
        self.at = None if timeout is None else time.monotonic() + timeout

    def remaining(self) -> float | None:
        """Seconds left (never negative), or None without a deadline."""
        if self.at is None:
            return None
        return max(self.at - time.monotonic(), 0.0)

    def expired(self) -> bool:
        """Whether the deadline has passed."""
        return self.at is not None and time.monotonic() >= self.at

    def bound(self, limit: float | None) -> float | None:
        """The time left, cut to `limit` when that is shorter (None means no bound)."""
        left = self.remaining()
        if left is None:
            return limit
        return left if limit is None else min(left, limit)


def check_timeout(name: str, value: object) -> float | None:
    """Validate a timeout in seconds: a positive finite number, or None for no limit."""
    if value is None:
        return None
    return check_duration(name, value)


def check_duration(name: str, value: object) -> float:
    """Validate a duration in seconds: a positive finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)


def wait_sliced(event: threading.Event, timeout: float | None) -> bool:
    """`event.wait(timeout)` in slices; True when the event is set."""
    deadline = Deadline(timeout)
    while True:
        left = deadline.remaining()
        if event.wait(SLICE if left is None else min(SLICE, left)):
            return True
        if left is not None and left <= SLICE:
            return event.is_set()


def get_sliced(source: queue.Queue[T], timeout: float | None) -> T:
    """`source.get(timeout=timeout)` in slices; raises `queue.Empty` when the time is up."""
    deadline = Deadline(timeout)
    while True:
        left = deadline.remaining()
        try:
            return source.get(timeout=SLICE if left is None else min(SLICE, left))
        except queue.Empty:
            if left is not None and left <= SLICE:
                raise
