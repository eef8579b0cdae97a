"""What `adopt` does with the tasks it claims: `claim_followable` claims those it can follow,
`group_refs` sorts them by the client that follows them (one per endpoint and 2025-era session),
and a `Follower` follows one client's tasks with a group, in a thread of its own
(``mcp_tasks-adopt-<n>``: its reads, its input, its `on_status`), putting each `TaskFuture` on a
queue as its task ends, and itself once it is over. A for-ever worker gives a follower more
tasks while it runs (`give`).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Union

import attrs

from mcp_tasks._client import Client
from mcp_tasks._clock import Deadline
from mcp_tasks._errors import McpError, TaskTimeout
from mcp_tasks._store import TaskRef, TaskStore, lease_ttl_of, store_deadline
from mcp_tasks._tasks._driver import TaskFuture, settled_future
from mcp_tasks._tasks._group import Group, Member
from mcp_tasks._tasks._many import cancel_pending
from mcp_tasks._tasks._options import WaitSettings
from mcp_tasks._tasks._record import Claim
from mcp_tasks._tasks._record_many import release_all
from mcp_tasks._tasks._records import endpoint_of
from mcp_tasks._threads import start_thread

__all__ = ["Ended", "Follower", "FollowerKey", "Unreached", "claim_followable", "group_refs"]

log = logging.getLogger("mcp_tasks")

FollowerKey = tuple[str, Union[str, None]]
"""Whose tasks a follower follows: an endpoint and a 2025-era session (or the given client's: ``("", None)``)."""


def claim_followable(
    store: TaskStore,
    holder: str,
    limit: int,
    deadline: Deadline,
    client: Client | None,
    claimed: list[TaskRef] | None = None,
    resting: Callable[[str], bool] | None = None,
) -> list[TaskRef]:
    """Claim up to `limit` tasks this call can follow. Those it cannot (see `_unreachable`) are
    held while it claims again for their places (a claim skips what its holder holds), so they
    do not crowd out the others; then they are freed together, with one warning. `claimed`:
    where each ref claimed goes as soon as it is, for a caller interrupted meanwhile to free.
    Those `resting` (their server unreachable a moment ago) are freed so too, quietly.
    """
    mine = endpoint_of(client.channel) if client is not None else None
    followed: list[TaskRef] = []
    skipped: dict[str, list[TaskRef]] = {}
    ttl = lease_ttl_of(store)
    with store_deadline(deadline.at):
        while len(followed) < limit:
            wanted = limit - len(followed)
            refs = store.claim(holder, ttl, wanted)
            if claimed is not None:
                claimed.extend(refs)
            for ref in refs:
                why = RESTING if resting is not None and resting(ref.task_id) else _unreachable(ref, mine)
                if why is None:
                    followed.append(ref)
                else:
                    skipped.setdefault(why, []).append(ref)
            if len(refs) < wanted:
                break  # nothing more is free
    for why, refs in skipped.items():
        if why == RESTING:
            log.debug("adopt: %d task(s) %s, freed unfollowed", len(refs), why)
            release_all(store, holder, {ref.task_id for ref in refs})
            continue
        log.warning("adopt: %d task(s) cannot be followed here, their leases are freed: %s", len(refs), why)
        release_all(store, holder, {ref.task_id for ref in refs})
    return followed


RESTING = "resting, their server unreachable a moment ago"


def _unreachable(ref: TaskRef, mine: str | None) -> str | None:
    """Why this call cannot follow `ref` (None: it can); `mine`: the endpoint of the given client."""
    if mine is not None:
        return None if ref.endpoint == mine else f"they run on another endpoint than the client's ({mine!r})"
    if not ref.endpoint.startswith(("http://", "https://")):
        return "their server lived in the process that started them (stdio or in-process): adopt them with client="
    return None


def group_refs(refs: list[TaskRef], client: Client | None) -> dict[FollowerKey, list[TaskRef]]:
    """The claimed refs by the client that follows them: `client` (all of them), or one per
    endpoint and 2025-era session.
    """
    if client is not None:
        return {("", None): refs} if refs else {}
    by_session: dict[FollowerKey, list[TaskRef]] = {}
    for ref in refs:
        session = ref.session_id if ref.era == "legacy" else None
        by_session.setdefault((ref.endpoint, session), []).append(ref)
    return by_session


@attrs.frozen
class Unreached:
    """The tasks a follower could not follow, their server unreachable (put on its queue before
    their futures, so that they rest before the room they leave is claimed again).
    """

    task_ids: tuple[str, ...]
    endpoint: str
    error: McpError


Ended = Union[TaskFuture, "Follower", Unreached]
"""What a follower puts on its queue: a future as its task ends, `Unreached`, itself once it is over."""


class Follower:
    """One client's claimed tasks, followed by a group in a thread of its own."""

    def __init__(
        self,
        number: int,
        client: Client,
        refs: list[TaskRef],
        claim: Claim,
        settings: WaitSettings,
        listen: bool,
        deadline: Deadline,
        ended: queue.Queue[Ended],
    ) -> None:
        self.number = number
        self.client = client
        self.claim = claim
        self.settings = settings
        self.listen = listen
        self.deadline = deadline
        self.ended = ended
        self.thread: threading.Thread | None = None
        self._given: list[TaskRef] = []  # every ref given, for the leases of those never followed
        self._more: list[tuple[list[TaskRef], Claim]] = [(refs, claim)]  # given, not yet added (under `_lock`)
        self.handed = 0  # futures put on `ended`
        self.freed = 0  # once over: the tasks given that it freed without a future (stopped, or at its timeout)
        self._stopping = False
        self._over = False
        self._group: Group | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start following, in the follower's thread."""
        self.thread = start_thread(f"adopt-{self.number}", self._run)

    def give(self, refs: list[TaskRef], claim: Claim) -> bool:
        """Follow `refs` too (claimed by `claim`); False when the follower is over (start another)."""
        with self._lock:
            if self._over or self._stopping:
                return False
            self._more.append((refs, claim))
            group = self._group
        if group is not None:
            group.wake()
        return True

    def stop(self) -> None:
        """End the following early (the caller stopped iterating): the rest is freed."""
        with self._lock:
            self._stopping = True
            group = self._group
        if group is not None:
            group.wake()

    def _interrupted(self) -> bool:
        return self._stopping or bool(self._more)

    def _next(self, group: Group) -> list[tuple[list[TaskRef], Claim]] | None:
        """The refs given since the last time; None when the follower is over (nothing left)."""
        with self._lock:
            if self._stopping or (not self._more and not group.open and not group.ready()):
                self._over = True
                return None
            more, self._more = self._more, []
            self._given.extend(ref for refs, _ in more for ref in refs)
            return more

    def _put(self, future: TaskFuture) -> None:
        self.handed += 1
        self.ended.put(future)

    def _run(self) -> None:
        cancel = cancel_pending(self.client) if self.settings.cancel_on_timeout else None
        group = Group(self.client, self.settings, self.listen, self.deadline, on_timeout=cancel)
        with self._lock:
            self._group = group
        try:
            while (more := self._next(group)) is not None:
                for refs, claim in more:
                    try:
                        group.add([ref.task_id for ref in refs], claimed=claim)
                    except McpError as exc:  # the endpoint cannot be reached, or negotiated with
                        self.ended.put(Unreached(tuple(ref.task_id for ref in refs), refs[0].endpoint, exc))
                        for ref in refs:
                            self._put(settled_future(self.client, ref.task_id, ref.last_status, exc))
                        return
                for member in group.next_done(self._interrupted):
                    self._put(_future_of(self.client, member))
        except TaskTimeout:
            log.info("adopt: %d task(s) left at its timeout, freed for another worker", len(group.pending()))
        except Exception as exc:  # the client closed under it, a failure of the group's own
            for member in group.pending():
                self._put(settled_future(self.client, member.task_id, member.wait.last, exc))
        finally:
            with self._lock:
                self._over = True
                left, self._more = self._more, []
            self._given.extend(ref for refs, _ in left for ref in refs)
            group.close()  # frees the leases of the tasks left
            added = {member.task_id for member in group.members}
            never = {ref.task_id for ref in self._given if ref.task_id not in added}
            release_all(self.settings.store, self.claim.holder, never)
            self.freed = max(len(self._given) - self.handed, 0)
            self.ended.put(self)


def _future_of(client: Client, member: Member) -> TaskFuture:
    if member.error is not None:
        return settled_future(client, member.task_id, member.wait.last, member.error)
    return settled_future(client, member.task_id, member.final, None)
