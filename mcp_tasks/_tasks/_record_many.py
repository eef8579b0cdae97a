"""What the waits of a set tell a task store together: the leases of a set taken in one call, a
round's ends recorded in one call (`finish_many`, where the store has it), leases freed together.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from mcp_tasks._clock import Deadline
from mcp_tasks._store import (
    StoreError,
    TaskStore,
    best_effort,
    lease_ttl_of,
    new_holder,
    store_deadline,
)
from mcp_tasks._tasks._ends import PendingEnd

if TYPE_CHECKING:
    pass

from mcp_tasks._tasks._record import RELEASE_PATIENCE, Claim, Recorder
from mcp_tasks._tasks._records import fenced

__all__ = ["close_all", "release_all", "take_all"]

log = logging.getLogger("mcp_tasks")


def take_all(
    store: TaskStore | None, task_ids: list[str], deadline: Deadline, started: str | None = None
) -> tuple[Claim, set[str]] | None:
    """The leases of many waits about to begin, taken in one call with the store's optional
    ``acquire_many`` for one new holder (`started`: the client's starter holder, which holds them
    all since their records): its claim and the ids it took (none when the store failed: the
    waits read only for now, as `Recorder.take`'s). None without a store, with one task, or a
    store without ``acquire_many``: then each wait takes its own.
    """
    many = getattr(store, "acquire_many", None)
    if store is None or not callable(many) or len(set(task_ids)) < 2:
        return None
    claim = Claim(started or new_holder(), time.monotonic())
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
    clocks: list[float | None] = []  # when each lease was renewed last: renewed again if the ends wait
    for recorder in ended:
        clocks.append(recorder.lease.renewed if recorder.lease is not None and recorder.holding else None)
        recorder.stop_renewing()  # not renewed while its row is freed
        final, recorder.final = recorder.final, None  # recorded once, however often the group closes
        assert final is not None
        ends.append((recorder.task_id, final, recorder.holder))  # held: fenced by the store that can
    try:
        with store_deadline(first.deadline.at, first.hurry), store_deadline(time.monotonic() + RELEASE_PATIENCE):
            many(ends)
    except StoreError as exc:  # kept by the client to record later, else a later `adopt` reads them again
        log.warning("could not record the end of %d tasks: %s", len(ends), exc)
        fence = fenced(first.store)
        for recorder, clock, (task_id, final, holder) in zip(ended, clocks, ends, strict=True):
            if recorder.ends is not None:  # its lease renewed again until the end is recorded, else adopted
                renewer = recorder.ends.renewer
                lease = None if clock is None else renewer.hold(first.store, task_id, holder, recorder.ttl, clock)
                recorder.ends.keep(PendingEnd(first.store, task_id, final, holder, recorder.ttl, fence, lease))


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
