"""The 2025-11-25 experimental tasks, behind the same helpers as the extension.

The client opts in per call (``params.task`` with a ttl), and only when the server's
``capabilities.tasks.requests.tools.call`` and the tool's ``execution.taskSupport`` allow it. The
creation result nests the task (``{"task": {...}}``); ``tasks/get`` gives a flat task with no
payload; the result of a completed task comes from ``tasks/result``; a failure is judged from the
failed status (``tasks/result`` of a failed task differs between servers); a cancelled task is not
asked for its result. Input requests arrive as real server requests (inside a pending
``tasks/result``, or pushed on their own) and are answered by the client's input handlers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from mcp_tasks._errors import CONNECTION_CLOSED, INTERNAL_ERROR, INVALID_PARAMS, InvalidStatus, McpError
from mcp_tasks._status import Status, TaskState

if TYPE_CHECKING:
    from mcp_tasks._client import Client
    from mcp_tasks._clock import Deadline

__all__ = ["call_tool", "cancel", "list_all", "read"]

DEFAULT_TTL_MS = 60_000
MAX_PAGES = 1000


def invalid(result: object, cause: BaseException | None = None) -> McpError:
    """The error for a legacy task map that does not decode (-32000, kind transport)."""
    detail = f": {cause}" if cause is not None else ""
    return McpError(CONNECTION_CLOSED, f"The server sent an invalid task{detail}", kind="transport", cause=result)


def decode(task: object, task_id: str | None = None) -> Status:
    """A legacy Status from a flat task map (ttl and pollInterval read into ttl_ms, poll_interval_ms)."""
    try:
        status = Status.from_map(task, era="legacy")
    except InvalidStatus as exc:
        raise invalid(task, exc) from exc
    if task_id is not None and status.task_id != task_id:
        raise invalid(task, InvalidStatus("taskId", "is not the task that was asked for"))
    return status


def call_tool(
    client: Client, name: str, arguments: Mapping[str, Any] | None, deadline: Deadline
) -> Status | dict[str, Any]:
    """``tools/call``, task-augmented when the server and the tool allow it."""
    connection = client._connection
    params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
    if connection.legacy_tasks():
        if name not in connection.task_support:
            client._list_tools(deadline, None)  # learn the tools' execution.taskSupport, once
        if connection.task_support.get(name) in ("optional", "required"):
            params["task"] = {"ttl": DEFAULT_TTL_MS}
    result = client._call("tools/call", params, deadline, None)
    if "task" not in params:
        return result
    task = result.get("task")
    if task is None and "content" in result:
        return result  # the server ran it at once after all
    return decode(task)


def read(client: Client, task_id: str, deadline: Deadline, *, drive: bool) -> Status:
    """``tasks/get``, with the payload its status implies filled in: the result of a completed
    task (``tasks/result``), the error of a failed one (from its statusMessage). With `drive`, a
    task that needs input gets a ``tasks/result`` pending, inside which servers send their input
    requests (answered by the input handlers); the task is read again when it returns.
    """
    status = _get(client, task_id, deadline)
    if drive and status.status is TaskState.INPUT_REQUIRED:
        result = _result(client, task_id, deadline)
        if result is None:
            return status
        status = _get(client, task_id, deadline)
        if status.status is TaskState.COMPLETED:
            return attrs.evolve(status, result=result)
    return _complete(client, status, deadline)


def _get(client: Client, task_id: str, deadline: Deadline) -> Status:
    return decode(client._call("tasks/get", {"taskId": task_id}, deadline, None), task_id)


def _complete(client: Client, status: Status, deadline: Deadline) -> Status:
    if status.status is TaskState.COMPLETED:
        result = _result(client, status.task_id, deadline)
        if result is None:
            return attrs.evolve(status, status=TaskState.WORKING)  # not there yet: look again
        return attrs.evolve(status, result=result)
    if status.status is TaskState.FAILED:
        message = status.status_message or "The task failed"
        return attrs.evolve(status, error={"code": INTERNAL_ERROR, "message": message})
    return status


def _result(client: Client, task_id: str, deadline: Deadline) -> dict[str, Any] | None:
    """``tasks/result``; None when the server says the task has no result yet (-32602)."""
    try:
        result = client._call("tasks/result", {"taskId": task_id}, deadline, None)
    except McpError as exc:
        if exc.code == INVALID_PARAMS and "not completed" in exc.message.lower():
            return None
        raise
    return result


def cancel(client: Client, task_id: str, deadline: Deadline) -> None:
    """``tasks/cancel``; a task that was already finished is left as it is (no error)."""
    try:
        client._call("tasks/cancel", {"taskId": task_id}, deadline, None)
    except McpError as exc:
        if exc.code != INVALID_PARAMS:
            raise
        if not _get(client, task_id, deadline).terminal:
            raise


def list_all(client: Client, deadline: Deadline) -> list[Status]:
    """Every task of the session, all pages of ``tasks/list``."""
    found: list[Status] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = client._call("tasks/list", {"cursor": cursor} if cursor else None, deadline, None)
        tasks = page.get("tasks")
        if not isinstance(tasks, list):
            raise invalid(page, InvalidStatus("tasks", "must be a list"))
        found.extend(decode(task) for task in tasks)
        next_cursor = page.get("nextCursor")
        if not isinstance(next_cursor, str) or not next_cursor:
            return found
        cursor = next_cursor
    raise invalid(None, InvalidStatus("nextCursor", f"went on for more than {MAX_PAGES} pages"))
