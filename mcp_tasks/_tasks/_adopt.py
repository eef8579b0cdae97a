"""`adopt`: a fleet worker's one call. It claims the store's tasks that nobody follows (their
leases free: never taken, released, expired, or their holder's process gone), follows them to
their ends (one client per endpoint, each with its shared watch, on the group core), records
each end, frees each lease, and yields a `TaskFuture` per task as it ends. At its timeout it
frees what is left, for another worker.

Each endpoint's group runs in a thread of its own (``mcp_tasks-adopt-<n>``: its reads, its
input, its `on_status`); what ends comes to the caller's thread through a queue.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Generator, Iterator, Mapping
from typing import TYPE_CHECKING, Union

from mcp_tasks._client import Client
from mcp_tasks._clock import Deadline, get_sliced
from mcp_tasks._errors import McpError, TaskTimeout
from mcp_tasks._store import CLAIM_METHOD, TaskRef, TaskStore, lease_ttl_of, new_holder, store_deadline
from mcp_tasks._store._protocol import check_store
from mcp_tasks._tasks._driver import TaskFuture, settled_future
from mcp_tasks._tasks._group import Group, Member
from mcp_tasks._tasks._many import cancel_pending
from mcp_tasks._tasks._options import WaitSettings, settings_of
from mcp_tasks._tasks._record import Claim, endpoint_of, release_all
from mcp_tasks._threads import join_all, start_thread

if TYPE_CHECKING:
    from requests.auth import AuthBase
    from typing_extensions import Unpack

    from mcp_tasks._tasks._many import ManyOptions

__all__ = ["adopt"]

log = logging.getLogger("mcp_tasks")

JOIN_TIMEOUT = 10.0
NO_LIMIT = 2**31 - 1
"""The `limit` a claim is given when `adopt` has none."""

_Ended = Union[TaskFuture, None]  # None: an endpoint's thread is over


def adopt(
    store: TaskStore,
    /,
    *,
    limit: int | None = None,
    client: Client | None = None,
    auth: AuthBase | tuple[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    **wait_options: Unpack[ManyOptions],
) -> Generator[TaskFuture, None, None]:
    """Follow the tasks of `store` that nobody follows, and yield a `TaskFuture` for each as it
    ends (as ``concurrent.futures.as_completed`` does): done, its ``result()`` the
    CallToolResult, or raising the outcome's exception (`TaskFailed`, `TaskCancelled`, an
    `McpError` such as a task the server forgot). Closing the generator early frees the rest.

    On the first ``next()``, it claims up to `limit` (None: all) unfinished tasks whose lease is
    free, oldest first (``store.claim``: two workers never get the same task), and waits for
    them: one HTTP client per endpoint (with `auth` and `headers`; a 2025-era task joins its
    session), or `client` for the tasks of its endpoint (those of other endpoints are freed
    at once, with a warning, as are those of a stdio or in-process server, which only a `client`
    can reach). Each end is recorded in the store and each lease freed as its task ends. The
    options are those of `as_completed` (`ManyOptions`, but ``store``): `timeout` (60 s) covers the whole
    call; when it passes, the tasks left are freed for another worker (or cancelled, with
    ``cancel_on_timeout=True``) and the iteration ends. `input` and `on_status` run in the
    thread that follows the task's endpoint.
    """
    if check_store(store) is None:
        raise TypeError("adopt() needs a TaskStore, got None")
    if not callable(getattr(store, CLAIM_METHOD, None)):
        raise TypeError(f"adopt() needs a store with claim(holder, ttl, limit); {store!r} has no {CLAIM_METHOD}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
    if client is not None and not isinstance(client, Client):
        raise TypeError(f"client must be a Client or None, got {type(client).__name__}")
    if "store" in wait_options:
        raise TypeError("adopt() takes the store as its first argument, not as store=")
    settings, listen = settings_of({**wait_options, "store": store}, "adopt")
    return _adopted(store, limit or NO_LIMIT, client, auth, headers, settings, listen)


def _adopted(
    store: TaskStore,
    limit: int,
    client: Client | None,
    auth: AuthBase | tuple[str, str] | None,
    headers: Mapping[str, str] | None,
    settings: WaitSettings,
    listen: bool,
) -> Generator[TaskFuture, None, None]:
    deadline = Deadline(settings.timeout)
    claim = Claim(new_holder(), time.monotonic())
    refs = _claim(store, claim.holder, limit, deadline, client)
    if not refs:
        return
    log.info("adopted %d task(s) from %r", len(refs), store)
    ended: queue.Queue[_Ended] = queue.Queue()
    followers: list[_Follower] = []
    opened: list[Client] = []
    try:
        for ref_client, claimed in _split(refs, client, auth, headers, opened):
            follower = _Follower(len(followers) + 1, ref_client, claimed, claim, settings, listen, deadline, ended)
            followers.append(follower)
            follower.start()
        running = len(followers)
        while running:
            future = get_sliced(ended, None)
            if future is None:
                running -= 1
            else:
                yield future
    finally:
        for follower in followers:
            follower.stop()
        join_all([f.thread for f in followers if f.thread is not None], JOIN_TIMEOUT)
        for opened_client in opened:
            opened_client.close()


def _claim(store: TaskStore, holder: str, limit: int, deadline: Deadline, client: Client | None) -> list[TaskRef]:
    """Claim up to `limit` tasks this call can follow. Those it cannot (see `_unreachable`) are
    held while it claims again for their places (a claim skips what its holder holds), so they
    do not crowd out the others; then they are freed together, with one warning.
    """
    mine = endpoint_of(client.channel) if client is not None else None
    followed: list[TaskRef] = []
    skipped: dict[str, list[TaskRef]] = {}
    ttl = lease_ttl_of(store)
    with store_deadline(deadline.at):
        while len(followed) < limit:
            wanted = limit - len(followed)
            refs = store.claim(holder, ttl, wanted)
            for ref in refs:
                why = _unreachable(ref, mine)
                if why is None:
                    followed.append(ref)
                else:
                    skipped.setdefault(why, []).append(ref)
            if len(refs) < wanted:
                break  # nothing more is free
    for why, refs in skipped.items():
        log.warning("adopt: %d task(s) cannot be followed here, their leases are freed: %s", len(refs), why)
        release_all(store, holder, {ref.task_id for ref in refs})
    return followed


def _unreachable(ref: TaskRef, mine: str | None) -> str | None:
    """Why this call cannot follow `ref` (None: it can); `mine`: the endpoint of the given client."""
    if mine is not None:
        return None if ref.endpoint == mine else f"they run on another endpoint than the client's ({mine!r})"
    if not ref.endpoint.startswith(("http://", "https://")):
        return "their server lived in the process that started them (stdio or in-process): adopt them with client="
    return None


def _split(
    refs: list[TaskRef],
    client: Client | None,
    auth: AuthBase | tuple[str, str] | None,
    headers: Mapping[str, str] | None,
    opened: list[Client],
) -> Iterator[tuple[Client, list[TaskRef]]]:
    """The claimed refs by the client that follows them: `client`, or one it opens (into
    `opened`) per endpoint and 2025-era session.
    """
    if client is not None:
        yield client, refs
        return
    by_session: dict[tuple[str, str | None], list[TaskRef]] = {}
    for ref in refs:
        session = ref.session_id if ref.era == "legacy" else None
        by_session.setdefault((ref.endpoint, session), []).append(ref)
    for (endpoint, session), claimed in by_session.items():
        opened_client = Client.http(endpoint, auth=auth, headers=headers, session_id=session)
        opened.append(opened_client)
        yield opened_client, claimed


class _Follower:
    """One endpoint's claimed tasks, followed by a group in a thread of its own."""

    def __init__(
        self,
        number: int,
        client: Client,
        refs: list[TaskRef],
        claim: Claim,
        settings: WaitSettings,
        listen: bool,
        deadline: Deadline,
        ended: queue.Queue[_Ended],
    ) -> None:
        self.number = number
        self.client = client
        self.refs = refs
        self.claim = claim
        self.settings = settings
        self.listen = listen
        self.deadline = deadline
        self.ended = ended
        self.thread: threading.Thread | None = None
        self._stopping = False
        self._group: Group | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        self.thread = start_thread(f"adopt-{self.number}", self._run)

    def stop(self) -> None:
        """End the following early (the caller stopped iterating): the rest is freed."""
        with self._lock:
            self._stopping = True
            group = self._group
        if group is not None:
            group.wake()

    def _interrupted(self) -> bool:
        return self._stopping

    def _run(self) -> None:
        cancel = cancel_pending(self.client) if self.settings.cancel_on_timeout else None
        group = Group(self.client, self.settings, self.listen, self.deadline, on_timeout=cancel)
        with self._lock:
            self._group = group
        try:
            try:
                group.add([ref.task_id for ref in self.refs], claimed=self.claim)
            except McpError as exc:  # the endpoint cannot be reached, or negotiated with
                for ref in self.refs:
                    self.ended.put(settled_future(self.client, ref.task_id, ref.last_status, exc))
                return
            while (group.open or group.ready()) and not self._stopping:
                for member in group.next_done(self._interrupted):
                    self.ended.put(_future_of(self.client, member))
        except TaskTimeout:
            log.info("adopt: %d task(s) left at its timeout, freed for another worker", len(group.pending()))
        except Exception as exc:  # the client closed under it, a failure of the group's own
            for member in group.pending():
                self.ended.put(settled_future(self.client, member.task_id, member.wait.last, exc))
        finally:
            group.close()  # frees the leases of the tasks left
            never = {ref.task_id for ref in self.refs[len(group.members) :]}  # never added (the endpoint failed)
            release_all(self.settings.store, self.claim.holder, never)
            self.ended.put(None)


def _future_of(client: Client, member: Member) -> TaskFuture:
    if member.error is not None:
        return settled_future(client, member.task_id, member.wait.last, member.error)
    return settled_future(client, member.task_id, member.final, None)
