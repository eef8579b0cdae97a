"""A task store in memory, written from the README's contract alone: the second implementation
the contract tests run against (tests/store/test_store.py), and the shape a team's own store takes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

import mcp_tasks as mt
from mcp_tasks._store import holder_gone, moves_forward
from mcp_tasks._store._protocol import check_ends


class MemoryTaskStore:
    """Every method under one lock; nothing survives the process."""

    def __init__(self, *, lease_ttl: float = 15.0) -> None:
        self.lease_ttl = lease_ttl
        self._lock = threading.RLock()  # `join_intent` records under it too
        self._refs: dict[str, mt.TaskRef] = {}
        self._answers: dict[str, dict[str, tuple[Any, bool]]] = {}
        self._leases: dict[str, tuple[str, float]] = {}
        self._intents: dict[tuple[str, str], mt.Intent] = {}

    def record(self, ref: mt.TaskRef, *, holder: str | None = None, ttl: float | None = None) -> None:
        with self._lock:
            kept = self._refs.get(ref.task_id)
            if kept is None or not kept.finished:  # a finished ref stays as it is
                self._refs[ref.task_id] = ref
            if holder is not None:
                self._lease_from_start(ref.task_id, holder, ttl)

    def _lease_from_start(self, task_id: str, holder: str, ttl: float | None) -> None:
        """The starter's lease, taken under the lock that writes the record, when it is free."""
        now = time.time()
        lease = self._leases.get(task_id)
        if lease is None or lease[0] == holder or lease[1] <= now:
            self._leases[task_id] = (holder, now + (self.lease_ttl if ttl is None else ttl))

    def _forward(self, task_id: str, status: mt.Status, holder: str | None) -> None:
        """`status` made the task's last, under the lock, when it moves the record forward and
        `holder` (if given) holds the lease now.
        """
        kept = self._refs.get(task_id)
        lease = self._leases.get(task_id)
        if holder is not None and (lease is None or lease[0] != holder or lease[1] <= time.time()):
            return
        if kept is not None and moves_forward(kept, status):
            self._refs[task_id] = kept.with_status(status)

    def update(self, task_id: str, status: mt.Status, *, holder: str | None = None) -> None:
        with self._lock:
            self._forward(task_id, status, holder)

    def get(self, task_id: str) -> mt.TaskRef | None:
        with self._lock:
            return self._refs.get(task_id)

    def unfinished(self) -> list[mt.TaskRef]:
        with self._lock:
            refs = [ref for ref in self._refs.values() if not ref.finished]
        return sorted(refs, key=lambda ref: (ref.created_at, ref.task_id))

    def forget(self, task_id: str) -> None:
        with self._lock:
            self._refs.pop(task_id, None)
            self._answers.pop(task_id, None)
            self._leases.pop(task_id, None)

    def _fence(self, task_id: str, holder: str | None) -> None:
        """A fenced write refused, under the lock that makes the write (StoreError)."""
        current = self._leases.get(task_id)
        if holder is not None and (current is None or current[0] != holder or current[1] <= time.time()):
            raise mt.StoreError(f"task {task_id[:4]}…: {holder} does not hold its lease in memory")

    def write_answers(self, task_id: str, answers: Mapping[str, Any], *, holder: str | None = None) -> None:
        with self._lock:
            self._fence(task_id, holder)
            kept = self._answers.setdefault(task_id, {})
            kept.update({key: (value, False) for key, value in answers.items()})

    def acknowledge(self, task_id: str, keys: Iterable[str], *, holder: str | None = None) -> None:
        with self._lock:
            self._fence(task_id, holder)
            kept = self._answers.get(task_id, {})
            for key in keys:
                if key in kept:
                    kept[key] = (kept[key][0], True)

    def unacknowledged(self, task_id: str) -> dict[str, Any]:
        with self._lock:
            kept = self._answers.get(task_id, {})
            return {key: value for key, (value, acked) in sorted(kept.items()) if not acked}

    def _taken(self, task_id: str, holder: str, now: float) -> bool:
        """Whether another holder, alive, holds the task's lease now."""
        current = self._leases.get(task_id)
        return current is not None and current[0] != holder and current[1] > now and not holder_gone(current[0])

    def acquire(self, task_id: str, holder: str, ttl: float) -> bool:
        with self._lock:
            now = time.time()
            if self._taken(task_id, holder, now):
                return False
            self._leases[task_id] = (holder, now + ttl)
            return True

    def claim(self, holder: str, ttl: float, limit: int) -> list[mt.TaskRef]:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be a whole number, 0 or more, got {limit!r}")
        with self._lock:
            now = time.time()
            refs = sorted((r for r in self._refs.values() if not r.finished), key=lambda r: (r.created_at, r.task_id))
            taken: list[mt.TaskRef] = []
            for ref in refs:
                if len(taken) == limit:
                    break
                current = self._leases.get(ref.task_id)
                mine = current is not None and current[0] == holder and current[1] > now
                if not mine and not self._taken(ref.task_id, holder, now):
                    self._leases[ref.task_id] = (holder, now + ttl)
                    taken.append(ref)
            return taken

    def renew(self, task_id: str, holder: str, ttl: float) -> bool:
        with self._lock:
            current = self._leases.get(task_id)
            if current is None or current[0] != holder:
                return False
            self._leases[task_id] = (holder, time.time() + ttl)
            return True

    def acquire_many(self, task_ids: Iterable[str], holder: str, ttl: float) -> set[str]:
        with self._lock:
            now = time.time()
            taken = {task_id for task_id in task_ids if not self._taken(task_id, holder, now)}
            for task_id in taken:
                self._leases[task_id] = (holder, now + ttl)
            return taken

    def release_many(self, leases: Sequence[tuple[str, str]]) -> None:
        with self._lock:
            for task_id, holder in leases:
                current = self._leases.get(task_id)
                if current is not None and current[0] == holder:
                    del self._leases[task_id]

    def finish_many(self, ends: Sequence[tuple[str, mt.Status, str | None]]) -> None:
        checked = check_ends(ends)
        with self._lock:
            for task_id, status, holder in checked:
                self._forward(task_id, status, holder)
            for task_id, _, holder in checked:
                kept = self._answers.get(task_id, {})
                self._answers[task_id] = {key: (value, True) for key, (value, _) in kept.items()}
                current = self._leases.get(task_id)
                if holder is not None and current is not None and current[0] == holder:
                    del self._leases[task_id]

    def release(self, task_id: str, holder: str) -> None:
        with self._lock:
            current = self._leases.get(task_id)
            if current is not None and current[0] == holder:
                del self._leases[task_id]

    # -- intents (optional): calls recorded before they are sent --------------------------------------

    def record_intent(self, intent: mt.Intent) -> mt.Intent | None:
        with self._lock:
            kept = self._intents.get((intent.endpoint, intent.key))
            if kept is None:
                self._intents[(intent.endpoint, intent.key)] = intent
            return kept

    def join_intent(
        self,
        endpoint: str,
        key: str,
        *,
        ref: mt.TaskRef | None = None,
        result: Mapping[str, Any] | None = None,
        holder: str | None = None,
        ttl: float | None = None,
    ) -> None:
        with self._lock:  # one transaction: the ref kept as `record` keeps it, with the starter's lease
            if ref is not None:
                self.record(ref)
                if holder is not None:
                    self._lease_from_start(ref.task_id, holder, ttl)
            kept = self._intents.get((endpoint, key))
            if kept is not None:
                joined = {"task_id": ref.task_id} if ref is not None else {"result": dict(result or {})}
                self._intents[(endpoint, key)] = attrs.evolve(kept, **joined)

    def get_intent(self, endpoint: str, key: str) -> mt.Intent | None:
        with self._lock:
            return self._intents.get((endpoint, key))

    def unrecorded_intents(self) -> list[mt.Intent]:
        with self._lock:
            left = [intent for intent in self._intents.values() if not intent.recorded]
        return sorted(left, key=lambda intent: (intent.created_at, intent.endpoint, intent.key))

    def forget_intent(self, endpoint: str, key: str) -> None:
        with self._lock:
            self._intents.pop((endpoint, key), None)
