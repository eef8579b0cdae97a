"""The 2025-11-25 experimental tasks as a `TaskProtocol`: the client opts in per call
(``params.task`` with a ttl) when the server's ``capabilities.tasks.requests.tools.call`` and the
tool's ``execution.taskSupport`` allow it; the creation result nests the task; ``tasks/get`` has
no payload; a completed task's result comes from ``tasks/result``; a failure is judged from the
failed status; input requests arrive as server requests of their own (inside a pending
``tasks/result``, or pushed naming their task).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, InvalidStatus, McpError, ProtocolError
from mcp_tasks._session._agreement import LEGACY_VERSION
from mcp_tasks._session._dispatch import RequestOwner
from mcp_tasks._status import Status, TaskState
from mcp_tasks._tasks._era import TaskProtocol, decode, malformed_task
from mcp_tasks._tasks._progress_keeper import PROGRESS_TOKEN
from mcp_tasks._tasks._side import side_of
from mcp_tasks._tasks._unasked import flat_task, task_in, warn_unasked
from mcp_tasks._tasks._unfetched import refused, unfetched
from mcp_tasks._tasks._unknown import with_unknown_hint
from mcp_tasks._wire import merge_meta

__all__ = ["DEFAULT_TTL_MS", "MAX_PAGES", "Legacy"]

DEFAULT_TTL_MS = 60_000
MAX_PAGES = 1000


class Legacy(TaskProtocol):
    """The 2025-11-25 experimental tasks (see the module docstring)."""

    era = "legacy"

    def supported(self) -> bool:
        """See `TaskProtocol.supported`: 2025-11-25 and ``capabilities.tasks.requests.tools.call``."""
        if self.agreed.version != LEGACY_VERSION:
            return False
        tasks = self.agreed.capabilities.get("tasks")
        requests = tasks.get("requests") if isinstance(tasks, dict) else None
        tools = requests.get("tools") if isinstance(requests, dict) else None
        return isinstance(tools, dict) and isinstance(tools.get("call"), dict)

    def may_create(self, tool: str, deadline: Deadline) -> bool:
        """See `TaskProtocol.may_create`: the server's capability and the tool's taskSupport."""
        if not self.supported():
            return False
        side = side_of(self.channel)
        if tool not in side.task_support:
            side.learn_tools(self.channel.list_tools(deadline, None))  # once per tool
        return side.task_support.get(tool) in ("optional", "required")

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
        """See `TaskProtocol.create`: task-augmented when the server and the tool allow it (the
        token rides on a task-augmented call: its task may report progress for its whole life).
        """
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        augmented = self.may_create(name, deadline)
        if augmented:
            params["task"] = {"ttl": DEFAULT_TTL_MS}
        if token is not None and (augmented or wanted):
            meta = merge_meta(meta, {PROGRESS_TOKEN: token})
        # A task is cancelled with tasks/cancel only: never notifications/cancelled for its call.
        try:
            result = self.channel.call_tool(params, deadline, meta=meta, cancellable=not augmented)
        except ProtocolError as exc:
            flat = None if augmented else flat_task(exc)
            if flat is None:
                raise
            result = flat
        if not augmented:
            unasked = task_in(result)
            if unasked is None:
                return result
            warn_unasked(self.channel, self.agreed, name)  # followed, never handed back as the result
            return decode(unasked, self.era, session_id=self.channel.transport.session_id)
        task = result.get("task")
        if task is None and "content" in result:
            return result  # the server ran it at once after all
        return decode(task, self.era, session_id=self.channel.transport.session_id)

    def read(
        self, task_id: str, deadline: Deadline, meta: Mapping[str, Any] | None, *, result: dict[str, Any] | None = None
    ) -> Status:
        """See `TaskProtocol.read`: ``tasks/get``, with the result of a completed task from
        ``tasks/result`` (unless `result` is given) and the error of a failed one from its
        statusMessage.
        """
        status = self._get(task_id, deadline, meta)
        if result is not None and status.status is TaskState.COMPLETED:
            return attrs.evolve(status, result=result)
        return self._complete(status, deadline, meta)

    def drive(
        self, task_id: str, deadline: Deadline, meta: Mapping[str, Any] | None, owner: RequestOwner
    ) -> dict[str, Any] | None:
        """See `TaskProtocol.drive`."""
        return self._result(task_id, deadline, meta, owner)

    def update(
        self, task_id: str, responses: Mapping[str, Any], deadline: Deadline, meta: Mapping[str, Any] | None
    ) -> None:
        """See `TaskProtocol.update`: 2025-11-25 has no tasks/update (input is answered in place)."""
        raise McpError(
            METHOD_NOT_FOUND,
            f"tasks/update does not exist in {self.agreed.version}: the server's input requests are "
            "answered as they come (by the input handlers, or a wait's input strategy)",
            kind="protocol",
        )

    def cancel(self, task_id: str, deadline: Deadline, meta: Mapping[str, Any] | None) -> None:
        """See `TaskProtocol.cancel`; a task that was already finished is left as it is."""
        try:
            self.channel.send("tasks/cancel", {"taskId": task_id}, deadline, meta=meta)
        except McpError as exc:
            if exc.code != INVALID_PARAMS:
                raise
            if not self._get(task_id, deadline, meta).terminal:
                raise

    def list(self, deadline: Deadline) -> list[Status]:
        """See `TaskProtocol.list`: every page of ``tasks/list``."""
        found: list[Status] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = self.channel.send("tasks/list", {"cursor": cursor} if cursor else None, deadline)
            tasks = page.get("tasks")
            if not isinstance(tasks, list):
                raise malformed_task(page, InvalidStatus("tasks", "must be a list"))
            session_id = self.channel.transport.session_id
            found.extend(decode(task, self.era, session_id=session_id) for task in tasks)
            next_cursor = page.get("nextCursor")
            if not isinstance(next_cursor, str) or not next_cursor:
                return found
            cursor = next_cursor
        raise malformed_task(None, InvalidStatus("nextCursor", f"went on for more than {MAX_PAGES} pages"))

    # -- internals ----------------------------------------------------------------------------

    def _get(self, task_id: str, deadline: Deadline, meta: Mapping[str, Any] | None) -> Status:
        try:
            result = self.channel.send("tasks/get", {"taskId": task_id}, deadline, meta=meta)
        except McpError as exc:
            hinted = with_unknown_hint(exc)
            if exc.code != INVALID_PARAMS or self.channel.transport.session_id is None:
                if hinted is exc:
                    raise
                raise hinted from exc
            # Say why a task from elsewhere may be unknown here, and how to reach it (if it can be).
            if self.channel.session_lost:
                advice = (
                    "the server ended this connection's earlier session (it restarted, or expired it), and a "
                    "2025-era server may keep a task for the HTTP session that created it only: a task of that "
                    "session is out of reach"
                )
            else:
                advice = (
                    "a 2025-era server may keep a task for the HTTP session that created it only: join that "
                    "session with Client.http(url, session_id=status.session_id)"
                )
            raise McpError(
                exc.code,
                f"{hinted.message} ({advice})",
                exc.data,
                exc.kind,
                exc.cause,
            ) from exc
        return decode(result, self.era, task_id, self.channel.transport.session_id)

    def _complete(self, status: Status, deadline: Deadline, meta: Mapping[str, Any] | None) -> Status:
        if status.status is TaskState.COMPLETED:
            try:
                result = self._result(status.task_id, deadline, meta, None)
            except McpError as exc:
                if not refused(exc):
                    raise
                return unfetched(status, exc)  # completed all the same: not lost, nor a failed read
            if result is None:
                return attrs.evolve(status, status=TaskState.WORKING)  # not there yet: look again
            return attrs.evolve(status, result=result)
        if status.status is TaskState.FAILED:
            message = status.status_message or "The task failed"
            return attrs.evolve(status, error={"code": INTERNAL_ERROR, "message": message})
        return status

    def _result(
        self, task_id: str, deadline: Deadline, meta: Mapping[str, Any] | None, drive: RequestOwner | None
    ) -> dict[str, Any] | None:
        """``tasks/result``; None when the server says the task has no result yet (-32602)."""
        try:
            result = self.channel.send("tasks/result", {"taskId": task_id}, deadline, meta=meta, on_request=drive)
        except McpError as exc:
            if exc.code == INVALID_PARAMS and "not completed" in exc.message.lower():
                return None
            raise
        if not isinstance(result, dict):
            raise malformed_task(result, InvalidStatus("result", "must be an object"))
        return result
