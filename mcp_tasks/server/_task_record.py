"""One task of the reference server, as a record: its state on the wire, the input that parks it
until ``tasks/update`` answers, and its cancellation flag; and what a task id is. Kept apart from
the runtime that runs and stores the records, which hands each record only a `publish` callback.
"""

from __future__ import annotations

import datetime
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from mcp_tasks._clock import SLICE
from mcp_tasks._errors import INVALID_PARAMS, McpError
from mcp_tasks._redact import short_id
from mcp_tasks.server._tools import Cancelled

__all__ = ["MAX_TASK_ID_BYTES", "TERMINAL", "TaskRecord", "check_task_id", "new_task_id"]

TERMINAL = frozenset({"completed", "failed", "cancelled"})
MAX_TASK_ID_BYTES = 256

Publish = Callable[["TaskRecord", dict[str, Any]], None]


def _now() -> str:
    moment = datetime.datetime.now(datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class TaskRecord:
    """One task: its state on the wire, its parked input, and its cancellation flag.

    `publish` hears every change (the record and its task as ``tasks/get`` shows it).
    """

    def __init__(
        self,
        publish: Publish,
        task_id: str,
        principal: str | None,
        tool: str,
        ttl_ms: int | None,
        poll_ms: int | None,
    ) -> None:
        self.publish = publish
        self.task_id = task_id
        self.principal = principal
        self.tool = tool
        self.status = "working"
        self.status_message: str | None = "Task accepted"
        self.created_at = self.last_updated_at = _now()
        self.born = time.monotonic()
        self.ttl_ms = ttl_ms
        self.poll_ms = poll_ms
        self.pending: dict[str, dict[str, Any]] = {}
        self.answers: dict[str, Any] = {}
        self.used_keys: set[str] = set()
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.cancel_event = threading.Event()
        self.cond = threading.Condition()
        self.created: dict[str, Any] = {}

    # -- reading ------------------------------------------------------------------------------

    @property
    def terminal(self) -> bool:
        """Whether the task reached completed, failed or cancelled."""
        return self.status in TERMINAL

    def expired(self, now: float | None = None) -> bool:
        """Whether the task is past ``createdAt + ttlMs``."""
        if self.ttl_ms is None:
            return False
        return (time.monotonic() if now is None else now) >= self.born + self.ttl_ms / 1000

    def wire(self) -> dict[str, Any]:
        """The task as ``tasks/get`` shows it, without ``resultType`` (a DetailedTask)."""
        with self.cond:
            return self._wire()

    def _wire(self) -> dict[str, Any]:
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at,
            "ttlMs": self.ttl_ms,
        }
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        if self.poll_ms is not None:
            task["pollIntervalMs"] = self.poll_ms
        if self.status == "input_required":
            task["inputRequests"] = dict(self.pending)
        elif self.status == "completed":
            task["result"] = self.result
        elif self.status == "failed":
            task["error"] = self.error
        return task

    def creation(self) -> dict[str, Any]:
        """The flat creation result of ``tools/call`` (no payloads)."""
        with self.cond:
            task = self._wire()
        for key in ("inputRequests", "result", "error"):
            task.pop(key, None)
        return {"resultType": "task", **task}

    # -- changing (each change is queued for the listeners while the lock is held, so in order;
    #    the hub only queues, each stream's own thread sends) --------------------------------

    def _changed(self, message: str | None = None, *, keep_message: bool = False) -> None:
        if not keep_message:
            self.status_message = message
        self.last_updated_at = _now()
        self.cond.notify_all()
        self.publish(self, self._wire())

    def set_message(self, message: str | None) -> None:
        """A status message from the tool body."""
        with self.cond:
            if self.terminal:
                return
            self._changed(message)

    def ask(self, wanted: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Park the task as input_required until every wanted key is answered (worker thread)."""
        with self.cond:
            reused = sorted(set(wanted) & self.used_keys)
            if reused:
                raise ValueError(f"input keys are unique for the lifetime of a task: {reused}")
            self.used_keys.update(wanted)
            self.pending.update(wanted)
            self.status = "input_required"
            self._changed("Waiting for input")
            while not all(key in self.answers for key in wanted):
                if self.cancel_event.is_set() or self.terminal:
                    raise Cancelled()
                self.cond.wait(SLICE)
            return {key: self.answers.pop(key) for key in wanted}

    def answer(self, responses: dict[str, Any]) -> None:
        """Answers from ``tasks/update``; keys not outstanding are ignored."""
        with self.cond:
            taken = [key for key in responses if key in self.pending]
            if not taken or self.terminal:
                return
            for key in taken:
                self.answers[key] = responses[key]
                del self.pending[key]
            if not self.pending:
                self.status = "working"
            self._changed(self.status_message, keep_message=True)

    def cancel(self) -> None:
        """Cancel: the task reads cancelled at once; the tool body sees it cooperatively."""
        with self.cond:
            self.cancel_event.set()
            if self.terminal:
                return
            self.status = "cancelled"
            self.pending.clear()
            self._changed("Cancelled by request")

    def finish(
        self,
        status: str,
        *,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        message: str | None = None,
    ) -> None:
        """The tool body ended; a task already terminal (cancelled) stays as it is."""
        with self.cond:
            if self.terminal:
                return
            self.status = status
            self.result = result
            self.error = error
            self.pending.clear()
            self._changed(message)

    def __repr__(self) -> str:
        return f"<TaskRecord {short_id(self.task_id)} {self.status}>"


def check_task_id(task_id: object) -> str:
    """A task id from a request: a non-empty string of at most 256 bytes."""
    if not isinstance(task_id, str) or not task_id:
        raise McpError(INVALID_PARAMS, "taskId must be a non-empty string")
    if len(task_id.encode()) > MAX_TASK_ID_BYTES:
        raise McpError(INVALID_PARAMS, f"taskId is longer than {MAX_TASK_ID_BYTES} bytes")
    return task_id


def new_task_id() -> str:
    """A fresh unguessable task id (it is a bearer credential) that does not start with "-", so a
    command line never takes it for an option.
    """
    while (task_id := secrets.token_urlsafe(24)).startswith("-"):
        pass
    return task_id
