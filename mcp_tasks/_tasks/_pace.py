"""The decisions of a worker that runs for ever (`adopt(forever=True)`), with no I/O: when it
claims next, how many tasks it asks for (only the places its `limit` leaves), and how long it
waits before asking a store that failed again (a bounded exponential backoff). It also tells
its shell when an outage begins and ends, so that each is said once.
"""

from __future__ import annotations

import attrs

__all__ = ["BACKOFF_FIRST", "BACKOFF_MOST", "CLAIM_EVERY", "Pace", "claim_interval"]

CLAIM_EVERY = 1.0
"""Seconds between claims at most: an orphan is claimed within about a second of its lease lapsing."""
BACKOFF_FIRST = 0.5
"""Seconds before the first claim after a store failed."""
BACKOFF_MOST = 5.0
"""Seconds between claims at most while the store keeps failing."""


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
