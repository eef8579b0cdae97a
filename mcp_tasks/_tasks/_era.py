"""What every era's task protocol shares: the base `TaskProtocol` (its methods and their
contracts), a Status decoded from a task map, the error for one that does not decode, and the
Tasks extension declared in a client's capabilities. The eras are `_modern` and `_legacy`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import METHOD_NOT_FOUND, InvalidStatus, McpError
from mcp_tasks._session._agreement import Agreement
from mcp_tasks._session._channel import Channel
from mcp_tasks._session._dispatch import RequestOwner
from mcp_tasks._status import Status
from mcp_tasks._wire import TASKS_EXTENSION, malformed

__all__ = ["TaskProtocol", "decode", "malformed_task", "tasks_declared"]


def tasks_declared(caps: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`caps` (client capabilities) with the Tasks extension declared; other entries stay
    (the work of `mcp_tasks.capabilities`).
    """
    if caps is not None and not isinstance(caps, Mapping):
        raise TypeError(f"caps must be a dict or None, got {type(caps).__name__}")
    declared = dict(caps or {})
    extensions = declared.get("extensions")
    extensions = dict(extensions) if isinstance(extensions, Mapping) else {}
    extensions[TASKS_EXTENSION] = {}
    declared["extensions"] = extensions
    return declared


def malformed_task(result: object, cause: BaseException | None = None) -> McpError:
    """The error for a task from the server that does not decode (the work of `invalid_task`)."""
    detail = f": {cause}" if cause is not None else ""
    return malformed(f"The server sent an invalid task{detail}", result)


def decode(task: object, era: str, task_id: str | None = None, session_id: str | None = None) -> Status:
    """A Status from a task map of `era` (the era is the connection's, whatever the map says),
    or the invalid-task error; with `task_id`, a map for another task is an error too.
    """
    if isinstance(task, Mapping) and task.get("resultType") == "input_required":
        raise malformed_task(task)
    try:
        status = Status.from_map(task, era="legacy" if era == "legacy" else "modern", session_id=session_id)
    except InvalidStatus as exc:
        raise malformed_task(task, exc) from exc
    if task_id is not None and status.task_id != task_id:
        raise malformed_task(task, InvalidStatus("taskId", "is not the task that was asked for"))
    return status


class TaskProtocol:
    """The task methods of one era, over one channel."""

    era = "modern"

    def __init__(self, channel: Channel, agreed: Agreement) -> None:
        self.channel = channel
        self.agreed = agreed

    def meta(self, meta: Mapping[str, Any] | None = None) -> Mapping[str, Any] | None:
        """The ``_meta`` for this era's task requests, under the caller's `meta`: merge it once
        and pass it to each request of a call or a wait.
        """
        return meta

    def supported(self) -> bool:
        """Whether the server advertises tasks on this connection."""
        raise NotImplementedError

    def may_create(self, tool: str, deadline: Deadline) -> bool:
        """Whether ``tools/call`` of `tool` may return a task on this connection."""
        raise NotImplementedError

    def create(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        deadline: Deadline,
        meta: Mapping[str, Any] | None,
        *,
        token: str | int | None = None,
        wanted: bool = False,
    ) -> Status | dict[str, Any]:
        """Call a tool: its Status when the server made it a task, else its CallToolResult.
        `token`: the ``progressToken`` for a task-augmented call, and for any call when the
        caller `wanted` progress.
        """
        raise NotImplementedError

    def read(
        self, task_id: str, deadline: Deadline, meta: Mapping[str, Any] | None, *, result: dict[str, Any] | None = None
    ) -> Status:
        """The task's status, with the payload its state implies (`result`: one `drive` got)."""
        raise NotImplementedError

    def drive(
        self, task_id: str, deadline: Deadline, meta: Mapping[str, Any] | None, owner: RequestOwner
    ) -> dict[str, Any] | None:
        """Move a task that needs input along, and return its result if that ended it. Only the
        2025 era needs this: a pending ``tasks/result``, inside which the server's input requests
        go to `owner`; it lasts while a person answers, so it takes the wait's whole deadline.
        """
        return None

    def update(
        self, task_id: str, responses: Mapping[str, Any], deadline: Deadline, meta: Mapping[str, Any] | None
    ) -> None:
        """Answer the task's input requests."""
        raise NotImplementedError

    def cancel(self, task_id: str, deadline: Deadline, meta: Mapping[str, Any] | None) -> None:
        """Ask the server to cancel the task."""
        raise NotImplementedError

    def list(self, deadline: Deadline) -> list[Status]:
        """Every task of the session."""
        raise McpError(
            METHOD_NOT_FOUND,
            "tasks/list does not exist in 2026-07-28 (the Tasks extension removed it); "
            "only a 2025-11-25 session has it",
            kind="protocol",
        )
