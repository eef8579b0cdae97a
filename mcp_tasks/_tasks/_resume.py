"""`resume`: wait for a task that another process (or an earlier run of this one) started, from
what a task store kept of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp_tasks._client import Client
from mcp_tasks._input import InputHandlers
from mcp_tasks._options import UNSET
from mcp_tasks._redact import short_id
from mcp_tasks._store import TaskRef, TaskStore
from mcp_tasks._tasks._helpers import outcome
from mcp_tasks._tasks._records import RESUMING
from mcp_tasks._tasks._wait import check_raise_on_error, checked, wait_task

if TYPE_CHECKING:
    from requests.auth import AuthBase
    from typing_extensions import Unpack

    from mcp_tasks._options import TracerProvider
    from mcp_tasks._tasks._options import WaitOptions

__all__ = ["resume"]


def _ref(ref: TaskRef | str, store: TaskStore | None) -> TaskRef:
    if isinstance(ref, TaskRef):
        return ref
    if not isinstance(ref, str) or not ref:
        raise TypeError(f"expected a TaskRef or a task id, got {type(ref).__name__}")
    kept = store.get(ref) if store is not None else None
    if kept is None:
        where = f"in {store!r}" if store is not None else "without a store= to look it up in"
        raise ValueError(f"task {short_id(ref)} is not known {where}")
    return kept


def resume(
    ref: TaskRef | str,
    *,
    client: Client | None = None,
    auth: AuthBase | tuple[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    input_handlers: InputHandlers | None = None,
    trace: bool = False,
    tracer_provider: TracerProvider | None = None,
    propagate_baggage: bool = False,
    raise_on_error: bool = False,
    **wait_options: Unpack[WaitOptions],
) -> dict[str, Any]:
    """Wait for a task kept in a store and return its CallToolResult (as `await_task` does).

    The options are `wait_task`'s, ``store`` among them: the store to look `ref` up in, record
    the end in, and replay unacknowledged answers from (the client's when left out). `ref` is a
    `TaskRef` (from ``store.unfinished()``) or a task id found in `store`. With no
    `client`, an HTTP client for ``ref.endpoint`` is opened with `auth` and `headers` (joining a
    2025-era task's session) and closed after. A stdio or direct task can only be resumed through
    a `client` you pass: its server lived in the process that started it. With a `store`, the end
    is recorded there, and answers never acknowledged are sent again before any handler is asked.
    `input_handlers` answer the task's input on the client it opens (a 2025-era task asks what
    the session that started it declared: see the client option ``declare_input``).
    `trace`/`tracer_provider` (and `propagate_baggage`) trace the client it opens (as the client
    factories' options do);
    a traced wait's span links to the ``tools/call`` that created the task, from the trace
    context the ref kept. ``raise_on_error=True`` raises `ToolError` for a result with
    ``isError: true``, as `await_task` does.
    """
    check_raise_on_error(raise_on_error)
    given: Any = wait_options.get("store", UNSET)
    store: TaskStore | None = given if given is not UNSET else None
    if client is not None:
        if input_handlers is not None:
            raise TypeError("resume() takes input_handlers only for the client it opens: give them to your client")
        task = _ref(ref, store if store is not None else client.channel.settings.store)
        return _waited(client, task, wait_options, raise_on_error)
    task = _ref(ref, store)
    if not task.endpoint.startswith(("http://", "https://")):
        raise ValueError(
            f"task {short_id(task.task_id)} ran on {task.endpoint!r}, a server that lived in the process "
            "that started it (stdio or in-process): pass client= connected to a server that still has it"
        )
    session = task.session_id if task.era == "legacy" else None
    with Client.http(
        task.endpoint,
        auth=auth,
        headers=headers,
        session_id=session,
        input_handlers=input_handlers,
        trace=trace,
        tracer_provider=tracer_provider,
        propagate_baggage=propagate_baggage,
    ) as opened:
        return _waited(opened, task, wait_options, raise_on_error)


def _waited(client: Client, task: TaskRef, wait_options: WaitOptions, raise_on_error: bool) -> dict[str, Any]:
    token = RESUMING.set(task)  # a traced wait links to the trace context the ref kept
    try:
        final = wait_task(client, task.task_id, **wait_options)
        return checked(outcome(final), raise_on_error, final, task.tool, task.arguments)
    finally:
        RESUMING.reset(token)
