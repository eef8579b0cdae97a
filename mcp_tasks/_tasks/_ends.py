"""Ends the store could not record stay with the client: a task's end (its terminal status, the
settlement of its answers, the release of its lease) that a stopped or locked store refused is
kept here, its lease kept too, and recorded once the store is back: retried with backoff by the
client's retry loop (`_retrier.py`, which carries its refused joins too) while the client lives,
and once more, within `CLOSE_PATIENCE`, when it closes. Forgotten instead, a later `adopt` would deliver
the task a second time.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

import attrs

from mcp_tasks._redact import short_id
from mcp_tasks._status import Status
from mcp_tasks._store import Lease, Renewer, StoreError, TaskStore, store_deadline
from mcp_tasks._tasks._retrier import Retrier, retrier_of

if TYPE_CHECKING:
    from mcp_tasks._session._channel import Channel

__all__ = ["CLOSE_PATIENCE", "PendingEnd", "PendingEnds", "ends_of"]

log = logging.getLogger("mcp_tasks")

CLOSE_PATIENCE = 1.0
"""Seconds `close()` gives the store to take the ends still pending."""


@attrs.define(eq=False)
class PendingEnd:
    """One task's end to record: its terminal `status`, written by `holder` (`fence`: with
    ``holder=``, where the store can), whose `lease` is renewed until the end is recorded (None:
    not held; it is taken again first, as when it was lost).
    """

    store: TaskStore
    task_id: str
    status: Status
    holder: str
    ttl: float
    fence: bool
    lease: Lease | None = None


class PendingEnds:
    """The ends a client's store could not record yet (see the module); `renewer` renews the
    leases they keep, `retrier` tries them again.
    """

    def __init__(self, renewer: Renewer, retrier: Retrier | None = None) -> None:
        self.renewer = renewer
        self.retrier = retrier or Retrier(renewer.hurry)
        self.wake = threading.Lock()
        self.pending: list[PendingEnd] = []
        self.retrier.add(self)

    def keep(self, end: PendingEnd) -> None:
        """Record `end` when the store is back (its lease stays held, renewed meanwhile)."""
        log.warning("task %s: its end is kept, to be recorded when the store is back", short_id(end.task_id))
        with self.wake:
            self.pending.append(end)
        self.retrier.poke()

    def has_kept(self) -> bool:
        """Whether an end is pending."""
        with self.wake:
            return bool(self.pending)

    def retry_kept(self) -> bool:
        """Try the pending ends once (the retrier's round); whether none is left."""
        return self._record_all()

    def _record_all(self) -> bool:
        """Try every pending end (a store that fails is not tried again this round); whether none
        is left.
        """
        with self.wake:
            ends = list(self.pending)
        failed: set[int] = set()
        for end in ends:
            if id(end.store) in failed:
                continue
            try:
                _record(end, self.renewer)
            except StoreError as exc:
                failed.add(id(end.store))
                log.info("task %s: its end is not recorded yet: %s", short_id(end.task_id), exc)
                continue
            with self.wake:
                self.pending.remove(end)
        with self.wake:
            return not self.pending

    def join(self) -> None:
        """Join the thread, then try the ends left once more within `CLOSE_PATIENCE`; those
        the store still refuses are said (a later `adopt` delivers their tasks again).
        """
        self.retrier.join()
        with store_deadline(time.monotonic() + CLOSE_PATIENCE):
            self._record_all()
        with self.wake:
            left, self.pending = self.pending, []
        if left:
            log.warning(
                "could not record the end of %d task(s) before closing: a later adopt may deliver them again", len(left)
            )


def _record(end: PendingEnd, renewer: Renewer) -> None:
    """Record `end`: its status, its answers settled, its lease freed (StoreError when the store
    still fails, the lease renewed again meanwhile; nothing, but a debug line, when another wait
    holds the lease now: its end is that one's to record).
    """
    store = end.store
    lease, end.lease = end.lease, None
    if lease is not None:
        renewer.let_go(lease)  # not renewed while its row is freed, nor renewed once freed
    held = lease is not None and not lease.lost
    clock = lease.renewed if lease is not None and held else time.monotonic()
    try:
        if not held:
            if not store.acquire(end.task_id, end.holder, end.ttl):
                log.debug("task %s is leased by another wait: its end is that one's to record", short_id(end.task_id))
                return
            held = True
        _write(end)
    except StoreError:
        if held:  # kept until the end is recorded: a lease that lapsed meanwhile would be adopted
            end.lease = renewer.hold(store, end.task_id, end.holder, end.ttl, clock)
        raise
    log.info("task %s: its end is recorded now", short_id(end.task_id))


def _write(end: PendingEnd) -> None:
    """The end, the answers settled and the lease freed: in one call with the store's optional
    ``finish_many`` (a few round trips on a slow link, not one per step), else step by step.
    """
    store = end.store
    many = getattr(store, "finish_many", None)
    if end.fence and callable(many):
        many([(end.task_id, end.status, end.holder)])
        return
    if end.fence:
        store.update(end.task_id, end.status, holder=end.holder)
    else:  # a store of one's own may take no holder=
        store.update(end.task_id, end.status)
    left = store.unacknowledged(end.task_id)
    if left:
        store.acknowledge(end.task_id, list(left))
    try:
        store.release(end.task_id, end.holder)
    except StoreError as exc:  # recorded; the lease frees itself when its ttl passes
        log.info("task %s: its end is recorded, its lease not freed: %s", short_id(end.task_id), exc)


def ends_of(channel: Channel, renewer: Renewer) -> PendingEnds:
    """The client's pending ends, kept with its channel (joined with it)."""
    retrier = retrier_of(channel)  # made first: attachments are not made inside one another
    return channel.attachment(PendingEnds, lambda opened: PendingEnds(renewer, retrier))
