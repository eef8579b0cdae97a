"""`adopt`: a fleet worker's one call. It claims the store's tasks that nobody follows (their
leases free: never taken, released, expired, or their holder's process gone), follows them to
their ends (one client per endpoint, each with its shared watch, on the group core: see
`Follower`), records each end, frees each lease, and yields a `TaskFuture` per task as it ends.
At its timeout it frees what is left, for another worker. With ``forever=True`` it claims while
it follows, until stopped (`_forever.py`).

What ends comes to the caller's thread through a queue.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING

from mcp_tasks._client import Client
from mcp_tasks._clock import Deadline, get_sliced
from mcp_tasks._store import CLAIM_METHOD, TaskStore, new_holder
from mcp_tasks._store._protocol import check_store
from mcp_tasks._tasks._driver import TaskFuture
from mcp_tasks._tasks._follower import Ended, Follower, Unreached, claim_followable, group_refs
from mcp_tasks._tasks._forever import adopted_forever
from mcp_tasks._tasks._options import WaitSettings, settings_of
from mcp_tasks._tasks._record import Claim
from mcp_tasks._threads import join_all

if TYPE_CHECKING:
    from requests.auth import AuthBase
    from typing_extensions import Unpack

    from mcp_tasks._tasks._many import ManyOptions

__all__ = ["adopt"]

log = logging.getLogger("mcp_tasks")

JOIN_TIMEOUT = 10.0
NO_LIMIT = 2**31 - 1
"""The `limit` a claim is given when `adopt` has none."""


def adopt(
    store: TaskStore,
    /,
    *,
    limit: int | None = None,
    client: Client | None = None,
    auth: AuthBase | tuple[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    forever: bool = False,
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

    ``forever=True``: a worker that runs until stopped. It claims while it follows, on a
    cadence of the store's ``lease_ttl`` (a third of it, once a second at most), so a task whose
    lease lapses is claimed within about a second; it holds at most `limit` tasks at once (a
    claim asks for the places left). A store that fails (`StoreError`) is tried again after a
    backoff (0.5 s doubling to 5 s), with one warning when the outage begins and one line when
    it ends: it never raises for an outage. `timeout` is None by default (a timeout given ends
    it, as above). Ctrl-C (``KeyboardInterrupt`` while it waits) or closing the generator stops
    it: the leases it holds are freed at once for another worker, its clients closed. It claims
    while the caller waits on it: keep the loop's body short.
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
    if not isinstance(forever, bool):
        raise TypeError(f"forever must be True or False, got {type(forever).__name__}")
    options = {"timeout": None, **wait_options} if forever else wait_options
    settings, listen = settings_of({**options, "store": store}, "adopt", progress=False)
    if forever:
        return adopted_forever(store, limit or NO_LIMIT, client, auth, headers, settings, listen)
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
    refs = claim_followable(store, claim.holder, limit, deadline, client)
    if not refs:
        return
    log.info("adopted %d task(s) from %r", len(refs), store)
    ended: queue.Queue[Ended] = queue.Queue()
    followers: list[Follower] = []
    opened: list[Client] = []
    try:
        for (endpoint, session), claimed in group_refs(refs, client).items():
            ref_client = client
            if ref_client is None:
                ref_client = Client.http(endpoint, auth=auth, headers=headers, session_id=session)
                opened.append(ref_client)
            follower = Follower(len(followers) + 1, ref_client, claimed, claim, settings, listen, deadline, ended)
            followers.append(follower)
            follower.start()
        running = len(followers)
        while running:
            item = get_sliced(ended, None)
            if isinstance(item, Follower):
                running -= 1
            elif not isinstance(item, Unreached):  # one pass: its failures are the futures that follow
                yield item
    finally:
        for follower in followers:
            follower.stop()
        join_all([f.thread for f in followers if f.thread is not None], JOIN_TIMEOUT)
        for opened_client in opened:
            opened_client.close()
