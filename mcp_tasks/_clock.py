"""Deadlines on the monotonic clock, and waits cut into slices so Ctrl-C stops them promptly."""

from __future__ import annotations

import math
import queue
import threading
import time
from typing import Final, TypeVar

from mcp_tasks._errors import RequestTimeout

__all__ = ["MIN_STEP", "SLICE", "Deadline", "check_duration", "check_timeout", "get_sliced", "wait_sliced"]

SLICE: Final = 0.25
"""The longest single block: a wait re-checks (and lets signals in) at least this often."""

MIN_STEP: Final = 0.001
"""Less time than this left is no time: a step is never given a zero or near-zero timeout."""

T = TypeVar("T")


class Deadline:
    """A point on the monotonic clock, or none (`timeout=None` means wait for ever).

    One public call makes one Deadline from its timeout and hands it down: every step of the call
    (connecting, writing, reading, each input round, each retry) takes its time from it, so the
    timeout is a total. `timeout` is the configured total, for error messages.
    """

    __slots__ = ("at", "timeout")

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self.at = None if timeout is None else time.monotonic() + timeout

    @classmethod
    def never(cls) -> Deadline:
        """A deadline that never passes."""
        return cls(None)

    def remaining(self) -> float | None:
        """Seconds left (never negative), or None without a deadline."""
        if self.at is None:
            return None
        return max(self.at - time.monotonic(), 0.0)

    def expired(self) -> bool:
        """Whether the deadline has passed."""
        return self.at is not None and time.monotonic() >= self.at - MIN_STEP

    def bound(self, limit: float | None) -> float | None:
        """The time left, cut to `limit` when that is shorter (None means no bound)."""
        left = self.remaining()
        if left is None:
            return limit
        return left if limit is None else min(left, limit)

    def step(self, cap: float | None = None) -> float | None:
        """The timeout for the next blocking step: the time left, cut to `cap`; None for no limit.

        Never zero or negative: raises `RequestTimeout` when the time is up, so expiry is decided
        before any I/O and no socket or validator ever sees a zero timeout.
        """
        left = self.bound(cap)
        if left is None:
            return None
        if left < MIN_STEP:
            raise RequestTimeout(self.timeout if self.timeout is not None else 0.0)
        return left

    def within(self, cap: float | None) -> Deadline:
        """The earlier of this deadline and `cap` seconds from now (itself when `cap` is None)."""
        if cap is None:
            return self
        inner = Deadline(cap)
        if self.at is None or (inner.at is not None and inner.at < self.at):
            return inner
        return self

    def __repr__(self) -> str:
        left = self.remaining()
        return "<Deadline never>" if left is None else f"<Deadline {left:.3f}s left of {self.timeout}s>"


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
