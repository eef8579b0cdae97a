"""What an ended MCP task makes of its Celery result, shared by the run that reads the end (`_run`)
and the worker process's waker that hears it (`_waker`), so both store the same thing: the
CallToolResult (SUCCESS) or a `TaskError` (FAILURE). A cancelled task is a check's to store
(REVOKED, or an expiry's FAILURE: see `_waker`).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import states

from mcp_tasks._errors import McpError
from mcp_tasks._redact import short_id
from mcp_tasks._status import Status
from mcp_tasks._tasks import outcome
from mcp_tasks._tasks._wait import checked
from mcp_tasks.celery._error import TaskError, failure_of

__all__ = ["REVOKED_REASON", "result_ready", "store_ended", "verdict"]

log = logging.getLogger("mcp_tasks")

REVOKED_REASON = "cancelled on the MCP server"


def verdict(status: Status, raise_on_error: bool, tool: str) -> dict[str, Any] | TaskError:
    """The result of a task that ended completed or failed: its CallToolResult, or the
    `TaskError` to raise (a failed task, an ``isError`` result under `raise_on_error`).
    """
    try:
        return checked(outcome(status), raise_on_error, status, tool)
    except (McpError, ValueError, TypeError) as exc:
        return failure_of(exc, status.task_id)


def store_ended(backend: Any, celery_id: str, status: Status, raise_on_error: bool, tool: str) -> bool:
    """Store the result of `status`, a task that completed or failed, under `celery_id`, as the
    run that read it would have; False when the backend did not take it (a check stores it instead).
    """
    try:
        found = verdict(status, raise_on_error, tool)
        if isinstance(found, TaskError):
            backend.mark_as_failure(celery_id, found)
        else:
            backend.mark_as_done(celery_id, found)
    except Exception as exc:  # any backend's error (kombu's, redis', …): a check stores it
        log.warning("task %s: could not store its result (a check stores it): %s", short_id(status.task_id), exc)
        return False
    return True


def result_ready(backend: Any, celery_id: str) -> bool:
    """Whether the result of `celery_id` is stored already (False when the backend cannot say)."""
    try:
        meta = backend.get_task_meta(celery_id, cache=False)
    except Exception:  # any backend's error: not known to be ready, the run goes on
        return False
    return meta.get("status") in states.READY_STATES
