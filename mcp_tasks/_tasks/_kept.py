"""The tasks a client made that no wait wants yet, which its shared watch (_watch.py) follows from
their creation (issue 36: a set waited on after its tasks are made learns of them as soon as a
future does): pure bookkeeping of when each was kept and when it is let go.

An id is let go when a wait takes it over (`take`), `KEEP` seconds after it was made with no wait
for it, or when more than `MAX_KEPT` are kept (the oldest first): a client that makes tasks and
never waits on them (or waits by polling) does not widen its stream for ever. What the watch heard
of an id let go is forgotten: a later wait reads the task, as it would without the keeping.
"""

from __future__ import annotations

from itertools import islice

__all__ = ["KEEP", "MAX_KEPT", "Kept"]

KEEP = 300.0
"""Seconds a task made by this client is followed while no wait wants it (a batch made on a busy
store may take minutes to make: its first tasks are still followed when its wait begins)."""
MAX_KEPT = 10_000
"""Ids followed at most while no wait wants them (beyond, the oldest are let go)."""


class Kept:
    """The ids kept, in the order kept (`now` never goes back: a monotonic clock)."""

    def __init__(self, hold: float | None = None, most: int | None = None) -> None:
        hold = KEEP if hold is None else hold  # (read when made: a test may set them)
        most = MAX_KEPT if most is None else most
        if hold < 0 or most < 1:
            raise ValueError(f"Kept needs hold >= 0 and most >= 1, got {hold!r} and {most!r}")
        self.hold, self.most = hold, most
        self._since: dict[str, float] = {}

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._since

    def __len__(self) -> int:
        return len(self._since)

    def add(self, task_id: str, now: float) -> list[str]:
        """Keep `task_id` from `now`; the ids to let go at once (the oldest beyond `most`)."""
        if task_id in self._since:
            return []
        self._since[task_id] = now
        over = len(self._since) - self.most
        if over <= 0:
            return []
        oldest = list(islice(self._since, over))
        for old in oldest:
            del self._since[old]
        return oldest

    def take(self, task_id: str) -> bool:
        """A wait wants `task_id`: whether it was kept (it is no longer)."""
        return self._since.pop(task_id, None) is not None

    def due(self, now: float) -> list[str]:
        """The ids kept `hold` seconds by `now`, no longer kept: let them go."""
        gone = []
        for task_id, since in self._since.items():
            if since + self.hold > now:
                break
            gone.append(task_id)
        for task_id in gone:
            del self._since[task_id]
        return gone

    def since(self, task_id: str) -> float | None:
        """When `task_id` was kept (None: it is not)."""
        return self._since.get(task_id)

    def oldest(self) -> float | None:
        """When the oldest id kept now was kept (None: none is)."""
        for since in self._since.values():
            return since
        return None

    def next(self) -> float | None:
        """When the next id is due (None: none kept)."""
        for since in self._since.values():
            return since + self.hold
        return None
