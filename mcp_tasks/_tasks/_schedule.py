"""When a wait on many tasks reads each task next, and when a task is gone for good.

The poll schedule is per task: the task's own ``pollIntervalMs`` (never read sooner: the spec asks
clients to honour it), the wait's `poll_interval` when it sends none, never below
`min_poll_interval`; after failed reads a backoff is added on top (a server's ``Retry-After`` is
honoured by the transport's retries before the read fails). A task on a listen stream is read
only every `SAFETY_FACTOR` intervals (at least `MIN_SAFETY_INTERVAL`), so a server that never
pushes cannot stall a wait.
"""

from __future__ import annotations

import datetime
import heapq
import itertools

from mcp_tasks._errors import INVALID_PARAMS, McpError
from mcp_tasks._redact import short_id
from mcp_tasks._status import Status

__all__ = ["EXPIRY_GRACE", "MAX_BACKOFF", "Due", "delay", "expired", "gone", "interval_of"]

SAFETY_FACTOR = 10
MIN_SAFETY_INTERVAL = 5.0
MAX_BACKOFF = 10.0
EXPIRY_GRACE = 1.0
"""Seconds past ``createdAt + ttlMs`` before a task still not finished is taken as expired (the
two clocks may differ a little).
"""


def interval_of(status: Status, poll_interval: float, min_poll_interval: float) -> float:
    """A task's poll interval: its own ``pollIntervalMs``, else the wait's; never below the floor."""
    suggested = status.poll_interval_ms / 1000 if status.poll_interval_ms else poll_interval
    return max(suggested, min_poll_interval)


def delay(interval: float, *, streamed: bool, failures: int) -> float:
    """Seconds until the next read of a task whose poll interval is `interval`."""
    if streamed:
        interval = max(SAFETY_FACTOR * interval, MIN_SAFETY_INTERVAL)
    if failures:
        interval += min(interval * 2**failures, MAX_BACKOFF)
    return interval


def expired(status: Status, now: datetime.datetime | None = None) -> bool:
    """Whether an unfinished task is past its ``createdAt + ttlMs`` (the server may drop it)."""
    if status.terminal or status.ttl_ms is None or not status.created_at:
        return False
    try:
        created = datetime.datetime.fromisoformat(status.created_at.replace("Z", "+00:00"))
    except ValueError:
        return False
    if created.tzinfo is None:
        created = created.replace(tzinfo=datetime.timezone.utc)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return now > created + datetime.timedelta(milliseconds=status.ttl_ms, seconds=EXPIRY_GRACE)


def gone(task_id: str, why: str, cause: McpError | None = None) -> McpError:
    """The error that ends the wait of a task the server no longer has (-32602 after it existed):
    `why` is "expired" when it was past its ``createdAt + ttlMs``, else "forgotten". Only the
    server's answer ends a wait: a task past its TTL that the server still reports is waited for
    (the two clocks, or the server's stamps, may be off).
    """
    text = {
        "expired": "expired: it was past its createdAt + ttlMs, and the server no longer knows it "
        "(-32602); its result is lost",
        "forgotten": "is no longer known to the server (it answered -32602 after the task existed): "
        "it expired or was deleted, and its result is lost",
    }[why]
    data = {"taskId": task_id, "reason": why}
    return McpError(INVALID_PARAMS, f"Task {short_id(task_id)} {text}", data, "protocol", cause)


class Due:
    """When each member of a wait on many tasks is to be read next: the earliest first. A member
    scheduled again keeps only its latest time (an earlier entry is skipped when it comes up).
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int]] = []
        self._order = itertools.count()
        self._at: dict[int, float] = {}

    def schedule(self, index: int, at: float) -> None:
        """Read member `index` at `at` (monotonic), and not at a time set before."""
        self._at[index] = at
        heapq.heappush(self._heap, (at, next(self._order), index))

    def take(self, now: float) -> list[int]:
        """The members due by `now`, in their order (each once, at its latest time)."""
        due = []
        while self._heap and self._heap[0][0] <= now:
            at, _, index = heapq.heappop(self._heap)
            if self._at.get(index) == at:
                del self._at[index]
                due.append(index)
        return due

    def next(self) -> float | None:
        """When the next member is due, None when none is."""
        return self._heap[0][0] if self._heap else None
