"""The decisions of a worker that runs for ever (`adopt(forever=True)`), with no I/O: when it
claims next, how many tasks it asks for (only the places its `limit` leaves), and how long it
waits before asking a store that failed again (a bounded exponential backoff). It also tells
its shell when an outage begins and ends, so that each is said once; and which tasks rest,
their server unreachable, before they are followed again (`Rests`).
"""

from __future__ import annotations

import attrs

__all__ = ["BACKOFF_FIRST", "BACKOFF_MOST", "CLAIM_EVERY", "REST_FIRST", "REST_MOST", "Pace", "Rests", "claim_interval"]

CLAIM_EVERY = 1.0
"""Seconds between claims at most: an orphan is claimed within about a second of its lease lapsing."""
BACKOFF_FIRST = 0.5
"""Seconds before the first claim after a store failed."""
BACKOFF_MOST = 5.0
"""Seconds between claims at most while the store keeps failing."""
REST_FIRST = 5.0
"""Seconds a task whose server could not be reached rests before it is followed again."""
REST_MOST = 300.0
"""Seconds such a task rests at most, its server failing every time (doubling from `REST_FIRST`)."""


def claim_interval(lease_ttl: float) -> float:
    """Seconds between claims for leases of `lease_ttl`: a third of it, once a second at most."""
    return min(CLAIM_EVERY, lease_ttl / 3)


@attrs.define
class Pace:
    """A for-ever worker's claiming: `limit` tasks held at most, a claim every `interval`
    seconds while there is room, backing off while the store fails. Times are the monotonic
    clock's, given by the caller.
    """

    limit: int
    interval: float
    held: int = 0
    failures: int = 0
    due: float = 0.0

    def wanted(self, now: float) -> int:
        """How many tasks to claim now: 0 before the next claim is due, or without room."""
        if now < self.due:
            return 0
        return max(self.limit - self.held, 0)

    def claimed(self, now: float, count: int) -> bool:
        """A claim took `count` tasks; True when it ended an outage (say so once)."""
        recovered = self.failures > 0
        self.failures = 0
        self.held += count
        self.due = now + self.interval
        return recovered

    def failed(self, now: float) -> bool:
        """A claim failed (the store did not answer); True when an outage begins (say so once)."""
        self.failures += 1
        self.due = now + self.backoff()
        return self.failures == 1

    def backoff(self) -> float:
        """Seconds to wait after the failures so far: doubling from `BACKOFF_FIRST` to `BACKOFF_MOST`."""
        if not self.failures:
            return 0.0
        return min(BACKOFF_FIRST * 2.0 ** min(self.failures - 1, 16), BACKOFF_MOST)

    def ended(self, count: int = 1) -> None:
        """`count` tasks held ended (their leases freed): room for as many."""
        self.held = max(self.held - count, 0)

    def wait(self, now: float) -> float | None:
        """Seconds until the next claim is due; None while the worker is full (an end makes room)."""
        if self.held >= self.limit:
            return None
        return max(self.due - now, 0.0)


@attrs.define
class Rests:
    """Tasks whose server could not be reached, resting before they are followed again: a
    claim that takes one frees it unfollowed, so an unreachable server is not tried (and its
    tasks failed) at every claim. Each rests `REST_FIRST` seconds after its first failure,
    doubling up to `REST_MOST`; a task followed to its end is forgotten.
    """

    until: dict[str, float] = attrs.field(factory=dict)
    failures: dict[str, int] = attrs.field(factory=dict)

    def failed(self, task_id: str, now: float) -> bool:
        """`task_id`'s server could not be reached: it rests. True the first time (say so once)."""
        count = self.failures.get(task_id, 0) + 1
        self.failures[task_id] = count
        self.until[task_id] = now + min(REST_FIRST * 2.0 ** min(count - 1, 16), REST_MOST)
        return count == 1

    def resting(self, task_id: str, now: float) -> bool:
        """Whether `task_id` rests still (a claim of it frees it unfollowed)."""
        return self.until.get(task_id, now) > now

    def ended(self, task_id: str) -> None:
        """`task_id` was followed to its end: nothing of it is kept."""
        self.until.pop(task_id, None)
        self.failures.pop(task_id, None)
