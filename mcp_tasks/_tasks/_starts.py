"""The leases a client holds on the tasks it starts. A task's record is written together with a
lease for the client's starter holder (one transaction), so that no adopter (`adopt(forever=True)`
claims about once a second) can take the task between its record and the first lease its wait
takes; that wait then takes the lease as the starter holder, which the store finds already its
own. A task nobody waits on keeps that lease until the client closes (it frees them) or its ttl
lapses (nothing renews it): then an adopter may take it.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from mcp_tasks._store import StoreError, TaskStore, leases_on_record, new_holder, store_deadline

if TYPE_CHECKING:
    from mcp_tasks._session._channel import Channel

__all__ = ["FREE_PATIENCE", "KEPT_AT_MOST", "Starts", "starts_of"]

log = logging.getLogger("mcp_tasks")

FREE_PATIENCE = 0.5
"""Seconds a client's close gives its store to free the leases of tasks it started and never waited on."""
KEPT_AT_MOST = 10_000
"""Tasks started and not yet waited on that a client remembers (the oldest are forgotten first:
their leases lapse by themselves).
"""

_said: set[type] = set()
_said_lock = threading.Lock()


def _without(store: TaskStore, method: str) -> None:
    with _said_lock:
        if type(store) in _said:
            return
        _said.add(type(store))
    log.warning(
        "the task store %s's %s takes no holder=/ttl= keywords: a task is recorded first and leased after, "
        "so an adopter may take a task this client just started and both deliver its outcome (give %s "
        "holder= and ttl= keywords that take the lease in the same transaction, for the guarantee)",
        type(store).__name__,
        method,
        method,
    )


class Starts:
    """A client's starter holder, and the tasks (by store) whose leases it holds, not yet handed
    to a wait.
    """

    def __init__(self, channel: Channel | None = None) -> None:
        self.holder = new_holder()
        self._lock = threading.Lock()
        self._held: dict[tuple[int, str], TaskStore] = {}  # in the order started

    def lease(self, store: TaskStore, method: str, task_id: str) -> dict[str, str]:
        """The keywords that make `store`'s `method` (``record``, ``join_intent``) write the
        record of `task_id` with this client's starter lease (none when the store cannot: said
        once), the task remembered for its first wait.
        """
        if not leases_on_record(store, method):
            _without(store, method)
            return {}
        with self._lock:
            self._held[(id(store), task_id)] = store
            while len(self._held) > KEPT_AT_MOST:
                del self._held[next(iter(self._held))]
        return {"holder": self.holder}

    def holds_all(self, store: TaskStore | None, task_ids: list[str]) -> str | None:
        """The starter holder when it holds the leases of all `task_ids` in `store` (a set of
        waits about to begin takes them as its own), else None.
        """
        with self._lock:
            if store is None or not task_ids or any((id(store), t) not in self._held for t in task_ids):
                return None
        return self.holder

    def hand_over(self, store: TaskStore | None, task_id: str) -> str | None:
        """The starter holder, for the first wait on `task_id` in `store` when this client
        started it (that wait holds the lease from now on), else None.
        """
        if store is None:
            return None
        with self._lock:
            return self.holder if self._held.pop((id(store), task_id), None) is not None else None

    def join(self) -> None:
        """The client has closed: free the leases of the tasks it started and nobody waited on,
        so that an adopter takes them at once (best effort, within `FREE_PATIENCE`).
        """
        with self._lock:
            held, self._held = self._held, {}
        by_store: dict[int, tuple[TaskStore, list[str]]] = {}
        for (key, task_id), store in held.items():
            by_store.setdefault(key, (store, []))[1].append(task_id)
        until = time.monotonic() + FREE_PATIENCE
        for store, task_ids in by_store.values():
            many = getattr(store, "release_many", None)
            try:
                with store_deadline(until):
                    if callable(many):
                        many([(task_id, self.holder) for task_id in task_ids])
                    else:
                        for task_id in task_ids:
                            store.release(task_id, self.holder)
            except StoreError as exc:  # their ttl frees them
                log.warning("could not free the leases of %d tasks started and never waited on: %s", len(task_ids), exc)


def starts_of(channel: Channel) -> Starts:
    """The client's `Starts`."""
    return channel.attachment(Starts, Starts)
