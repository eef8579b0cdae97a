"""The Tasks extension's client helpers: negotiation, calling a tool that may become a task, and
the task methods. Each takes the client first and declares the extension on the requests it sends
(through ``meta``), leaving the client itself unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp_tasks import _legacy as legacy
from mcp_tasks._client import UNSET
from mcp_tasks._errors import (
    METHOD_NOT_FOUND,
    InputRequired,
    InvalidStatus,
    McpError,
    TaskCancelled,
    TaskFailed,
    TransportError,
)
from mcp_tasks._status import Status, TaskState
from mcp_tasks._wire import META_CLIENT_CAPABILITIES, TASKS_EXTENSION, merge_meta

if TYPE_CHECKING:
    from mcp_tasks._client import Client
    from mcp_tasks._clock import Deadline

__all__ = [
    "call_tool",
    "cancel_task",
    "capabilities",
    "declaration",
    "get_task",
    "list_tasks",
    "outcome",
    "send_get",
    "send_update",
    "server_supports",
    "task_id_of",
    "update_task",
]


def capabilities(caps: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`caps` (client capabilities) with the Tasks extension declared; other entries stay.

    Pass the result as a client's ``client_capabilities`` to declare Tasks on every request.
    """
    if caps is not None and not isinstance(caps, Mapping):
        raise TypeError(f"caps must be a dict or None, got {type(caps).__name__}")
    declared = dict(caps or {})
    extensions = declared.get("extensions")
    extensions = dict(extensions) if isinstance(extensions, Mapping) else {}
    extensions[TASKS_EXTENSION] = {}
    declared["extensions"] = extensions
    return declared


def declaration(client: Client, meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``meta`` that declares the extension on one request: the client's capabilities plus
    Tasks, under the caller's own `meta` (which wins).
    """
    if meta is not None and not isinstance(meta, Mapping):
        raise TypeError(f"meta must be a dict or None, got {type(meta).__name__}")
    return merge_meta({META_CLIENT_CAPABILITIES: capabilities(client.client_capabilities)}, meta)


def server_supports(client: Client) -> bool:
    """Whether the server advertises the Tasks extension (from ``server/discover``, cached)."""
    extensions = client.server_capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def task_id_of(task: object) -> str:
    """The task id of a task reference: a non-empty id string, or a `Status`."""
    if isinstance(task, Status):
        return task.task_id
    if isinstance(task, str):
        if not task:
            raise ValueError("a task id must be a non-empty string")
        return task
    raise TypeError(f"expected a task id or a Status, got {type(task).__name__}")


def invalid_task(result: object, cause: BaseException | None = None) -> McpError:
    """The error for a task map from the server that does not decode: a `TransportError` (-32000)."""
    detail = f": {cause}" if cause is not None else ""
    return TransportError(f"The server sent an invalid task{detail}", cause=result)


def decode_task(result: dict[str, Any], task_id: str | None = None) -> Status:
    """A Status from a result map, or the invalid-task error."""
    if result.get("resultType") == "input_required":
        raise invalid_task(result)
    try:
        status = Status.from_map(result)
    except InvalidStatus as exc:
        raise invalid_task(result, exc) from exc
    if task_id is not None and status.task_id != task_id:
        raise invalid_task(result, InvalidStatus("taskId", "is not the task that was asked for"))
    return status


def call_tool(
    client: Client,
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    timeout: float | None = UNSET,
    meta: Mapping[str, Any] | None = None,
) -> Status | dict[str, Any]:
    """Call a tool with the extension declared: a `Status` when the server made it a task, the
    CallToolResult dict when the tool ran synchronously. On a 2025-11-25 session the call is
    task-augmented (``params.task``) when the server and the tool's ``execution.taskSupport``
    allow it, and the Status has ``era == "legacy"``.
    """
    if client._connection_for(timeout).legacy:
        return legacy.call_tool(client, name, arguments, client._deadline(timeout))
    result = client.call_tool(name, arguments, timeout=timeout, meta=declaration(client, meta))
    if result.get("resultType") == "task":
        return decode_task(result)
    return result


def get_task(
    client: Client,
    task: str | Status,
    *,
    timeout: float | None = UNSET,
    meta: Mapping[str, Any] | None = None,
) -> Status:
    """Read a task's status with ``tasks/get`` (an unknown task is -32602 from the server)."""
    if client._connection_for(timeout).legacy:
        return legacy.read(client, task_id_of(task), client._deadline(timeout), drive=False)
    return send_get(client, task_id_of(task), client._deadline(timeout), declaration(client, meta))


def send_get(client: Client, task_id: str, deadline: Deadline, declared: Mapping[str, Any]) -> Status:
    """``tasks/get`` with a declaration made beforehand (a wait builds it once, not per poll). On a
    legacy session, a task that needs input is driven with ``tasks/result`` (see `legacy.read`).
    """
    if client._connection.legacy:
        return legacy.read(client, task_id, deadline, drive=True)
    result = client._call("tasks/get", {"taskId": task_id}, deadline, declared, answer_input=False)
    return decode_task(result, task_id)


def update_task(
    client: Client,
    task: str | Status,
    responses: Mapping[str, Any],
    *,
    timeout: float | None = UNSET,
    meta: Mapping[str, Any] | None = None,
) -> None:
    """Answer a task's input requests with ``tasks/update`` (responses keyed as the requests are;
    the server ignores keys it is not waiting for).
    """
    task_id = task_id_of(task)
    if not isinstance(responses, Mapping):
        raise TypeError(f"responses must be a dict, got {type(responses).__name__}")
    send_update(client, task_id, responses, client._deadline(timeout), declaration(client, meta))


def send_update(
    client: Client, task_id: str, responses: Mapping[str, Any], deadline: Deadline, declared: Mapping[str, Any]
) -> None:
    """``tasks/update`` with a declaration made beforehand."""
    params = {"taskId": task_id, "inputResponses": dict(responses)}
    result = client._call("tasks/update", params, deadline, declared, answer_input=False)
    if result.get("resultType") == "input_required":
        raise invalid_task(result)


def cancel_task(
    client: Client,
    task: str | Status,
    *,
    timeout: float | None = UNSET,
    meta: Mapping[str, Any] | None = None,
) -> None:
    """Ask the server to cancel a task (cooperative; cancelling a finished task changes nothing)."""
    task_id = task_id_of(task)
    if client._connection_for(timeout).legacy:
        legacy.cancel(client, task_id, client._deadline(timeout))
        return
    result = client.request(
        "tasks/cancel", {"taskId": task_id}, timeout=timeout, meta=declaration(client, meta), answer_input=False
    )
    if result.get("resultType") == "input_required":
        raise invalid_task(result)


def list_tasks(client: Client, *, timeout: float | None = UNSET) -> list[Status]:
    """The session's tasks (all pages of ``tasks/list``), as legacy `Status` values.

    Only a 2025-11-25 session has ``tasks/list``; on a 2026-07-28 connection this raises a clear
    `McpError` (the extension removed the method).
    """
    if not client._connection_for(timeout).legacy:
        raise McpError(
            METHOD_NOT_FOUND,
            "tasks/list does not exist in 2026-07-28 (the Tasks extension removed it); "
            "only a 2025-11-25 session has it",
            kind="protocol",
        )
    return legacy.list_all(client, client._deadline(timeout))


def outcome(status: Status) -> dict[str, Any]:
    """The CallToolResult of a completed task.

    Raises `TaskFailed` for a failed task, `TaskCancelled` for a cancelled one and `InputRequired`
    for one waiting for input; `ValueError` for a status that is not final or lacks its payload
    (read it again with `get_task`).
    """
    if not isinstance(status, Status):
        raise TypeError(f"expected a Status, got {type(status).__name__}")
    if status.status is TaskState.COMPLETED:
        if isinstance(status.result, dict):
            return status.result
        raise ValueError("the status says completed but carries no result: read it again with get_task")
    if status.status is TaskState.FAILED:
        if isinstance(status.error, dict):
            raise TaskFailed(status)
        raise ValueError("the status says failed but carries no error: read it again with get_task")
    if status.status is TaskState.CANCELLED:
        raise TaskCancelled(status)
    if status.status is TaskState.INPUT_REQUIRED:
        raise InputRequired(status)
    raise ValueError(f"the task is not finished (status {status.wire_status!r})")
