"""The Tasks extension (2026-07-28) as a `TaskProtocol`: every request declares the extension in
``_meta``; a ``tools/call`` may answer ``resultType: "task"``; ``tasks/get`` carries the payload.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import McpError
from mcp_tasks._session._channel import Channel, Envelope
from mcp_tasks._status import Status
from mcp_tasks._tasks._era import TaskProtocol, decode, malformed_task, tasks_declared
from mcp_tasks._tasks._progress_keeper import PROGRESS_TOKEN
from mcp_tasks._tasks._side import side_of
from mcp_tasks._tasks._unasked import nested_task, warn_nested
from mcp_tasks._tasks._unknown import with_unknown_hint
from mcp_tasks._wire import META_CLIENT_CAPABILITIES, TASKS_EXTENSION, merge_meta

__all__ = ["Modern"]


def _about_task(
    channel: Channel, method: str, params: dict[str, Any], deadline: Deadline, meta: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A 2026 request about one task; a server's bare "not found" comes with what it means."""
    try:
        return channel.send(method, params, deadline, meta=meta, answer_input=False)
    except McpError as exc:
        hinted = with_unknown_hint(exc)
        if hinted is exc:
            raise
        raise hinted from exc


class Modern(TaskProtocol):
    """The Tasks extension (2026-07-28)."""

    era = "modern"

    def meta(self, meta: Mapping[str, Any] | None = None) -> Envelope:
        """See `TaskProtocol.meta`: the envelope with the extension declared, under `meta`."""
        if meta is None:
            side = side_of(self.channel)
            if side.declared is None:  # the same for every call on this channel: merged once
                side.declared = self._declare(None)
            return side.declared
        return self._declare(meta)

    def _declare(self, meta: Mapping[str, Any] | None) -> Envelope:
        declared = {META_CLIENT_CAPABILITIES: tasks_declared(self.channel.capabilities)}
        return self.channel.envelope(merge_meta(declared, meta))

    def supported(self) -> bool:
        """See `TaskProtocol.supported`: the extension is in the server's capabilities."""
        extensions = self.agreed.capabilities.get("extensions")
        return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)

    def may_create(self, tool: str, deadline: Deadline) -> bool:
        """See `TaskProtocol.may_create`: the server decides per call when it supports tasks."""
        return self.supported()

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
        """See `TaskProtocol.create`: every call declares tasks, so the token rides on each."""
        params = {"name": name, "arguments": dict(arguments or {})}
        if token is not None:
            meta = merge_meta(meta, {PROGRESS_TOKEN: token})
        result = self.channel.call_tool(params, deadline, meta=self.meta(meta))
        if result.get("resultType") == "task":
            return decode(result, self.era)
        nested = nested_task(result)
        if nested is None:
            return result
        warn_nested(self.channel, self.agreed, name)  # followed, never handed back as the result
        return decode(nested, self.era)

    def read(
        self, task_id: str, deadline: Deadline, meta: Mapping[str, Any] | None, *, result: dict[str, Any] | None = None
    ) -> Status:
        """See `TaskProtocol.read`: ``tasks/get`` (input comes in its result, so nothing drives)."""
        result = _about_task(self.channel, "tasks/get", {"taskId": task_id}, deadline, meta)
        return decode(result, self.era, task_id)

    def update(
        self, task_id: str, responses: Mapping[str, Any], deadline: Deadline, meta: Mapping[str, Any] | None
    ) -> None:
        """See `TaskProtocol.update`."""
        params = {"taskId": task_id, "inputResponses": dict(responses)}
        result = _about_task(self.channel, "tasks/update", params, deadline, meta)
        if result.get("resultType") == "input_required":
            raise malformed_task(result)

    def cancel(self, task_id: str, deadline: Deadline, meta: Mapping[str, Any] | None) -> None:
        """See `TaskProtocol.cancel` (cancelling a finished task changes nothing)."""
        result = _about_task(self.channel, "tasks/cancel", {"taskId": task_id}, deadline, meta)
        if result.get("resultType") == "input_required":
            raise malformed_task(result)
