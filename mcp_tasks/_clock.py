"""Deadlines on the monotonic clock, and blocking waits that Ctrl-C can stop promptly.

Why the main thread waits in short slices: a real SIGINT interrupts a blocked wait at once, but
`_thread.interrupt_main()` (and a SIGINT the OS hands to another thread) only marks the signal as
pending; the main thread raises `KeyboardInterrupt` when its blocking call returns. So the main
thread blocks at most `INTERRUPT_SLICE` at a time. Other threads never receive `KeyboardInterrupt`
and block in one piece, waking only for what they wait for.

The clock stands below the errors: what a passed deadline raises (`RequestTimeout`) is told it by
`mcp_tasks._errors` when the package loads (`expire_with`).
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable
from typing import Final, TypeVar

__all__ = [
    "INTERRUPT_SLICE",
    "MIN_STEP",
    "SLICE",
    "Deadline",
    "block_for",
    "check_duration",
    "check_timeout",
    "expire_with",
    "get_sliced",
    "pause",
    "wait_condition",
    "wait_sliced",
]

SLICE: Final = 0.25
"""A coarse re-check period, for loops that poll state of their own (not for waking on signals)."""

INTERRUPT_SLICE: Final = 0.02
"""In the main thread, the longest single block, so `_thread.interrupt_main()` is seen promptly."""

MIN_STEP: Final = 0.001
"""Less time than this left is no time: a step is never given a zero or near-zero timeout."""

T = TypeVar("T")


def _timed_out(timeout: float) -> BaseException:
    return TimeoutError(f"No answer within {timeout}s")


class _Expiry:
    """What `Deadline.step` raises when the time is up, made from the deadline's timeout."""

    error: Callable[[float], BaseException] = _timed_out


def expire_with(error: Callable[[float], BaseException]) -> None:
    """Have `Deadline.step` raise ``error(timeout)`` when the time is up (the errors give
    `RequestTimeout` when they load; before that, a plain `TimeoutError`).
    """
    _Expiry.error = error


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

        Never zero or negative: raises `RequestTimeout` (see `expire_with`) when the time is up, so
        expiry is decided before any I/O and no socket or validator ever sees a zero timeout.
        """
        left = self.bound(cap)
        if left is None:
            return None
        if left < MIN_STEP:
            raise _Expiry.error(self.timeout if self.timeout is not None else 0.0)
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


def block_for(timeout: float | None) -> float | None:
    """How long one blocking call may block of `timeout` (None: for ever) in this thread: all of
    it, except in the main thread, which blocks at most `INTERRUPT_SLICE` at a time.
    """
    if threading.current_thread() is threading.main_thread():
        return INTERRUPT_SLICE if timeout is None else min(timeout, INTERRUPT_SLICE)
    return timeout


def _end_of(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + max(timeout, 0.0)


def _left(end: float | None) -> float | None:
    return None if end is None else end - time.monotonic()


def wait_sliced(event: threading.Event, timeout: float | None) -> bool:
    """`event.wait(timeout)` that Ctrl-C stops promptly; True when the event is set."""
    end = _end_of(timeout)
    while True:
        left = _left(end)
        if left is not None and left <= 0:
            return event.is_set()
        if event.wait(block_for(left)):
            return True


def wait_condition(condition: threading.Condition, end: float | None) -> bool:
    """One `condition.wait()` (the lock held) until `end` on the monotonic clock (None: no end);
    False when `end` has passed without waiting. The caller re-checks its predicate either way.
    """
    left = _left(end)
    if left is not None and left <= 0:
        return False
    condition.wait(block_for(left))
    return True


def get_sliced(source: queue.Queue[T], timeout: float | None) -> T:
    """`source.get(timeout=timeout)` that Ctrl-C stops promptly; raises `queue.Empty` at the end."""
    end = _end_of(timeout)
    while True:
        left = _left(end)
        if left is not None and left <= 0:
            return source.get_nowait()
        try:
            return source.get(timeout=block_for(left))
        except queue.Empty:
            continue


def pause(seconds: float) -> None:
    """`time.sleep(seconds)` that Ctrl-C stops promptly."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        block = block_for(left)
        time.sleep(left if block is None else block)
