"""Calls durable before they are sent. On a store-backed client every ``tools/call`` is first
recorded as an `Intent` (tool, endpoint, a digest of its arguments, a key): a store that cannot
take it within the call's deadline fails the call with `StoreError`, and nothing is sent. The
task id (or the result the server gave at once) joins the intent when the answer comes; a join
the store refused stays with the client (`Joins`), tried again with backoff by its retry loop
(`_retrier.py`, which carries its refused ends too), at its next call, and at its close.
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
from mcp_tasks._tasks._retrier import Retrier, retrier_of
from mcp_tasks._tasks._starts import starts_of

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
    "joins_of",
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
    lease: dict[str, str] = attrs.field(factory=dict)  # the starter's, written with the ref

    def write(self) -> None:
        joining: Any = self.started.store
        joining.join_intent(self.started.endpoint, self.started.key, ref=self.ref, result=self.result, **self.lease)

    def what(self) -> str:
        return f"task {short_id(self.ref.task_id)}" if self.ref is not None else f"call {self.started.key!r}"

    def of(self, store: TaskStore, task_id: str) -> bool:
        """Whether it joins the task `task_id` of `store`."""
        return self.ref is not None and self.ref.task_id == task_id and self.started.store is store

    @property
    def unfinished(self) -> bool:
        """Whether it writes a task's record unfinished."""
        return self.ref is not None and not self.ref.finished

    def ended(self, status: Status) -> _Join:
        """The join with its task's end: its record is written finished."""
        if self.ref is None or self.ref.finished:
            return self
        return attrs.evolve(self, ref=self.ref.with_status(status))


class Joins:
    """The joins a client's store refused: each tried again by `retrier` (the client's retry loop,
    with backoff while the client lives), at the client's next call, and at its close (which gives
    the store `JOIN_PATIENCE` seconds, then says which are lost): tried only at those two, a
    process that died before its next call left "id never recorded" where the id was known. A
    task that ends before its join is written has its end folded into the join (`ended`): its
    wait found no record to write the end into, and a record written later as the call left it
    (unfinished, its starter's lease renewed by nobody) was adopted and delivered a second time.
    """

    def __init__(self, retrier: Retrier | None = None) -> None:
        self._lock = threading.Lock()
        self._left: list[_Join] = []
        self._writing: list[_Join] = []  # being tried now
        self._late: dict[tuple[int, str], Status] = {}  # ends seen while their join was being tried
        self.retrier = retrier or Retrier()
        self.retrier.add(self, first=True)

    def keep(self, join: _Join) -> None:
        """Keep `join` for the next try."""
        with self._lock:
            self._left.append(join)
        self.retrier.poke()

    def has_kept(self) -> bool:
        """Whether a join is kept."""
        with self._lock:
            return bool(self._left)

    def retry_kept(self) -> bool:
        """Try the joins kept once (the retrier's round, within its bound); whether none is left."""
        self.retry(None, level=logging.INFO)  # said at WARNING when kept, and at close
        return not self.has_kept()

    def ended(self, store: TaskStore, task_id: str, status: Status) -> None:
        """`task_id` (in `store`) has ended with `status`: a join of it not yet written writes
        its record finished.
        """
        with self._lock:
            if not self._left and not self._writing:
                return
            self._left = [join.ended(status) if join.of(store, task_id) else join for join in self._left]
            if any(join.of(store, task_id) and join.unfinished for join in self._writing):
                self._late[(id(store), task_id)] = status

    def retry(self, at: float | None, *, level: int = logging.WARNING) -> None:
        """Try the joins left again (each given until `at`, monotonic); those refused are kept
        (said at `level`). A task that ended while its join was being written is written again,
        finished.
        """
        with self._lock:
            left, self._left = self._left, []
            self._writing += left
        failed: list[_Join] = []
        written: list[_Join] = []
        try:
            for join in left:
                try:
                    with store_deadline(at):
                        join.write()
                    log.info("%s: its id is now recorded with its call", join.what())
                    written.append(join)
                except StoreError as exc:
                    log.log(level, "%s: still could not record its id with its call: %s", join.what(), exc)
                    failed.append(join)
        finally:
            with self._lock:
                self._writing = [join for join in self._writing if not any(join is mine for mine in left)]
                late = {key: self._late.pop(key) for key in {_key(join) for join in left} if key in self._late}
                again = [_late_end(join, late) for join in written if _key(join) in late]
                self._left[:0] = [_late_end(join, late) if _key(join) in late else join for join in failed]
        for join in again:  # finished now: no later end changes it
            try:
                with store_deadline(at):
                    join.write()
            except StoreError as exc:
                log.log(level, "%s: could not record its end with its call yet: %s", join.what(), exc)
                self.keep(join)

    def close(self) -> None:
        """The client closes: its retry loop stopped, a last try; a join still refused leaves its
        call listed as started with its id never recorded (``store.unrecorded_intents()``).
        """
        self.retrier.join()
        self.retry(time.monotonic() + JOIN_PATIENCE)
        with self._lock:
            lost, self._left = self._left, []
        for join in lost:
            log.warning("%s: its id was never recorded; the store lists its call as started only", join.what())


def _key(join: _Join) -> tuple[int, str]:
    return (id(join.started.store), join.ref.task_id if join.ref is not None else "")


def _late_end(join: _Join, late: dict[tuple[int, str], Status]) -> _Join:
    return join.ended(late[_key(join)])


def _joins(client: Client) -> Joins:
    return joins_of(client.channel)


def joins_of(channel: Channel) -> Joins:
    """The client's joins its store refused (see `Joins`)."""
    retrier = retrier_of(channel)  # made first: attachments are not made inside one another
    return channel.attachment(Joins, lambda opened: Joins(retrier))


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
        lease = starts_of(client.channel).lease(started.store, "join_intent", called.task_id)
        join = _Join(started, created_ref(client, called, tool, arguments), None, lease)
    else:
        join = _Join(started, None, dict(called))
    try:
        with store_deadline(deadline.at):
            join.write()
    except StoreError as exc:
        log.warning(
            "%s: could not record its id with its call (kept; tried again while the client lives and at its close): %s",
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
