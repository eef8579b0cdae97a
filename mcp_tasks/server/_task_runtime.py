"""The reference server's task runtime: it creates task records, runs their tools in a bounded
set of worker threads (queueing the rest), keeps the records until their TTL runs out or their
runtime is exceeded, and refuses new tasks past its capacity. The record itself is `TaskRecord`.
"""

from __future__ import annotations

import collections
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from mcp_tasks._errors import INTERNAL_ERROR, INVALID_PARAMS, McpError
from mcp_tasks._redact import short_id
from mcp_tasks._threads import join_all, start_thread
from mcp_tasks._wire import dumps
from mcp_tasks.server._task_record import TaskRecord, check_task_id, new_task_id
from mcp_tasks.server._tools import Cancelled, Tool, ToolContext, ToolError, error_result, to_call_result
from mcp_tasks.server._tracing import carried

__all__ = ["TaskRuntime"]

log = logging.getLogger("mcp_tasks.server")

UNKNOWN_TASK = "Unknown or inaccessible taskId"


def _millis(seconds: float | None) -> int | None:
    return None if seconds is None else max(round(seconds * 1000), 1)


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
            record = TaskRecord(self.publish, new_task_id(), principal, tool.name, self.ttl_ms, self.poll_ms)
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


def _capacity(limit: str, value: int, what: str) -> McpError:
    return McpError(
        INTERNAL_ERROR,
        f"Task capacity exhausted: {value} {what} (the server's {limit}); try again later, or raise it "
        f"with Server({limit}=...)",
        {"retryable": True, "limit": limit, "max": value},
    )
