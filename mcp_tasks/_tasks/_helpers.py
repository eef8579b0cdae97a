"""The public task helpers: each takes the client first, makes one deadline from its timeout
(negotiation included), and asks the era's protocol object to do the work.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import InputRequired, McpError, ProtocolError, TaskCancelled, TaskFailed, TransportError
from mcp_tasks._options import UNSET, check_meta, resolve_timeout
from mcp_tasks._status import Status, TaskState
from mcp_tasks._store import Intent
from mcp_tasks._tasks._asked import remember_tool
from mcp_tasks._tasks._failed import FailedWait
from mcp_tasks._tasks._intent import Started, abandon, begin, joined, kept_status
from mcp_tasks._tasks._progress_keeper import PROGRESS_TOKEN, Follow, OnProgress, keeper_of
from mcp_tasks._tasks._protocol import TaskProtocol, protocol_of
from mcp_tasks._tasks._records import record_created, record_status, store_of
from mcp_tasks._tasks._watch import watch_of

if TYPE_CHECKING:
    from mcp_tasks._client import Client

__all__ = [
    "call_followed",
    "call_tool",
    "cancel_task",
    "follow_call",
    "get_task",
    "list_tasks",
    "may_create_task",
    "outcome",
    "outcome_of",
    "server_supports",
    "task_id_of",
    "update_task",
]


def task_id_of(task: object) -> str:
    """The task id of a task reference: a non-empty id string, or a `Status`."""
    if isinstance(task, Status):
        return task.task_id
    if isinstance(task, str):
        if not task:
            raise ValueError("a task id must be a non-empty string")
        return task
    raise TypeError(f"expected a task id or a Status, got {type(task).__name__}")


def _start(client: Client, timeout: object, *, discovered: bool = False) -> tuple[TaskProtocol, Deadline]:
    """The call's one deadline, and the protocol of the client's era (negotiated under it)."""
    deadline = Deadline(resolve_timeout(timeout, client.timeout))
    return protocol_of(client.channel, deadline, discovered=discovered), deadline


def server_supports(client: Client) -> bool:
    """Whether the server advertises tasks: the Tasks extension (2026-07-28), or on a 2025-11-25
    session ``capabilities.tasks.requests.tools.call``. Asks the server once (within the client's
    timeout), then answers from what it said.
    """
    protocol, _ = _start(client, UNSET, discovered=True)
    return protocol.supported()


def may_create_task(client: Client, tool: str, *, timeout: float | None = UNSET) -> bool:
    """Whether `call_tool` may return a task for `tool` on this connection: the server supports
    tasks and, on a 2025-11-25 session, the tool's ``execution.taskSupport`` allows it (learnt
    from ``tools/list`` once).
    """
    if not isinstance(tool, str) or not tool:
        raise ValueError(f"tool name must be a non-empty string, got {tool!r}")
    protocol, deadline = _start(client, timeout, discovered=True)
    return protocol.may_create(tool, deadline)


def call_tool(
    client: Client,
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    timeout: float | None = UNSET,
    meta: Mapping[str, Any] | None = None,
    key: str | None = None,
    follow: bool = True,
) -> Status | dict[str, Any]:
    """Call a tool with tasks declared: a `Status` when the server made it a task, the
    CallToolResult dict when the tool ran synchronously. On a 2025-11-25 session the call is
    task-augmented (``params.task``) when the server and the tool's ``execution.taskSupport``
    allow it, and the Status has ``era == "legacy"``. `timeout` bounds it all, negotiation included.

    A ``progressToken`` rides in the ``_meta`` of a call that may make a task (yours, when `meta`
    has one): the progress its task reports is kept with the client, for the waits' ``on_progress``.

    On a store-backed client the call is recorded before it is sent (a store that cannot take it
    by the deadline raises `StoreError`, and nothing is sent), and its task id (or its result)
    joins the record when the answer comes. `key`: the caller's idempotency key (one per call, on
    one store and endpoint): a key already recorded returns that call's task (its last status
    kept) or its kept result, never calling the tool again; `OutcomeUnknown` when that call's
    task id was never recorded; `ValueError` when the key was used for another tool or arguments.

    `follow`: on a 2026-07-28 server with ``subscriptions/listen``, the client's shared stream
    follows the task from now on, so that a wait begun later (`wait_all` once a batch is made, say)
    already knows what happened meanwhile, with no read for a task that ended; it is let go once a
    wait takes it, or after a while when none does. False: not followed until a wait wants it (a
    task no wait of this client will want, or only a polling one).
    """
    if not isinstance(follow, bool):
        raise TypeError(f"follow must be True or False, got {type(follow).__name__}")
    with follow_call(client, meta, None) as progress:
        return call_followed(client, name, arguments, progress, timeout=timeout, meta=meta, key=key, keep=follow)


def follow_call(client: Client, meta: object, on_progress: OnProgress | None) -> Follow:
    """A call's progress, followed by `on_progress` (if any) under the call's token: the one in
    `meta` when it has one, else a new one. Close it when the call (and its wait) is over.
    """
    check_meta(meta)
    token = meta.get(PROGRESS_TOKEN) if isinstance(meta, Mapping) else None
    if isinstance(token, bool) or not isinstance(token, (str, int)) or token == "":
        token = None
    return keeper_of(client.channel).follow(on_progress, token=token)


def call_followed(
    client: Client,
    name: str,
    arguments: Mapping[str, Any] | None,
    follow: Follow,
    *,
    timeout: float | None = UNSET,
    meta: Mapping[str, Any] | None = None,
    key: str | None = None,
    wanted: bool = False,
    keep: bool = True,
) -> Status | dict[str, Any]:
    """`call_tool`, its progress under `follow`'s token (sent on any call when `wanted`, on one
    that may make a task otherwise); `follow` bound to the task it makes. `keep`: the client's
    shared watch follows the task from its creation until a wait takes it (_watch.py); False for
    a call whose wait is known to poll.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"tool name must be a non-empty string, got {name!r}")
    if arguments is not None and not isinstance(arguments, Mapping):
        raise TypeError(f"arguments must be a dict or None, got {type(arguments).__name__}")
    check_meta(meta)
    protocol, deadline = _start(client, timeout)
    begun = begin(client, name, arguments, key, deadline)  # before anything is sent
    if begun is not None and not isinstance(begun, Started):
        return _again(client, protocol, begun, deadline, meta, arguments)
    try:
        called = protocol.create(name, arguments, deadline, meta, token=follow.token, wanted=wanted)
    except (TransportError, ProtocolError):
        raise  # it may have reached the server: its intent stays, started with no id
    except McpError:
        if begun is not None:
            abandon(begun, deadline)  # the server refused it: nothing was made
        raise
    if isinstance(called, Status):
        follow.bind(called.task_id)  # its progress is kept for later waits
        if keep and called.era == "modern" and not called.terminal:
            watch_of(client.channel).keep([called.task_id])  # followed from now on (see _watch.py)
        remember_tool(client, called.task_id, name, arguments)  # its questions name it
    if begun is not None:
        joined(client, begun, deadline, called, name, arguments)
    elif isinstance(called, Status):
        record_created(client, called, name, store_of(client), deadline, arguments)
    return called


def _again(
    client: Client,
    protocol: TaskProtocol,
    intent: Intent,
    deadline: Deadline,
    meta: Mapping[str, Any] | None,
    arguments: Mapping[str, Any] | None,
) -> Status | dict[str, Any]:
    """The call `intent` recorded under the caller's key, followed instead of made again: its
    kept result, or its task's status (the one the store keeps, else read from the server).
    `arguments` are this call's, the intent's too (its digest matched).
    """
    if intent.result is not None:
        return dict(intent.result)
    store = store_of(client)
    assert store is not None
    status = kept_status(store, intent, deadline)  # OutcomeUnknown when its id was never recorded
    assert intent.task_id is not None
    if status is None:
        status = protocol.read(intent.task_id, deadline, protocol.meta(meta))
        record_status(status, store, deadline)
    remember_tool(client, intent.task_id, intent.tool, arguments)
    return status


def get_task(
    client: Client,
    task: str | Status,
    *,
    timeout: float | None = UNSET,
    meta: Mapping[str, Any] | None = None,
) -> Status:
    """Read a task's status with ``tasks/get`` (an unknown task is -32602 from the server)."""
    task_id = task_id_of(task)
    check_meta(meta)
    protocol, deadline = _start(client, timeout)
    status = protocol.read(task_id, deadline, protocol.meta(meta))
    record_status(status, store_of(client), deadline)
    return status


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
    check_meta(meta)
    protocol, deadline = _start(client, timeout)
    protocol.update(task_id, responses, deadline, protocol.meta(meta))


def cancel_task(
    client: Client,
    task: str | Status,
    *,
    timeout: float | None = UNSET,
    meta: Mapping[str, Any] | None = None,
) -> None:
    """Ask the server to cancel a task (cooperative; cancelling a finished task changes nothing)."""
    task_id = task_id_of(task)
    check_meta(meta)
    protocol, deadline = _start(client, timeout)
    protocol.cancel(task_id, deadline, protocol.meta(meta))


def list_tasks(client: Client, *, timeout: float | None = UNSET) -> list[Status]:
    """The session's tasks (all pages of ``tasks/list``), as legacy `Status` values.

    Only a 2025-11-25 session has ``tasks/list``; on a 2026-07-28 connection this raises a clear
    `McpError` (the extension removed the method).
    """
    protocol, deadline = _start(client, timeout)
    return protocol.list(deadline)


def outcome(status: Status) -> dict[str, Any]:
    """The CallToolResult of a completed task.

    Raises `TaskFailed` for a failed task, `TaskCancelled` for a cancelled one and `InputRequired`
    for one waiting for input; the exception of a `FailedWait` (a wait on many whose task's own
    wait failed); `ValueError` for a status that is not final or lacks its payload
    (read it again with `get_task`).
    """
    return outcome_of(status)


def outcome_of(status: Status, label: str | None = None) -> dict[str, Any]:
    """`outcome`, its errors naming the task by `label` (its call and short id) when given."""
    if not isinstance(status, Status):
        raise TypeError(f"expected a Status, got {type(status).__name__}")
    if isinstance(status, FailedWait):
        raise status.exception
    if status.status is TaskState.COMPLETED:
        if isinstance(status.result, dict):
            return status.result
        raise ValueError("the status says completed but carries no result: read it again with get_task")
    if status.status is TaskState.FAILED:
        if isinstance(status.error, dict):
            raise TaskFailed(status, label=label)
        raise ValueError("the status says failed but carries no error: read it again with get_task")
    if status.status is TaskState.CANCELLED:
        raise TaskCancelled(status, label=label)
    if status.status is TaskState.INPUT_REQUIRED:
        raise InputRequired(status, label=label)
    raise ValueError(f"the task is not finished (status {status.wire_status!r})")
