"""What the tasks code tells a task store: each task created and each status read, the answers a
wait sends (written before they go, acknowledged after: a write-ahead ledger), and the lease of a
wait that answers input. Without a store every call here does nothing.
"""

from __future__ import annotations

import logging
import shlex
import threading
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import attrs

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import McpError, TransportError
from mcp_tasks._options import UNSET
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
    fences_statuses,
    lease_ttl_of,
    new_holder,
    store_deadline,
)
from mcp_tasks._tasks._ends import PendingEnd

if TYPE_CHECKING:
    from mcp_tasks._client import Client
    from mcp_tasks._session._channel import Channel
    from mcp_tasks._tasks._ends import PendingEnds

__all__ = [
    "RESUMING",
    "Claim",
    "Recorder",
    "close_all",
    "endpoint_of",
    "record_created",
    "record_status",
    "release_all",
    "renewer_of",
    "saved_ref",
    "store_of",
    "take_all",
]

log = logging.getLogger("mcp_tasks")

RELEASE_PATIENCE = 5.0
"""Seconds a wait's end waits for a busy store to free its lease (within the wait's deadline)."""


def store_of(client: Client, given: object = UNSET) -> TaskStore | None:
    """The store a call records into: `given` (a wait's ``store`` option) or the client's."""
    if given is not UNSET:
        return given  # type: ignore[return-value]
    store: TaskStore | None = client.channel.settings.store
    return store


def renewer_of(channel: Channel) -> Renewer:
    """The client's lease renewer: one thread renewing the leases its waits hold, which ends
    with the client's closing signal (and is joined by its close).
    """
    return channel.attachment(Renewer, lambda opened: Renewer(opened.closing))


def endpoint_of(channel: Channel) -> str:
    """Where the channel's tasks run: the URL (HTTP), the command line (stdio), or
    ``direct:<server name>`` (a server in this process).
    """
    transport = channel.transport
    url = getattr(transport, "url", None)
    if isinstance(url, str) and url:
        return url
    argv = getattr(transport, "argv", None)
    if isinstance(argv, tuple) and argv:
        return shlex.join(argv)
    agreed = channel.agreed
    name = agreed.server_info.get("name") if agreed is not None else None
    return f"direct:{name if isinstance(name, str) and name else 'server'}"


def _kept(what: str, task_id: str, work: Callable[[], object]) -> bool:
    """Whether `work` recorded `what` (a store that failed is said, and the task goes on)."""
    try:
        work()
    except StoreError as exc:  # the task itself is fine: say so, and go on without the record
        log.warning("task %s: could not record %s: %s", short_id(task_id), what, exc)
        return False
    return True


def record_created(
    client: Client, status: Status, tool: str, store: TaskStore | None, deadline: Deadline | None = None
) -> None:
    """Keep a task the client just created (a busy store is retried until the call's `deadline`)."""
    if store is not None:
        traced = client.channel.tracing.creation_context(status.task_id)  # None unless the client traces
        ref = TaskRef(endpoint_of(client.channel), status.task_id, status.era, tool, time.time(), status, traced)
        with store_deadline(deadline.at if deadline is not None else None):
            _kept("its creation", status.task_id, lambda: store.record(ref))


RESUMING: ContextVar[TaskRef | None] = ContextVar("mcp_tasks_resuming", default=None)
"""The ref `resume` waits for: what a traced wait links to, with or without a store to find it in."""


def saved_ref(client: Client, task_id: str, given: object, timeout: float | None) -> Callable[[], TaskRef | None]:
    """How a traced wait finds what was kept of `task_id` (the ref being resumed, else the store's
    record, read within `timeout`): called only when the client traces, so an untraced wait reads
    nothing more than before. A store that fails leaves the wait unlinked, not failed.
    """

    def find() -> TaskRef | None:
        resuming = RESUMING.get()
        if resuming is not None and resuming.task_id == task_id:
            return resuming
        store = store_of(client, given)
        if store is None:
            return None
        try:
            with store_deadline(time.monotonic() + timeout if timeout is not None else None):
                return store.get(task_id)
        except StoreError as exc:
            log.warning("task %s: could not read its record to link its trace: %s", short_id(task_id), exc)
            return None

    return find


_UNFENCED: set[type] = set()  # the store classes already said to lack ``update(..., holder=)``
_UNFENCED_LOCK = threading.Lock()


def fenced(store: TaskStore) -> bool:
    """Whether `store` fences statuses by their writer's lease (`fences_statuses`); a store of
    one's own that does not is said once per class: a wait whose lease lapsed since its last
    renewal may still write a status there (records still only move forward, if it keeps that).
    """
    if fences_statuses(store):
        return True
    kind = type(store)
    with _UNFENCED_LOCK:
        said = kind in _UNFENCED
        _UNFENCED.add(kind)
    if not said:
        log.warning(
            "the task store %s has no update(task_id, status, *, holder=None): a wait that lost its task's lease "
            "since its last renewal may still record a status there (give update a holder= keyword, fenced as "
            "write_answers is, for the guarantee)",
            kind.__name__,
        )
    return False


def record_status(
    status: Status, store: TaskStore | None, deadline: Deadline | None = None, holder: str | None = None
) -> bool:
    """Make `status` its task's last status in the store (which keeps it only if it moves the
    record forward): best effort, a busy store is given `STATUS_BUDGET` seconds (`END_BUDGET` for
    a task's end, which a fleet must not lose; less, to the call's `deadline`), then the status
    goes unrecorded, with a warning (False). With `holder`, fenced by its lease where the store
    can (nothing written once another holds it).
    """
    if store is None:
        return True
    fence = holder is not None and fenced(store)

    def update() -> None:
        if fence:
            store.update(status.task_id, status, holder=holder)
        else:  # a store of one's own may take no holder=
            store.update(status.task_id, status)

    with store_deadline(deadline.at if deadline is not None else None), best_effort(end=status.terminal):
        return _kept("its end" if status.terminal else "its status", status.task_id, update)


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
    ) -> None:
        self.store = store
        self.task_id = task_id
        self.deadline = deadline or Deadline.never()
        self.renewer = renewer
        self.ends = ends  # the client's ends the store could not record yet (none: such an end is forgotten)
        self.holder = new_holder()
        self.ttl = lease_ttl_of(store)
        self.lease: Lease | None = None
        self.ends_later = False  # a group's wait: its final status is kept in `final` for `close_all`
        self.final: Status | None = None

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
        `asked`: `take_all` asked for it and did not get it (read only, nothing more to ask now).
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
            _kept("its answers", self.task_id, self._settle)

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
    def may_answer(self) -> bool:
        """Whether this wait may answer input: it held the task's lease before the status it
        answers was read (renewed in the background while it waits). A lease just taken says no
        once: a wait that held it may have answered meanwhile, so read again first. Without a
        store there is no one to share the task with.
        """
        if self.store is None:
            return True
        if self.holding:
            return True
        self.stop_renewing()
        if self.store.acquire(self.task_id, self.holder, self.ttl):
            self._hold()  # answer what is read next
        else:
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
        _kept("its end", self.task_id, lambda: store.record(attrs.evolve(kept, gone=why)))
        _kept("its answers", self.task_id, self._settle)

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
                _kept("the end of its lease", self.task_id, lambda: store.release(self.task_id, self.holder))


def take_all(store: TaskStore | None, task_ids: list[str], deadline: Deadline) -> tuple[Claim, set[str]] | None:
    """The leases of many waits about to begin, taken in one call with the store's optional
    ``acquire_many`` for one new holder: its claim and the ids it took (none when the store
    failed: the waits read only for now, as `Recorder.take`'s). None without a store, with one
    task, or a store without ``acquire_many``: then each wait takes its own.
    """
    many = getattr(store, "acquire_many", None)
    if store is None or not callable(many) or len(set(task_ids)) < 2:
        return None
    claim = Claim(new_holder(), time.monotonic())
    try:
        with store_deadline(deadline.at), best_effort():
            taken = many(task_ids, claim.holder, lease_ttl_of(store))
        if not isinstance(taken, (set, frozenset, list, tuple)):
            raise StoreError(f"acquire_many returned {type(taken).__name__}, not a set of task ids")
    except StoreError as exc:
        log.info("could not take the leases of %d tasks yet: %s", len(task_ids), exc)
        return claim, set()
    return claim, {task_id for task_id in taken if task_id in task_ids}


def close_all(recorders: list[Recorder]) -> None:
    """`Recorder.close` for many waits over, each group's ends (`Recorder.final`) recorded first:
    those of one store in one call with its optional ``finish_many`` (which also settles their
    answers and frees their leases), the other leases in one with ``release_many``; one by one
    without them. A busy store is waited for `RELEASE_PATIENCE` at most (within the deadline).
    """
    by_store: dict[int, list[Recorder]] = {}
    for recorder in {id(recorder): recorder for recorder in recorders}.values():
        if recorder.store is not None and (recorder.lease is not None or recorder.final is not None):
            by_store.setdefault(id(recorder.store), []).append(recorder)
    for batch in by_store.values():
        ended = [recorder for recorder in batch if recorder.final is not None]
        freeing = [recorder for recorder in batch if recorder.final is None]
        _finish_all(ended)
        _release_all(freeing)


def _finish_all(ended: list[Recorder]) -> None:
    if not ended:
        return
    first = ended[0]
    many = getattr(first.store, "finish_many", None)
    if not callable(many):
        for recorder in ended:
            recorder.finish_alone()
        return
    for recorder in [recorder for recorder in ended if not recorder.holding]:
        recorder.finish_alone()  # not its end to record, unless it can take the lease now
    ended = [recorder for recorder in ended if recorder.final is not None]
    if not ended:
        return
    assert first.store is not None
    fenced(first.store)  # said once when it cannot fence the ends
    ends = []
    for recorder in ended:
        recorder.stop_renewing()
        final, recorder.final = recorder.final, None  # recorded once, however often the group closes
        assert final is not None
        ends.append((recorder.task_id, final, recorder.holder))  # held: fenced by the store that can
    try:
        with store_deadline(first.deadline.at, first.hurry), store_deadline(time.monotonic() + RELEASE_PATIENCE):
            many(ends)
    except StoreError as exc:  # kept by the client to record later, else a later `adopt` reads them again
        log.warning("could not record the end of %d tasks: %s", len(ends), exc)
        fence = fenced(first.store)
        for recorder, (task_id, final, holder) in zip(ended, ends, strict=True):
            if recorder.ends is not None:  # its lease (no longer renewed) is taken again when lost
                recorder.ends.keep(PendingEnd(first.store, task_id, final, holder, recorder.ttl, fence))


def _release_all(batch: list[Recorder]) -> None:
    if not batch:
        return
    first = batch[0]
    many = getattr(first.store, "release_many", None)
    if len(batch) < 2 or not callable(many):
        for recorder in batch:
            recorder.close()
        return
    for recorder in batch:
        recorder.stop_renewing()
    leases = [(recorder.task_id, recorder.holder) for recorder in batch]
    try:
        with store_deadline(first.deadline.at, first.hurry), store_deadline(time.monotonic() + RELEASE_PATIENCE):
            many(leases)
    except StoreError as exc:  # the leases free themselves when this process ends or their ttl passes
        log.warning("could not free the leases of %d tasks: %s", len(leases), exc)


def release_all(store: TaskStore | None, holder: str, task_ids: set[str]) -> None:
    """Free the leases `holder` took with `take_all` for waits that were never made (best effort)."""
    if store is None or not task_ids:
        return
    many = getattr(store, "release_many", None)
    try:
        with store_deadline(time.monotonic() + RELEASE_PATIENCE):
            if callable(many):
                many([(task_id, holder) for task_id in sorted(task_ids)])
            else:
                for task_id in sorted(task_ids):
                    store.release(task_id, holder)
    except StoreError as exc:
        log.warning("could not free the leases of %d tasks: %s", len(task_ids), exc)
