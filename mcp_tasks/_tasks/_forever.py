"""`adopt(forever=True)`: a fleet worker that runs until stopped. The caller's thread claims
while it waits for the next end (`Pace` decides when and how many, and how long to back off a
store that fails); the tasks claimed go to the follower of their client (`Follower`), or a new
one; each follower's thread follows its tasks. Stopping (Ctrl-C in the caller's thread, the
generator closed, its timeout) frees every lease held and closes the clients it opened.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING

from mcp_tasks._client import Client
from mcp_tasks._clock import Deadline, get_sliced
from mcp_tasks._store import StoreError, TaskRef, TaskStore, lease_ttl_of, new_holder
from mcp_tasks._tasks._driver import TaskFuture
from mcp_tasks._tasks._follower import Ended, Follower, FollowerKey, Unreached, claim_followable, group_refs
from mcp_tasks._tasks._options import WaitSettings
from mcp_tasks._tasks._pace import BACKOFF_MOST, REST_FIRST, REST_MOST, Pace, Rests, claim_interval
from mcp_tasks._tasks._record import Claim
from mcp_tasks._tasks._record_many import release_all
from mcp_tasks._threads import join_all

if TYPE_CHECKING:
    from requests.auth import AuthBase

__all__ = ["adopted_forever"]

log = logging.getLogger("mcp_tasks")

JOIN_TIMEOUT = 10.0
CLAIM_PATIENCE = 5.0
"""Seconds one claim may wait for a busy or silent store before it counts as failed (a lease's
ttl at most: a claim slower than that is of no use)."""


class _Fleet:
    """The followers of a for-ever worker, one per client, and the clients it opened."""

    def __init__(
        self,
        client: Client | None,
        auth: AuthBase | tuple[str, str] | None,
        headers: Mapping[str, str] | None,
        settings: WaitSettings,
        listen: bool,
        deadline: Deadline,
    ) -> None:
        self.client, self.auth, self.headers = client, auth, headers
        self.settings, self.listen, self.deadline = settings, listen, deadline
        self.ended: queue.Queue[Ended] = queue.Queue()
        self.followers: dict[FollowerKey, Follower] = {}
        self.opened: dict[int, Client] = {}  # by follower number
        self.count = 0

    def give(self, key: FollowerKey, refs: list[TaskRef], claim: Claim) -> None:
        """Have `key`'s follower follow `refs`, or a new one when it has none (or it is over)."""
        follower = self.followers.get(key)
        if follower is not None and follower.give(refs, claim):
            return
        self.count += 1
        client = self.client
        if client is None:
            endpoint, session = key
            client = Client.http(endpoint, auth=self.auth, headers=self.headers, session_id=session)
            self.opened[self.count] = client
        follower = Follower(self.count, client, refs, claim, self.settings, self.listen, self.deadline, self.ended)
        self.followers[key] = follower
        follower.start()

    def over(self, follower: Follower) -> None:
        """`follower` is over: join its thread, close its client if this opened it."""
        for key, known in list(self.followers.items()):
            if known is follower:
                del self.followers[key]
        if follower.thread is not None:
            join_all([follower.thread], JOIN_TIMEOUT)
        opened = self.opened.pop(follower.number, None)
        if opened is not None:
            opened.close()

    def stop(self) -> None:
        """Stop every follower (each frees the leases it holds), join them, close the clients opened."""
        followers = list(self.followers.values())
        for follower in followers:
            follower.stop()
        join_all([f.thread for f in followers if f.thread is not None], JOIN_TIMEOUT)
        self.followers.clear()
        for client in self.opened.values():
            client.close()
        self.opened.clear()


def adopted_forever(
    store: TaskStore,
    limit: int,
    client: Client | None,
    auth: AuthBase | tuple[str, str] | None,
    headers: Mapping[str, str] | None,
    settings: WaitSettings,
    listen: bool,
) -> Generator[TaskFuture, None, None]:
    """The for-ever worker of `adopt` (see there): yields each task's future as it ends."""
    deadline = Deadline(settings.timeout)
    holder = new_holder()
    pace = Pace(limit, claim_interval(lease_ttl_of(store)))
    rests = Rests()
    fleet = _Fleet(client, auth, headers, settings, listen, deadline)
    try:
        while not deadline.expired():
            now = time.monotonic()
            wanted = pace.wanted(now)
            if wanted:
                _claim(store, holder, wanted, client, pace, fleet, deadline, rests)
            try:
                item = get_sliced(fleet.ended, deadline.bound(pace.wait(time.monotonic())))
            except queue.Empty:
                continue
            if isinstance(item, Follower):
                fleet.over(item)
                pace.ended(item.freed)
            elif isinstance(item, Unreached):
                _rest(rests, item)
            else:
                pace.ended()
                if item.task_id is not None and not rests.resting(
                    item.task_id, time.monotonic()
                ):  # followed to its end
                    rests.ended(item.task_id)
                yield item
    finally:
        fleet.stop()
        while True:  # what ended meanwhile is let go: the caller stopped
            try:
                fleet.ended.get_nowait()
            except queue.Empty:
                break


def _rest(rests: Rests, unreached: Unreached) -> None:
    """The tasks of a server that could not be reached rest (said once per task, at debug after)."""
    now = time.monotonic()
    first = [task_id for task_id in unreached.task_ids if rests.failed(task_id, now)]
    if first:
        log.warning(
            "adopt: %d task(s) on %s cannot be reached; each rests before it is tried again "
            "(%.0f s, doubling up to %.0f s): %s",
            len(first),
            unreached.endpoint,
            REST_FIRST,
            REST_MOST,
            unreached.error,
        )
    else:
        log.debug("adopt: %d task(s) on %s still cannot be reached", len(unreached.task_ids), unreached.endpoint)


def _claim(
    store: TaskStore,
    holder: str,
    wanted: int,
    client: Client | None,
    pace: Pace,
    fleet: _Fleet,
    deadline: Deadline,
    rests: Rests,
) -> None:
    """Claim up to `wanted` tasks and hand them to their followers; a store that fails is backed off."""
    claim = Claim(holder, time.monotonic())
    claimed: list[TaskRef] = []
    try:
        try:
            patience = min(CLAIM_PATIENCE, lease_ttl_of(store))
            now = time.monotonic()
            refs = claim_followable(
                store,
                holder,
                wanted,
                Deadline(deadline.bound(patience)),
                client,
                claimed,
                lambda task_id: rests.resting(task_id, now),
            )
        except StoreError as exc:
            if pace.failed(time.monotonic()):
                log.warning(
                    "adopt: the store did not answer, claiming again after a backoff (up to %.0f s): %s",
                    BACKOFF_MOST,
                    exc,
                )
            else:
                log.debug("adopt: the store still does not answer (%d claims failed): %s", pace.failures, exc)
            return
        if pace.claimed(time.monotonic(), len(refs)):
            log.warning("adopt: the store answers again, claiming as before")
        if refs:
            log.info("adopted %d task(s) from %r", len(refs), store)
        for key, given in group_refs(refs, client).items():
            fleet.give(key, given, claim)
    except BaseException:  # stopped (Ctrl-C) before its followers had them all: free them now
        release_all(store, holder, {ref.task_id for ref in claimed})
        raise
