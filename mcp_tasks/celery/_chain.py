"""The lease of one call's chain of checks, so that a chain the broker lost is found and started
again, and two chains of one call never both go on.

The rule. A chain is the sequence of check messages of one Celery id. Its lease lives in the task
store under ``celery-chain:<Celery id>``; its holder is a token the next check's message carries
(``_holder``). The first run, once the MCP task's id is recorded (the intent joined), writes the
chain's record (its message, in the result backend under a digest of the MCP task id) and takes
the lease for a new token. A check renews the lease with its token before it reads the task (for
`quiet` seconds); before it sends the next check, it passes the lease to a new token, which that
check carries (released, then taken again for the countdown plus `quiet`; if anyone took it in
between, this run sends nothing). A run that can neither renew its token's lease nor take a free
one (`Chain.begin`) belongs to a chain that another has replaced, or is a copy the broker gave
back: it ends without a trace (its message acknowledged, nothing sent). When the result is
decided, the lease is released and the record deleted.

The sweeper of each worker's main process (`Sweeper`) walks the store's unfinished tasks; for one
with a record, it takes the chain's lease for a new token, which succeeds only when no check has
renewed it for `quiet` seconds past its due time, and then sends a check with that token under the
same Celery id. So whatever the broker loses (a message handed over as its worker died, a
countdown message a dead worker had reserved), the chain starts again within about
`quiet` + the sweep's period; a check merely late is replaced, never doubled (its own renewal
fails); and no check calls the tool (the Celery id keys the call in the store: a check follows the
task already started). A result already ready (a revoke, the call's timeout) ends the chain at
the sweep instead.

A busy fleet makes every check late (its due checks wait for a slot): taking each late one for
lost would send copies that only add to the wait. So a check that ran `late` seconds after its
due time holds the lease for the next one twice that much longer (`Chain.keep`): how long a
chain may be silent grows with how late the fleet runs, and shrinks back as it catches up.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
import uuid
from typing import Any

from mcp_tasks._store import StoreError, TaskStore

__all__ = [
    "Chain",
    "forget_record",
    "keeps_keys",
    "late_by",
    "lease_key",
    "new_token",
    "quiet_after",
    "read_record",
    "record_key",
    "write_record",
]

log = logging.getLogger("mcp_tasks")


def quiet_after(check_every: float) -> float:
    """Seconds a chain may stay silent past its next check's due time before a sweeper starts it
    again: long beside a check (a late one is replaced, not lost: the cost is one extra check).
    """
    return max(5.0, 10 * check_every)


def new_token() -> str:
    """A chain's holder: no process's (never taken for a holder whose process is gone)."""
    return "celery-chain-" + uuid.uuid4().hex


def late_by(eta: object, now: float) -> float:
    """Seconds between a check's due time (Celery's ``request.eta``: an ISO time, a datetime, or
    None for a message sent without a countdown) and `now` (epoch); 0 when not late or unknown.
    """
    if isinstance(eta, str):
        try:
            eta = datetime.datetime.fromisoformat(eta)
        except ValueError:
            return 0.0
    if not isinstance(eta, datetime.datetime):
        return 0.0
    if eta.tzinfo is None:  # Celery's naive times are UTC
        eta = eta.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, now - eta.timestamp())


def lease_key(celery_id: str) -> str:
    """Where a chain's lease lives in the task store."""
    return "celery-chain:" + celery_id


def record_key(task_id: str) -> str:
    """Where the chain that follows MCP task `task_id` is described in the result backend (a
    digest: the full task id never reaches the backend).
    """
    return "mcp-tasks-chain-" + hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def keeps_keys(backend: Any) -> bool:
    """Whether the result backend keeps keys of ours (Redis, Memcached…: get, set, delete)."""
    return all(callable(getattr(backend, name, None)) for name in ("get", "set", "delete"))


def write_record(backend: Any, task_id: str, record: dict[str, Any]) -> bool:
    """Describe the chain of `task_id`: ``{"id", "args", "kwargs", "queue"}`` of a check. Nothing
    with a backend that keeps no keys (then no sweeper restarts the chain). False when the
    backend failed: the chain's next check writes it again.
    """
    if not keeps_keys(backend):
        return True
    try:
        backend.set(record_key(task_id), json.dumps(record))
    except Exception as exc:  # any backend's error: the chain goes on, described at its next check
        log.warning("a Celery call: could not describe its chain in the result backend (next check): %s", exc)
        return False
    return True


def read_record(backend: Any, task_id: str) -> dict[str, Any] | None:
    """The chain's record, or None (not a Celery call's task, or its chain is over)."""
    raw = backend.get(record_key(task_id)) if keeps_keys(backend) else None
    if raw is None:
        return None
    try:
        kept = json.loads(raw)
    except ValueError:  # not one of ours: no chain to restart from it
        return None
    return kept if isinstance(kept, dict) and isinstance(kept.get("id"), str) else None


def forget_record(backend: Any, task_id: str) -> None:
    """Drop the chain's record (its result is decided)."""
    if keeps_keys(backend):
        try:
            backend.delete(record_key(task_id))
        except Exception as exc:  # any backend's error: a sweeper finds the result ready and drops it
            log.warning("a Celery call: could not drop its chain's record: %s", exc)


class Chain:
    """One run's hold on its chain's lease: `holder` is the token its message carried (None for
    the first run, which takes a new one in `begin`).
    """

    def __init__(self, store: TaskStore, celery_id: str, holder: str | None, quiet: float) -> None:
        self.store, self.key, self.holder, self.quiet = store, lease_key(celery_id), holder, quiet
        self.renewed = False  # `begin` renewed the token given (else it took a new one)

    def begin(self) -> bool:
        """Hold the lease for `quiet` seconds: renew it with the token the message carried, or take
        it for a new token when it is free (never taken, released, or not renewed within its
        bound: no chain goes on). False when another chain holds it. A run that took a free lease
        looks whether the result is stored already (a waker stored it: `_waker`) before going on.
        """
        if self.holder is not None and self._held(self.store.renew, self.quiet):
            self.renewed = True
            return True
        self.holder = new_token()
        return self._held(self.store.acquire, self.quiet)

    def keep(self, countdown: float, late: float = 0.0) -> bool:
        """Pass the lease to a new token, held until the next check is due plus `quiet` plus twice
        `late` (how late this run was: see the module's docstring): False when another chain has
        it. A copy of this run's message (the broker gave it back) carries the old token, which
        no longer holds the lease: the copy ends at its next run.
        """
        assert self.holder is not None
        old, self.holder = self.holder, new_token()
        try:
            self.store.release(self.key, old)
        except StoreError as exc:  # the store down for a moment stops no chain
            log.warning("a Celery call's chain: could not pass its lease on (going on): %s", exc)
            self.holder = old
            return True
        return self._held(self.store.acquire, countdown + self.quiet + 2 * late)

    def end(self) -> None:
        """Release the lease (the result is stored)."""
        if self.holder is not None:
            try:
                self.store.release(self.key, self.holder)
            except StoreError as exc:
                log.warning("a Celery call ended: could not release its chain's lease: %s", exc)

    def _held(self, take: Any, ttl: float) -> bool:
        assert self.holder is not None
        try:
            return bool(take(self.key, self.holder, ttl))
        except StoreError as exc:  # the store down for a moment stops no chain: the next run asks again
            log.warning("a Celery call's chain: could not renew its lease (going on): %s", exc)
            return True
