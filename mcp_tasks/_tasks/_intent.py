"""Calls durable before they are sent. On a store-backed client every ``tools/call`` is first
recorded as an `Intent` (tool, endpoint, a digest of its arguments, a key): a store that cannot
take it within the call's deadline fails the call with `StoreError`, and nothing is sent. The
task id (or the result the server gave at once) joins the intent when the answer comes; a join
the store refused stays with the client (`Joins`), tried again at its next call and at its close.
A key already recorded is followed, never called again.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from mcp_tasks._clock import Deadline
from mcp_tasks._redact import short_id
from mcp_tasks._status import Status
from mcp_tasks._store import (
    INTENT_METHODS,
    Intent,
    OutcomeUnknown,
    StoreError,
    TaskRef,
    TaskStore,
    best_effort,
    store_deadline,
)
from mcp_tasks._store._intent import check_key, digest_of
from mcp_tasks._tasks._records import created_ref, endpoint_of, store_of

if TYPE_CHECKING:
    from mcp_tasks._client import Client
    from mcp_tasks._session._channel import Channel

__all__ = [
    "JOIN_PATIENCE",
    "Joins",
    "Started",
    "abandon",
    "begin",
    "joined",
    "keeps_intents",
    "kept_status",
]

log = logging.getLogger("mcp_tasks")

JOIN_PATIENCE = 1.0
"""Seconds a client's close gives its store to take the joins it refused before."""

_warned: set[type[Any]] = set()
_warned_lock = threading.Lock()


def keeps_intents(store: object) -> bool:
    """Whether `store` has the optional intent methods (`INTENT_METHODS`)."""
    return all(callable(getattr(store, name, None)) for name in INTENT_METHODS)


def _without_intents(store: object) -> None:
    with _warned_lock:
        if type(store) in _warned:
            return
        _warned.add(type(store))
    log.warning(
        "the task store %s has no %s: its calls are recorded after the server answers, not before "
        "(a process that dies in between leaves a task nobody follows), and key= cannot be used",
        type(store).__name__,
        "/".join(INTENT_METHODS),
    )


@attrs.frozen
class Started:
    """A call recorded before it is sent: where its outcome joins it."""

    store: TaskStore
    endpoint: str
    key: str


@attrs.frozen
class _Join:
    started: Started
    ref: TaskRef | None
    result: dict[str, Any] | None

    def write(self) -> None:
        joining: Any = self.started.store
        joining.join_intent(self.started.endpoint, self.started.key, ref=self.ref, result=self.result)

    def what(self) -> str:
        return f"task {short_id(self.ref.task_id)}" if self.ref is not None else f"call {self.started.key!r}"


class Joins:
    """The joins a client's store refused: each tried again at the client's next call and at its
    close (which gives the store `JOIN_PATIENCE` seconds, then says which are lost).
    """

    def __init__(self, channel: Channel | None = None) -> None:
        self._lock = threading.Lock()
        self._left: list[_Join] = []

    def keep(self, join: _Join) -> None:
        """Keep `join` for the next try."""
        with self._lock:
            self._left.append(join)

    def retry(self, at: float | None) -> None:
        """Try the joins left again (each given until `at`, monotonic); those refused are kept."""
        with self._lock:
            left, self._left = self._left, []
        failed: list[_Join] = []
        for join in left:
            try:
                with store_deadline(at):
                    join.write()
                log.info("%s: its id is now recorded with its call", join.what())
            except StoreError as exc:
                log.warning("%s: still could not record its id with its call: %s", join.what(), exc)
                failed.append(join)
        with self._lock:
            self._left[:0] = failed

    def close(self) -> None:
        """The client closes: a last try; a join still refused leaves its call listed as
        started with its id never recorded (``store.unrecorded_intents()``).
        """
        self.retry(time.monotonic() + JOIN_PATIENCE)
        with self._lock:
            lost, self._left = self._left, []
        for join in lost:
            log.warning("%s: its id was never recorded; the store lists its call as started only", join.what())


def _joins(client: Client) -> Joins:
    return client.channel.attachment(Joins, Joins)


def begin(
    client: Client, tool: str, arguments: Mapping[str, Any] | None, key: str | None, deadline: Deadline
) -> Started | Intent | None:
    """Record the call before it is sent: `Started` (send it now), the `Intent` the caller's `key`
    already names (the same call: follow it, never call again), or None (no store, or one without
    intents: the call goes as before). `StoreError` when the store cannot take it by `deadline`;
    `ValueError` when `key` names another call.
    """
    if key is not None:
        check_key(key)
    store = store_of(client)
    if store is None or not keeps_intents(store):
        if key is not None:
            why = "no store" if store is None else f"a store without {INTENT_METHODS[0]} ({type(store).__name__})"
            raise ValueError(f"key= needs a client with a task store that records intents; this client has {why}")
        if store is not None:
            _without_intents(store)
        return None
    joins = _joins(client)
    with store_deadline(deadline.at):
        joins.retry(time.monotonic() + JOIN_PATIENCE)
    endpoint = endpoint_of(client.channel)
    digest = digest_of(tool, arguments)
    intent = Intent(endpoint, key if key is not None else uuid.uuid4().hex, tool, digest)
    recording: Any = store
    with store_deadline(deadline.at):
        kept = recording.record_intent(intent)
    if kept is None:
        return Started(store, endpoint, intent.key)
    if not isinstance(kept, Intent):
        raise StoreError(f"record_intent returned {type(kept).__name__}, not an Intent or None")
    if kept.tool != tool or kept.digest != digest:
        other = f"the tool {kept.tool!r}" if kept.tool != tool else "other arguments"
        raise ValueError(
            f"key {key!r} was used for another call on this store and endpoint (with {other}): "
            "give each call its own key"
        )
    return kept


def joined(
    client: Client,
    started: Started,
    deadline: Deadline,
    called: Status | dict[str, Any],
    tool: str,
    arguments: Mapping[str, Any] | None = None,
) -> None:
    """Join the call's outcome to its intent: the task it made, or the result given at once. A
    store that refuses keeps it with the client, tried again later (with a warning).
    """
    if isinstance(called, Status):
        join = _Join(started, created_ref(client, called, tool, arguments), None)
    else:
        join = _Join(started, None, dict(called))
    try:
        with store_deadline(deadline.at):
            join.write()
    except StoreError as exc:
        log.warning(
            "%s: could not record its id with its call (kept; tried again at the client's next call and at its "
            "close): %s",
            join.what(),
            exc,
        )
        _joins(client).keep(join)


def abandon(started: Started, deadline: Deadline) -> None:
    """The server refused the call (no task was made): its intent goes, so that the same key may
    call again (best effort: a store that fails leaves it listed as started).
    """
    forgetting: Any = started.store
    try:
        with store_deadline(deadline.at), best_effort():
            forgetting.forget_intent(started.endpoint, started.key)
    except StoreError as exc:
        log.warning("call %r: could not forget its intent after the server refused it: %s", started.key, exc)


def kept_status(store: TaskStore, intent: Intent, deadline: Deadline) -> Status | None:
    """The last status the store keeps of the task `intent` names (None when it keeps none)."""
    if intent.task_id is None:
        raise OutcomeUnknown(intent)
    with store_deadline(deadline.at):
        kept = store.get(intent.task_id)
    return kept.last_status if kept is not None else None
