"""What one wait tells a task store: the statuses it reads while it holds its task's lease, the
answers it sends (written before they go, acknowledged after: a write-ahead ledger), its end, and
the lease itself, taken, renewed and freed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import attrs

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import McpError, TransportError
from mcp_tasks._redact import short_id
from mcp_tasks._status import Status
from mcp_tasks._store import (
    Hurry,
    Lease,
    Renewer,
    StoreError,
    TaskRef,
    TaskStore,
    best_effort,
    lease_ttl_of,
    new_holder,
    store_deadline,
)
from mcp_tasks._tasks._ends import PendingEnd, ends_of

if TYPE_CHECKING:
    from mcp_tasks._client import Client
    from mcp_tasks._tasks._ends import PendingEnds

from mcp_tasks._tasks._intent import Joins, joins_of, keeps_intents
from mcp_tasks._tasks._records import fenced, record_status, renewer_of, store_of, try_keep
from mcp_tasks._tasks._starts import starts_of

__all__ = ["RELEASE_PATIENCE", "Claim", "Recorder"]

log = logging.getLogger("mcp_tasks")

RELEASE_PATIENCE = 5.0
"""Seconds a wait's end waits for a busy store to free its lease (within the wait's deadline)."""


@attrs.frozen
class Claim:
    """Leases `holder` took for waits about to begin (`store.claim`, `take_all`), and when: `at`
    (monotonic), read before the store call that took them, where their renewal clock starts.
    """

    holder: str
    at: float


P = ParamSpec("P")
R = TypeVar("R")


def _within_deadline(method: Callable[Concatenate[Recorder, P], R]) -> Callable[Concatenate[Recorder, P], R]:
    """The store calls `method` makes give up on a busy store when the wait's deadline passes."""

    def bounded(recorder: Recorder, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with store_deadline(recorder.deadline.at, recorder.hurry):
            return method(recorder, *args, **kwargs)

    bounded.__doc__ = method.__doc__
    return bounded


class Recorder:
    """One wait's dealings with the store: statuses, the ledger, the lease (see the module). Its
    store calls end with the wait's `deadline`: a store kept busy by others does not outlast it.
    Its lease is renewed by `renewer` (the client's).
    """

    def __init__(
        self,
        store: TaskStore | None,
        task_id: str,
        deadline: Deadline | None = None,
        renewer: Renewer | None = None,
        ends: PendingEnds | None = None,
        started: str | None = None,
        joins: Joins | None = None,
    ) -> None:
        self.store = store
        self.task_id = task_id
        self.deadline = deadline or Deadline.never()
        self.renewer = renewer
        self.ends = ends  # the client's ends the store could not record yet (none: such an end is forgotten)
        self.started = started  # the client's starter holder, when it holds the lease from the task's record
        self.joins = joins  # the client's task records not written yet: an end seen is folded into its own
        self.holder = started or new_holder()
        self.ttl = lease_ttl_of(store)
        self.lease: Lease | None = None
        self.ends_later = False  # a group's wait: its final status is kept in `final` for `close_all`
        self.final: Status | None = None

    @classmethod
    def of(cls, client: Client, task_id: str, given: object, deadline: Deadline) -> Recorder:
        """The recorder of a wait of `client`'s on `task_id`, in the store `given` (the client's
        when left out): renewed by the client's renewer, its unrecorded ends kept by the client.
        """
        store = store_of(client, given)
        renewer = renewer_of(client.channel) if store else None
        ends = ends_of(client.channel, renewer) if renewer is not None else None
        joins = joins_of(client.channel) if store is not None and keeps_intents(store) else None
        return cls(store, task_id, deadline, renewer, ends, starts_of(client.channel).hand_over(store, task_id), joins)

    @property
    def hurry(self) -> Hurry | None:
        """What ends this wait's store calls early when its client closes (its renewer's)."""
        return self.renewer.hurry if self.renewer is not None else None

    def _hold(self, taken_at: float | None = None) -> None:
        assert self.store is not None
        if self.renewer is None:
            self.renewer = Renewer()  # a recorder of no client's
        self.lease = self.renewer.hold(self.store, self.task_id, self.holder, self.ttl, taken_at)

    @_within_deadline
    def take(self, claimed: Claim | None = None, *, asked: bool = False) -> None:
        """The wait begins: take the task's lease when it is free, before the first read, and
        keep it renewed while the wait waits (a wait that cannot take it reads, and answers
        nothing until it frees). `claimed`: the holder that already took it (`store.claim`,
        `take_all`), whose lease this wait holds as its own, renewed on the clock of the claim;
        `asked`: `take_all` asked for it for this wait's holder and did not get it (read only,
        nothing more to ask now).
        """
        store = self.store
        if store is None:
            return
        if claimed is not None:
            self.holder = claimed.holder
            self._hold(claimed.at)
            return
        if asked:
            log.debug("task %s is leased by another wait: reading only", short_id(self.task_id))
            return
        try:
            with best_effort():  # a locked store does not hold the wait's first read back
                taken = store.acquire(self.task_id, self.holder, self.ttl)
        except StoreError as exc:  # read only for now; the lease is asked for again when input comes
            log.info("task %s: could not take its lease yet: %s", short_id(self.task_id), exc)
            return
        if taken:
            self._hold()
        else:
            log.debug("task %s is leased by another wait: reading only", short_id(self.task_id))

    @_within_deadline
    def read(self, status: Status) -> None:
        """A status the wait saw change, recorded only by the wait that holds the task's lease (a
        wait reading on a slower link must not write over what the holder recorded); a wait that
        sees the task end takes the lease when it is free, to record that end. A finished task
        needs no answer any more: what the ledger holds for it is acknowledged. A group's wait
        (`ends_later`) keeps a final status for `close_all`, which records the ends of a round in
        one store call.
        """
        if status.terminal and self.joins is not None and self.store is not None:
            self.joins.ended(self.store, self.task_id, status)  # its record, when not written yet, is written finished
        if self.ends_later and status.terminal and self.store is not None:
            self.final = status
            return
        if self.store is None:
            return
        held = self.holding or (self._take_to_end() if status.terminal else False)
        if held and not record_status(status, self.store, holder=self.holder) and status.terminal:
            held = None
        if held is None and self.ends is not None:
            self._leave_end(status)
            return
        if not held:
            log.debug("task %s is leased by another wait: its status is that one's to record", short_id(self.task_id))
        if status.terminal:
            try_keep("its answers", self.task_id, self._settle)

    def _leave_end(self, status: Status) -> None:
        """An end the store could not record goes to the client's pending ends, with the lease
        (still renewed, and no longer this wait's to free).
        """
        assert self.store is not None and self.ends is not None
        lease, self.lease = self.lease, None
        self.ends.keep(PendingEnd(self.store, self.task_id, status, self.holder, self.ttl, fenced(self.store), lease))

    def _take_to_end(self) -> bool | None:
        """Take the lease of a task this wait saw end, when nobody holds it (best effort; None:
        the store failed).
        """
        assert self.store is not None
        self.stop_renewing()  # a lease it lost is not renewed twice
        try:
            with best_effort(end=True):
                taken = self.store.acquire(self.task_id, self.holder, self.ttl)
        except StoreError as exc:  # as a failed end's record is said
            log.warning("task %s: could not record its end (nor take its lease to): %s", short_id(self.task_id), exc)
            return None
        if taken:
            self._hold()
        return taken

    def _settle(self) -> None:
        # Not fenced: the task is over, nobody can answer it now (this wait may not hold its lease).
        assert self.store is not None
        left = self.store.unacknowledged(self.task_id)
        if left:
            self.store.acknowledge(self.task_id, list(left))

    @property
    def holding(self) -> bool:
        """Whether this wait holds its task's lease (as far as the last renewal knows)."""
        return self.lease is not None and not self.lease.lost

    @_within_deadline
    def take_now(self) -> bool:
        """Take the task's lease for input that waits, when it is free: whether it was taken (a
        wait that may answer only once it holds it: `WaitCore` decides). Without a store there
        is no one to share the task with.
        """
        if self.store is None:
            return True
        if self.holding:
            return True
        self.stop_renewing()
        if self.store.acquire(self.task_id, self.holder, self.ttl):
            self._hold()
            return True
        log.debug("task %s is leased by another wait: reading only", short_id(self.task_id))
        return False

    def stop_renewing(self) -> None:
        """Stop renewing a lease this wait no longer has (or is about to free)."""
        if self.lease is not None and self.renewer is not None:
            self.renewer.let_go(self.lease)
        self.lease = None

    @_within_deadline
    def replay(self, pending: Mapping[str, Any]) -> dict[str, Any]:
        """The answers an earlier wait wrote for `pending` requests and never saw acknowledged:
        to be sent again verbatim. Answers to requests no longer pending are acknowledged.
        """
        if self.store is None:
            return {}
        written = self.store.unacknowledged(self.task_id)
        stale = [key for key in written if key not in pending]
        if stale:
            self.store.acknowledge(self.task_id, stale, holder=self.holder)
        again = {key: value for key, value in written.items() if key in pending}
        if again:
            log.info("task %s: sending again %d answer(s) never acknowledged", short_id(self.task_id), len(again))
        return again

    @_within_deadline
    def send(self, responses: Mapping[str, Any], update: Callable[[], object]) -> bool:
        """Send `responses` with `update`, written to the ledger first and acknowledged after.
        False (nothing sent) when the lease lapsed meanwhile (a person took long to answer) and
        another wait took it over: that wait answers now.
        """
        if self.store is None:
            update()
            return True
        kept = self.holding and self.store.renew(self.task_id, self.holder, self.ttl)
        if not kept:  # it lapsed (a machine asleep, a store unreachable for its ttl)
            self.stop_renewing()
            if not self.store.acquire(self.task_id, self.holder, self.ttl):
                return False  # and another wait took it: that one answers now
            self._hold()
        # Fenced: a store refuses (StoreError) when the lease was lost since, so two never answer.
        self.store.write_answers(self.task_id, responses, holder=self.holder)
        try:
            update()
        except TransportError:
            raise  # may not have arrived: a later wait sends it again
        except McpError:
            self.store.acknowledge(self.task_id, list(responses), holder=self.holder)  # the server read it, and said no
            raise
        self.store.acknowledge(self.task_id, list(responses), holder=self.holder)
        return True

    @_within_deadline
    def kept(self) -> TaskRef | None:
        """What the store keeps of the task (None without a store, or when it keeps nothing, or
        cannot be read: then the wait goes on as if it kept nothing).
        """
        store = self.store
        if store is None:
            return None
        try:
            return store.get(self.task_id)
        except StoreError as exc:
            log.warning("task %s: could not read its record: %s", short_id(self.task_id), exc)
            return None

    @_within_deadline
    def gone(self, why: str, kept: TaskRef | None) -> None:
        """The server no longer knows the task (`why`: "expired" or "forgotten"): its record
        (`kept`, as read by `kept()`) ends so, leaves the store's unfinished tasks and is pruned
        as finished ones are; what its ledger holds will never be needed.
        """
        store = self.store
        if store is None or kept is None or kept.finished:
            return
        try_keep("its end", self.task_id, lambda: store.record(attrs.evolve(kept, gone=why)))
        try_keep("its answers", self.task_id, self._settle)

    def finish_alone(self) -> None:
        """Record the `final` status kept for `close_all` as `read` would have, then `close`."""
        final, self.final, self.ends_later = self.final, None, False
        if final is not None:
            self.read(final)
        self.close()

    @_within_deadline
    def close(self) -> None:
        """The wait is over: free its lease, waiting for a busy store `RELEASE_PATIENCE` at most
        (a lease left behind frees itself when this process ends or its ttl passes).
        """
        if self.store is not None and self.lease is not None:
            self.stop_renewing()
            store = self.store
            with store_deadline(time.monotonic() + RELEASE_PATIENCE):
                try_keep("the end of its lease", self.task_id, lambda: store.release(self.task_id, self.holder))
