"""`Durations`: how long a tool's recent tasks ran, as one worker process saw them end, so that
a new call's checks wait for its task's likely end instead of reading "working" first.

Each check costs a worker slot, a message and a ``tasks/get``; in a busy fleet every check
that finds its task still working delays the starts and the checks of tasks that have ended.
Tasks of one tool often run alike, so a check is not sent before the age at which the
shortest of the tool's last `KEEP` tasks ended (`expected`). The shortest, not a typical one:
a call is seen later than it would have been only when it is shorter than every one of those;
a task that runs longer is then checked on the usual cadence from that age on. Nothing is
known before a task of the tool has ended in this process, and nothing is shared: each
worker process learns on its own.
"""

from __future__ import annotations

import collections
import datetime
import threading

from mcp_tasks._status import Status, TaskState

__all__ = ["KEEP", "Durations", "duration_of"]

KEEP = 16
"""How many of a tool's last durations a process keeps."""


def _epoch(text: str | None) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.timestamp()


def duration_of(status: Status) -> float | None:
    """Seconds a completed task ran, by the server's own times (``createdAt`` to
    ``lastUpdatedAt``); None when it did not complete or the server gave no times.
    """
    if status.status is not TaskState.COMPLETED:
        return None
    began, ended = _epoch(status.created_at), _epoch(status.last_updated_at)
    if began is None or ended is None or ended < began:
        return None
    return ended - began


class Durations:
    """The last `KEEP` durations of each (endpoint, tool), in one process (a lock: a threads
    pool runs checks at once).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], collections.deque[float]] = {}

    def note(self, endpoint: str, tool: str, status: Status) -> None:
        """Keep how long `status`'s task ran, when it completed and says so."""
        seconds = duration_of(status)
        if seconds is None:
            return
        with self._lock:
            self._seen.setdefault((endpoint, tool), collections.deque(maxlen=KEEP)).append(seconds)

    def expected(self, endpoint: str, tool: str) -> float | None:
        """The shortest recent duration of `tool` on `endpoint`, or None when none is known."""
        with self._lock:
            seen = self._seen.get((endpoint, tool))
            return min(seen) if seen else None
