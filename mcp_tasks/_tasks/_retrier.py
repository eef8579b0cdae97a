"""One retry loop per client for the writes its store refused (the ends of `_ends.py`, the joins
of `_intent.py`): each kind keeps its own writes and knows how to try them (a `Kept`); this loop
only decides when, with backoff, on one thread (``mcp_tasks-kept``, started while a write is
kept) while the client lives. The last try at close is each kind's own, within its own bound,
once this thread is joined.
"""

from __future__ import annotations

import contextvars
import threading
import time
from typing import TYPE_CHECKING, Protocol

from mcp_tasks._clock import wait_condition
from mcp_tasks._store import Hurry, store_deadline
from mcp_tasks._tasks._records import renewer_of
from mcp_tasks._threads import join_all, start_thread

if TYPE_CHECKING:
    from mcp_tasks._session._channel import Channel

__all__ = ["FIRST_RETRY", "LAST_RETRY", "TRY_PATIENCE", "Kept", "Retrier", "retrier_of"]

FIRST_RETRY = 0.5
"""Seconds before a write the store refused is tried again; doubled after each failure."""
LAST_RETRY = 10.0
"""The longest pause between two tries."""
TRY_PATIENCE = 5.0
"""Seconds one round of tries waits for a busy or slow store: an end takes a few round trips,
each a second on a slow link, where a second's patience cut every try. A closing client hurries
a try under way (its renewer's hurry), so the thread is still joined quickly."""


class Kept(Protocol):
    """Writes of one kind the store refused, kept by the client."""

    def has_kept(self) -> bool:
        """Whether any write is kept."""

    def retry_kept(self) -> bool:
        """Try the kept writes once (their store calls bounded by the caller); whether none is
        left.
        """


class Retrier:
    """The client's retry loop (see the module): `poke` it when a write is kept."""

    def __init__(self, hurry: Hurry | None = None) -> None:
        self.hurry = hurry
        self.wake = threading.Condition()
        self.kinds: list[Kept] = []
        self.threads: list[threading.Thread] = []  # the one running, and any just ending
        self.running = False
        self.stopping = False

    def add(self, kind: Kept, *, first: bool = False) -> None:
        """Have the loop try `kind`'s writes too (`first`: before the other kinds' in a round, as
        a join writes the record a task's end is then written into).
        """
        with self.wake:
            if not any(kind is known for known in self.kinds):
                self.kinds.insert(0 if first else len(self.kinds), kind)

    def poke(self) -> None:
        """A write was kept: have the loop running (nothing once the client closes)."""
        with self.wake:
            alive = any(thread.is_alive() for thread in self.threads)  # none in a forked child
            if not self.stopping and not (self.running and alive):
                self.running = True
                self.threads = [thread for thread in self.threads if thread.is_alive()]
                self.threads.append(start_thread("kept", lambda: contextvars.Context().run(self._loop)))
            self.wake.notify_all()

    def _kept(self) -> bool:
        return any(kind.has_kept() for kind in self.kinds)

    def _loop(self) -> None:
        pause = FIRST_RETRY
        while True:
            with self.wake:
                due = time.monotonic() + pause
                while not self.stopping and self._kept() and time.monotonic() < due:
                    wait_condition(self.wake, due)
                if self.stopping or not self._kept():
                    self.running = False
                    return
                kinds = list(self.kinds)
            with store_deadline(time.monotonic() + TRY_PATIENCE, self.hurry):
                done = [kind.retry_kept() for kind in kinds]  # every kind tried, whatever the first did
            pause = FIRST_RETRY if all(done) else min(pause * 2, LAST_RETRY)

    def close(self) -> None:
        """Stop retrying in the background (the client closes; each kind tries once more)."""
        with self.wake:
            self.stopping = True
            self.wake.notify_all()

    def join(self) -> None:
        """Stop and join the thread (idempotent): a kind's last try then runs alone."""
        with self.wake:
            self.stopping = True
            threads, self.threads = self.threads, []
            self.wake.notify_all()
        join_all(threads, TRY_PATIENCE + 1.0)


def retrier_of(channel: Channel) -> Retrier:
    """The client's retry loop, kept with its channel (stopped and joined with it, hurried by its
    renewer's hurry when it closes).
    """
    renewer = renewer_of(channel)  # made first: attachments are not made inside one another
    return channel.attachment(Retrier, lambda opened: Retrier(renewer.hurry))
