"""The parts of the client's shared watch (_watch.py) that hold its state: the news a wait takes
(`Inbox`, with `READ` for "read it"), one listen stream (`Stream`), a stream merged into a new one
that is still read for a while (`Linger`), and the reads a new stream calls for (`CatchUp`).
"""

from __future__ import annotations

import enum
import threading
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from mcp_tasks._session._subscription import Subscription
from mcp_tasks._status import Status

__all__ = [
    "LINGER",
    "READ",
    "CatchUp",
    "Cue",
    "Inbox",
    "Linger",
    "News",
    "Stream",
    "replayed",
    "status_key",
]


class Cue(enum.Enum):
    """News that is not a Status."""

    READ = "read"
    """Read the task once (a notification without the full status, lost events, a new stream)."""


READ = Cue.READ
News = Status | Cue


class Inbox:
    """The news of one wait (a group of tasks): task id -> the latest Status (the first terminal
    one stays), or `READ`. Its `changed` (on the watch's lock) is notified only when news of its
    own tasks comes, or the watch closes: a thousand waits are not all woken by each one's news.
    """

    def __init__(self, lock: threading.RLock) -> None:
        self.news: dict[str, News] = {}
        self.changed = threading.Condition(lock)

    def take(self) -> dict[str, News]:
        """Everything that came since the last take (the watch's lock held by the caller)."""
        news, self.news = self.news, {}
        return news


class Stream:
    """One listen stream: its ids, and what it may bring again that a stream it replaced brought."""

    def __init__(self) -> None:
        self.subscription: Subscription | None = None  # set once acknowledged and taken on
        self.ids: set[str] = set()
        self.live = 0  # how many of its ids are wanted and followed on it
        self.closing = False
        self.replayed: set[tuple[Any, ...]] = set()  # (see `Linger`)


LINGER = 0.25
"""Seconds a stream merged into a new one is still read (see `Linger`): as long as the watch
gathers new ids before a merge (_streams.MERGE_GATHER), so that lingering holds no merge back.
"""


def status_key(params: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """What tells one status notification from another: None when it has no ``lastUpdatedAt``
    (two such of one task may be the same status twice, or two statuses alike).
    """
    if params.get("lastUpdatedAt") is None:
        return None
    return (params.get("taskId"), params.get("status"), params.get("lastUpdatedAt"), params.get("statusMessage"))


class Linger:
    """A stream (`old`) whose ids were all merged into a new one (`new`), still read for `LINGER`
    seconds (or until it ends): what the server pushed on it before the new stream was registered
    may still be on its way, and is news. Meanwhile the new stream is not read (its messages wait
    in the transport): its reader starts once the old one is closed, so that the watch's threads
    stay the manager and one reader. What the old stream brought (`heard`) becomes the new one's
    `Stream.replayed`: the new stream brings it again (pushed after its registration), and it is
    not news twice (nor an older status after a newer one). Kept under the watch's lock; while
    one lingers, no other merge opens.
    """

    def __init__(self, old: Stream, new: Stream) -> None:
        self.old, self.new = old, new
        self.until = time.monotonic() + LINGER
        self.heard: set[tuple[Any, ...]] = set()

    def heard_on_old(self, params: Mapping[str, Any]) -> None:
        """The old stream brought a notification with these `params`."""
        key = status_key(params)
        if key is not None:
            self.heard.add(key)

    def due(self, now: float) -> bool:
        """Whether the old stream is to be closed now."""
        return now >= self.until


def replayed(stream: Stream, params: Mapping[str, Any]) -> bool:
    """Whether `stream`'s notification with these `params` is one a stream it replaced brought."""
    key = status_key(params)
    if key is None or key not in stream.replayed:
        return False
    stream.replayed.discard(key)
    return True


class CatchUp:
    """The reads a new stream calls for (its ids' state before it): the waits read them from the
    first on (`claim`), and so does the manager (`next`), each taking the next one the other has
    not, so that two reads are in flight. Both start with the oldest ids (the likeliest to have
    ended before the stream, so that only a read tells): an id whose news comes on its stream
    first is no longer due (the stream told; the newest tasks of a batch end that way while the
    older ones are read, and cost no read).
    Kept under the watch's lock.
    """

    def __init__(self) -> None:
        self.due: set[str] = set()  # ids a new stream took, not yet read (nor heard of) since
        self.order: deque[str] = deque()  # the same, in the order they came
        self.reading: str | None = None  # the id the manager reads now
        self.caught: set[str] = set()  # ids the manager read (or reads): their waits need not
        self.overtaken = False  # news of `reading` came on its stream meanwhile

    def add(self, task_id: str) -> None:
        self.due.add(task_id)
        self.order.append(task_id)

    def forget(self, task_id: str) -> None:
        self.due.discard(task_id)
        self.caught.discard(task_id)

    def claim(self, task_id: str) -> bool:
        """Whether a wait should read `task_id` itself (False: the manager read it: news comes)."""
        self.due.discard(task_id)
        if task_id in self.caught:
            self.caught.discard(task_id)
            return False
        return True

    def next(self) -> str | None:
        """The next id for the manager to read (the first one due), now `reading`."""
        while self.order:
            candidate = self.order.popleft()
            if candidate in self.due:
                self.due.discard(candidate)
                self.reading, self.overtaken = candidate, False
                self.caught.add(candidate)
                return candidate
        return None

    def news(self, task_id: str) -> None:
        """News of `task_id` came on its stream: fresher than a catch-up read, in flight or due
        (a cue without the status is read by its wait).
        """
        self.due.discard(task_id)
        if task_id == self.reading:
            self.overtaken = True

    def read(self, status: News) -> bool:
        """The manager's read of `reading` ended with `status` (`READ`: it failed); whether to
        tell it (not when the stream's news overtook it).
        """
        task_id, self.reading = self.reading, None
        if (status is READ or self.overtaken) and task_id is not None:
            self.caught.discard(task_id)  # its wait reads it if its news says so
        return not self.overtaken
