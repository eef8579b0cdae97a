"""`TaskStore`: the methods a task store has. Any object with them works (SQLite ships); the
contract each must keep is in the README ("Resuming") and tests/store_contract.py checks it.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from mcp_tasks._redact import short_id
from mcp_tasks._status import Status
from mcp_tasks._store._ref import TaskRef

__all__ = [
    "CLAIM_METHOD",
    "LEASE_TTL",
    "STORE_METHODS",
    "TaskStore",
    "check_ends",
    "check_lease_ttl",
    "check_store",
    "claim_limit",
    "fences_statuses",
    "lease_ttl_of",
    "leases_on_record",
]

LEASE_TTL = 15.0
"""Seconds a lease lasts without renewal (a store's ``lease_ttl`` when it has none of its own)."""

STORE_METHODS = (
    "record",
    "update",
    "get",
    "unfinished",
    "forget",
    "write_answers",
    "acknowledge",
    "unacknowledged",
    "acquire",
    "renew",
    "release",
)
"""What every store has; `claim` is left out: a store without it works for everything but adopting."""
CLAIM_METHOD = "claim"


def _takes_holder(store: object, method: str) -> bool:
    """Whether `store`'s `method` takes a ``holder=`` keyword (or any keyword)."""
    try:
        parameters = inspect.signature(getattr(store, method, None)).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return any(
        (p.name == "holder" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)) or p.kind is p.VAR_KEYWORD
        for p in parameters
    )


def fences_statuses(store: object) -> bool:
    """Whether `store`'s ``update`` takes a ``holder=`` keyword (or any keyword): then a status
    is written only while its writer holds the task's lease, decided by the store itself.
    """
    return _takes_holder(store, "update")


def leases_on_record(store: object, method: str = "record") -> bool:
    """Whether `store`'s `method` (``record``, or ``join_intent``) takes a ``holder=`` keyword:
    then a task's record is written with its starter's lease, in one transaction.
    """
    return _takes_holder(store, method)


@runtime_checkable
class TaskStore(Protocol):
    """Where tasks outlive the process that made them: their refs, the answers sent to them (a
    write-ahead ledger) and the leases of the waits that answer them. Safe for many threads; a
    store shared by processes keeps each method atomic.
    """

    def record(self, ref: TaskRef) -> None:
        """Keep `ref` (a task just created); a ref already kept under its id is replaced, unless
        that one is finished (a finished ref never becomes unfinished, nor ends twice).

        Optional keywords ``holder=`` and ``ttl=`` (the stores shipped take them, and
        ``join_intent`` too): given a `holder`, the task's lease is taken for it in the same
        transaction (for `ttl` seconds, the store's ``lease_ttl`` when None) when it is free,
        expired or `holder`'s, so a client's task is never claimable between its record and its
        wait's lease. Without them the library records first and leases after, and says once
        that an adopter may take a task in between.
        """

    def update(self, task_id: str, status: Status, *, holder: str | None = None) -> None:
        """Make `status` the task's last status when it moves the record forward (`moves_forward`:
        never once the ref is finished, so its first end is kept; never a status older by
        ``lastUpdatedAt``), decided in the transaction that writes; a task not kept is left
        alone. Fenced: given a `holder` that does not hold the task's lease now, nothing is
        written (no error: the holder records the task). The `holder` keyword is optional in a
        store: without it the library records only from waits that held the lease when they
        last renewed it, and says once that a wait that lost it meanwhile may still write.
        """

    def get(self, task_id: str) -> TaskRef | None:
        """The ref kept under `task_id`, or None."""

    def unfinished(self) -> list[TaskRef]:
        """The refs whose last status is not terminal, oldest first."""

    def forget(self, task_id: str) -> None:
        """Drop the task: its ref, its answers and its lease."""

    def write_answers(self, task_id: str, answers: Mapping[str, Any], *, holder: str | None = None) -> None:
        """Keep `answers` (input responses by key) as not yet acknowledged, durably, before they
        are sent. Fenced: given a `holder` that does not hold the task's lease now (it expired, or
        another took it), nothing is written and `StoreError` is raised, decided in the same
        transaction that would have written.
        """

    def acknowledge(self, task_id: str, keys: Iterable[str], *, holder: str | None = None) -> None:
        """Mark the answers under `keys` as received by the server; fenced by `holder` as
        `write_answers` is.
        """

    def unacknowledged(self, task_id: str) -> dict[str, Any]:
        """The answers written and never acknowledged, by key, exactly as written."""

    def acquire(self, task_id: str, holder: str, ttl: float) -> bool:
        """Take the task's lease for `ttl` seconds: True when it was free, expired, held by a
        process of this machine that is gone, or already `holder`'s; False when another holds it.
        """

    def renew(self, task_id: str, holder: str, ttl: float) -> bool:
        """Extend `holder`'s lease by `ttl` seconds from now: False when `holder` no longer holds it."""

    def release(self, task_id: str, holder: str) -> None:
        """Free the lease if `holder` holds it."""

    def claim(self, holder: str, ttl: float, limit: int) -> list[TaskRef]:
        """Take, in one atomic step, the leases of up to `limit` unfinished tasks whose lease is
        free (never taken, released, expired, or held by a process of this machine that is gone),
        oldest first, for `ttl` seconds; the refs of the tasks taken. Two claimers never get the
        same task, and a task `holder` already holds is not returned again.
        """


def check_store(value: object) -> TaskStore | None:
    """A ``store=`` option: None, or an object with every `TaskStore` method (TypeError otherwise)."""
    if value is None:
        return None
    missing = [name for name in STORE_METHODS if not callable(getattr(value, name, None))]
    if missing:
        raise TypeError(f"store must be a TaskStore (such as SqliteTaskStore); {value!r} has no {', '.join(missing)}")
    return value  # type: ignore[return-value]


def check_lease_ttl(value: object) -> float:
    """A ``lease_ttl=`` option: a positive, finite number of seconds (ValueError/TypeError otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"lease_ttl must be a number of seconds, got {type(value).__name__}")
    if not 0 < value < float("inf"):
        raise ValueError(f"lease_ttl must be a positive, finite number of seconds, got {value!r}")
    return float(value)


def lease_ttl_of(store: object) -> float:
    """The lease time `store` asks for (its ``lease_ttl``), or `LEASE_TTL` when it names none."""
    value = getattr(store, "lease_ttl", None)
    return LEASE_TTL if value is None else check_lease_ttl(value)


def claim_limit(value: object) -> int:
    """A `claim`'s ``limit``: a whole number, 0 or more (ValueError/TypeError otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"limit must be a whole number of tasks, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"limit must be 0 or more, got {value}")
    return value


def check_ends(ends: Sequence[tuple[str, Status, str | None]]) -> list[tuple[str, Status, str | None]]:
    """A ``finish_many``'s ends: ``(task_id, status, holder)`` each, the status terminal and the
    holder a string or None (TypeError/ValueError naming the one that is not).
    """
    checked: list[tuple[str, Status, str | None]] = []
    for end in ends:
        shape = tuple(type(part).__name__ for part in end) if isinstance(end, tuple) else type(end).__name__
        if not isinstance(end, tuple) or len(end) != 3 or not isinstance(end[0], str) or not isinstance(end[1], Status):
            raise TypeError(f"an end must be a (task_id, Status, holder) tuple, got {shape}")
        task_id, status, holder = end
        if not status.terminal:
            raise ValueError(f"task {short_id(task_id)}: its end needs a terminal status, not {status.wire_status!r}")
        if holder is not None and not isinstance(holder, str):
            raise TypeError(f"a holder must be a string or None, got {type(holder).__name__}")
        checked.append((task_id, status, holder))
    return checked
