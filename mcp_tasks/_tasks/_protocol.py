"""One protocol object per era, chosen once from what the channel agreed: create a task, read it,
answer its input, cancel it, list tasks.

- `Modern` (2026-07-28, the Tasks extension): every request declares the extension in ``_meta``;
  a ``tools/call`` may answer ``resultType: "task"``; ``tasks/get`` carries the payload.
- `Legacy` (2025-11-25 experimental tasks): the client opts in per call (``params.task`` with a
  ttl) when the server's ``capabilities.tasks.requests.tools.call`` and the tool's
  ``execution.taskSupport`` allow it; the creation result nests the task; ``tasks/get`` has no
  payload; a completed task's result comes from ``tasks/result``; a failure is judged from the
  failed status; input requests arrive as server requests of their own (inside a pending
  ``tasks/result``, or pushed naming their task).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    InvalidStatus,
    McpError,
    ProtocolError,
)
from mcp_tasks._session._agreement import LEGACY_VERSION, Agreement
from mcp_tasks._session._channel import Channel, Envelope
from mcp_tasks._session._dispatch import RequestOwner
from mcp_tasks._status import Status, TaskState
from mcp_tasks._tasks._progress_keeper import PROGRESS_TOKEN
from mcp_tasks._tasks._side import side_of
from mcp_tasks._tasks._unasked import flat_task, task_in, warn_unasked
from mcp_tasks._tasks._unfetched import refused, unfetched
from mcp_tasks._tasks._unknown import with_unknown_hint
from mcp_tasks._wire import META_CLIENT_CAPABILITIES, TASKS_EXTENSION, malformed, merge_meta

__all__ = ["Legacy", "Modern", "TaskProtocol", "capabilities", "invalid_task", "protocol_of"]

DEFAULT_TTL_MS = 60_000
MAX_PAGES = 1000


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


def invalid_task(result: object, cause: BaseException | None = None) -> McpError:
    """The error for a task from the server that does not decode: the server broke the protocol."""
    detail = f": {cause}" if cause is not None else ""
    return malformed(f"The server sent an invalid task{detail}", result)


def decode(task: object, era: str, task_id: str | None = None, session_id: str | None = None) -> Status:
    """A Status from a task map of `era` (the era is the connection's, whatever the map says),
    or the invalid-task error; with `task_id`, a map for another task is an error too.
    """
    if isinstance(task, Mapping) and task.get("resultType") == "input_required":
        raise invalid_task(task)
    try:
        status = Status.from_map(task, era="legacy" if era == "legacy" else "modern", session_id=session_id)
    except InvalidStatus as exc:
        raise invalid_task(task, exc) from exc
    if task_id is not None and status.task_id != task_id:
        raise invalid_task(task, InvalidStatus("taskId", "is not the task that was asked for"))
    return status


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
        declared = {META_CLIENT_CAPABILITIES: capabilities(self.channel.capabilities)}
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
        return result

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
            raise invalid_task(result)

    def cancel(self, task_id: str, deadline: Deadline, meta: Mapping[str, Any] | None) -> None:
        """See `TaskProtocol.cancel` (cancelling a finished task changes nothing)."""
        result = _about_task(self.channel, "tasks/cancel", {"taskId": task_id}, deadline, meta)
        if result.get("resultType") == "input_required":
            raise invalid_task(result)


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
                raise invalid_task(page, InvalidStatus("tasks", "must be a list"))
            session_id = self.channel.transport.session_id
            found.extend(decode(task, self.era, session_id=session_id) for task in tasks)
            next_cursor = page.get("nextCursor")
            if not isinstance(next_cursor, str) or not next_cursor:
                return found
            cursor = next_cursor
        raise invalid_task(None, InvalidStatus("nextCursor", f"went on for more than {MAX_PAGES} pages"))

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
            raise invalid_task(result, InvalidStatus("result", "must be an object"))
        return result


def protocol_of(channel: Channel, deadline: Deadline, *, discovered: bool = False) -> TaskProtocol:
    """The task protocol of what `channel` agreed (negotiated within `deadline` if need be).
    `discovered`: a modern connection pinned to its version asks ``server/discover`` first.
    """
    agreed = channel.agree(deadline)
    if discovered and not agreed.legacy and agreed.discovered is None:
        agreed = channel.discover(deadline)
    return Legacy(channel, agreed) if agreed.legacy else Modern(channel, agreed)
