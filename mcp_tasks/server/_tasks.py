"""The reference server's task runtime: records, the worker threads that run task tools, input
that parks a task until ``tasks/update`` answers it, cancellation, TTL expiry and capacity limits.
"""

from __future__ import annotations

import collections
import datetime
import itertools
import logging
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from mcp_tasks._clock import SLICE
from mcp_tasks._errors import INTERNAL_ERROR, INVALID_PARAMS, McpError
from mcp_tasks._redact import short_id
from mcp_tasks._threads import join_all, start_thread
from mcp_tasks._wire import dumps
from mcp_tasks.server._tools import Cancelled, Tool, ToolContext, ToolError, error_result, to_call_result
from mcp_tasks.server._tracing import carried

__all__ = ["TaskRecord", "TaskRuntime"]

log = logging.getLogger("mcp_tasks.server")

TERMINAL = frozenset({"completed", "failed", "cancelled"})
MAX_TASK_ID_BYTES = 256
UNKNOWN_TASK = "Unknown or inaccessible taskId"


def _now() -> str:
    moment = datetime.datetime.now(datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _millis(seconds: float | None) -> int | None:
    return None if seconds is None else max(round(seconds * 1000), 1)


class TaskRecord:
    """One task: its state on the wire, its parked input, and its cancellation flag."""

    def __init__(
        self,
        runtime: TaskRuntime,
        task_id: str,
        principal: str | None,
        tool: str,
        ttl_ms: int | None,
        poll_ms: int | None,
    ) -> None:
        self.runtime = runtime
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
        self.runtime.publish(self, self._wire())

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


class TaskRuntime:
    """Creates tasks, runs their tools in a bounded set of worker threads, and keeps them until
    their TTL runs out. Ids are unguessable; a task is visible only to the principal that made it.
    """

    def __init__(
        self,
        *,
        ttl: float | None = 3600.0,
        poll_interval: float | None = 0.25,
        max_jobs: int = 32,
        max_tasks: int = 10_000,
        max_runtime: float | None = None,
        publish: Callable[[TaskRecord, dict[str, Any]], None] | None = None,
    ) -> None:
        if max_jobs < 1 or max_tasks < 1:
            raise ValueError("max_jobs and max_tasks must be at least 1")
        self.ttl_ms = _millis(ttl)
        self.poll_ms = _millis(poll_interval)
        self.max_jobs = max_jobs
        self.max_tasks = max_tasks
        self.max_runtime = max_runtime
        self._publish = publish
        self._lock = threading.Lock()
        self._tasks: dict[str, TaskRecord] = {}
        self._workers: dict[TaskRecord, threading.Thread] = {}
        # Tasks beyond max_jobs wait here, working, until a worker is free (oldest first).
        self._next_reap = 0.0
        self._queued: collections.deque[tuple[TaskRecord, Callable[[], None]]] = collections.deque()
        self._numbers = itertools.count(1)
        self._timers: set[threading.Thread] = set()
        self._stopping = threading.Event()
        self._closed = False

    def publish(self, record: TaskRecord, task: dict[str, Any]) -> None:
        """Hand a status change to whoever listens (the server's hub)."""
        if self._publish is not None:
            self._publish(record, task)

    def create(
        self, tool: Tool, arguments: dict[str, Any], principal: str | None, meta: dict[str, Any] | None = None
    ) -> TaskRecord:
        """Store a new task and start its tool, or queue it (working) while `max_jobs` tools run;
        refused with a retryable error when `max_tasks` are stored.
        """
        with self._lock:
            if self._closed:
                raise McpError(INTERNAL_ERROR, "The server is shutting down")
            self._reap_locked()
            if len(self._tasks) >= self.max_tasks:
                raise _capacity("max_tasks", self.max_tasks, "tasks are stored")
            record = TaskRecord(self, _new_task_id(), principal, tool.name, self.ttl_ms, self.poll_ms)
            self._tasks[record.task_id] = record
            record.created = record.creation()  # as it stands before its tool starts
            context = ToolContext(cancelled=record.cancel_event, task=record, principal=principal, meta=meta)
            # The job carries the creating request's trace context, also when it starts later.
            job = carried(lambda: self._run(record, tool, context, arguments), tool.name, record.task_id)
            if len(self._workers) >= self.max_jobs:
                self._queued.append((record, job))
            else:
                self._start_locked(record, job)
        return record

    def _start_locked(self, record: TaskRecord, job: Callable[[], None]) -> None:
        self._workers[record] = start_thread(f"server-task-{next(self._numbers)}", job)

    def _next_locked(self) -> None:
        """Start queued tasks while workers are free (a task cancelled in the queue is skipped)."""
        while self._queued and len(self._workers) < self.max_jobs and not self._closed:
            record, job = self._queued.popleft()
            if not record.terminal and not record.cancel_event.is_set():
                self._start_locked(record, job)
            elif not record.terminal:
                record.cancel()

    def lookup(self, task_id: object, principal: str | None) -> TaskRecord:
        """The task with this id, if it exists, has not expired, and belongs to `principal`."""
        key = check_task_id(task_id)
        with self._lock:
            self._reap_locked()
            record = self._tasks.get(key)
        if record is None or record.principal != principal or record.expired():
            raise McpError(INVALID_PARAMS, UNKNOWN_TASK)
        return record

    def visible_ids(self, task_ids: list[str], principal: str | None) -> list[str]:
        """Those of `task_ids` that `principal` may see, in order (one reaping for them all)."""
        with self._lock:
            self._reap_locked()
            found = [self._tasks.get(task_id) for task_id in task_ids]
        return [
            i
            for i, r in zip(task_ids, found, strict=True)
            if r is not None and r.principal == principal and not r.expired()
        ]

    def visible(self, task_id: str, principal: str | None) -> bool:
        """Whether `principal` may see this task (it exists and has not expired)."""
        try:
            self.lookup(task_id, principal)
        except McpError:
            return False
        return True

    def later(self, delay: float, action: Callable[[], None]) -> None:
        """Run `action` after `delay` seconds in a worker thread (unless the runtime closes)."""

        def run() -> None:
            try:
                if not self._stopping.wait(delay):
                    action()
            finally:
                with self._lock:
                    self._timers.discard(threading.current_thread())

        with self._lock:
            self._timers.add(start_thread(f"server-later-{next(self._numbers)}", run))

    def close(self, timeout: float = 5.0) -> None:
        """Cancel every running task and join the workers."""
        self._stopping.set()
        with self._lock:
            self._closed = True
            workers = dict(self._workers)
            timers = list(self._timers)
            queued = [entry[0] for entry in self._queued]
            self._queued.clear()
        for record in queued:
            if not record.terminal:
                record.cancel()
        join_all(timers, timeout)
        for record in workers:
            record.cancel_event.set()
            with record.cond:
                record.cond.notify_all()
        join_all(workers.values(), timeout)

    def _run(self, record: TaskRecord, tool: Tool, context: ToolContext, arguments: dict[str, Any]) -> None:
        try:
            value = tool.run(context, arguments)
        except ToolError as exc:
            record.finish("completed", result=error_result(str(exc)))
        except Cancelled:
            record.cancel()
        except McpError as exc:
            record.finish("failed", error=exc.to_wire(), message=exc.message)
        except Exception as exc:
            self._crashed(record, tool, exc)
        else:
            try:
                result = to_call_result(value)
                dumps(result)
            except (TypeError, ValueError):
                message = "Task worker returned a non-JSON result"
                record.finish("failed", error={"code": INTERNAL_ERROR, "message": message}, message=message)
            else:
                record.finish("completed", result=result)
        finally:
            with self._lock:
                self._workers.pop(record, None)
                self._next_locked()

    @staticmethod
    def _crashed(record: TaskRecord, tool: Tool, exc: BaseException) -> None:
        log.warning("task tool %s raised %s (task %s)", tool.name, type(exc).__name__, short_id(record.task_id))
        error = {"code": INTERNAL_ERROR, "message": "Task failed"}
        record.finish("failed", error=error, message="The tool failed")

    def _reap_locked(self) -> None:
        # At most every REAP_EVERY seconds: a scan of every task on each request made 10,000 tasks
        # quadratic (a lookup checks its own task's expiry anyway).
        now = time.monotonic()
        if now < self._next_reap:
            return
        self._next_reap = now + REAP_EVERY
        for task_id, record in list(self._tasks.items()):
            if record.expired(now):
                del self._tasks[task_id]
                record.cancel_event.set()
            elif self.max_runtime is not None and not record.terminal and now - record.born > self.max_runtime:
                record.cancel_event.set()
                error = {"code": INTERNAL_ERROR, "message": "Task exceeded its maximum runtime"}
                record.finish("failed", error=error, message="Task exceeded its maximum runtime")


REAP_EVERY = 0.1
"""Seconds between scans for expired and overdue tasks."""


def check_task_id(task_id: object) -> str:
    """A task id from a request: a non-empty string of at most 256 bytes."""
    if not isinstance(task_id, str) or not task_id:
        raise McpError(INVALID_PARAMS, "taskId must be a non-empty string")
    if len(task_id.encode()) > MAX_TASK_ID_BYTES:
        raise McpError(INVALID_PARAMS, f"taskId is longer than {MAX_TASK_ID_BYTES} bytes")
    return task_id


def _capacity(limit: str, value: int, what: str) -> McpError:
    return McpError(
        INTERNAL_ERROR,
        f"Task capacity exhausted: {value} {what} (the server's {limit}); try again later, or raise it "
        f"with Server({limit}=...)",
        {"retryable": True, "limit": limit, "max": value},
    )


def _new_task_id() -> str:
    """A fresh unguessable task id (it is a bearer credential) that does not start with "-", so a
    command line never takes it for an option.
    """
    while (task_id := secrets.token_urlsafe(24)).startswith("-"):
        pass
    return task_id
