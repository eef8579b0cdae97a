"""Waiting for a task: one deadline, polled in the caller's thread (or fed by the client's shared
listen stream, read in worker threads: see _watch.py), input answered by a strategy, and a clear
error when time runs out.

The task keeps running on the server after a wait gives up: wait again, or cancel it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict, cast

from mcp_tasks._errors import McpError, TaskTimeout, ToolError
from mcp_tasks._options import UNSET
from mcp_tasks._redact import short_id
from mcp_tasks._status import Status
from mcp_tasks._tasks._asked import label_of
from mcp_tasks._tasks._group import Group
from mcp_tasks._tasks._helpers import call_followed, cancel_task, follow_call, outcome_of, task_id_of
from mcp_tasks._tasks._observer import name_task, progress_callback
from mcp_tasks._tasks._options import CANCEL_BUDGET, WaitOptions, WaitSettings
from mcp_tasks._tasks._progress_keeper import keeper_of
from mcp_tasks._tasks._records import saved_ref
from mcp_tasks._tasks._task_wait import TaskWait
from mcp_tasks._tasks._watch import watch_of
from mcp_tasks._tracing import TaskTrace

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from mcp_tasks._client import Client

__all__ = ["CallOptions", "await_task", "call_and_await", "wait_task"]

log = logging.getLogger("mcp_tasks")


def wait_task(client: Client, task: str | Status, **options: Unpack[WaitOptions]) -> Status:
    """Wait until the task is terminal, or needs input this wait does not answer; return that
    Status. Raises only for errors of the wait itself: a request that failed, `TaskTimeout`, or
    an input handler that could not answer.

    Options (`WaitOptions`): `timeout` (seconds, None for no limit; 60.0) bounds the whole wait,
    negotiation included; each request gets the time left, or `request_timeout` (the client's
    timeout when left out; None: no limit of its own) when that is shorter. Between polls the
    wait sleeps the task's ``pollIntervalMs``, or `poll_interval` (1.0) when it has none, and
    never less than `min_poll_interval` (0.05). ``listen=True`` follows a
    ``subscriptions/listen`` stream instead, and polls if the stream ends. `input` is
    ``"handlers"`` (the client's input handlers), ``"return"``, a function of the status (pending
    requests only) returning the responses, or an object with ``answer(client, status,
    pending)``. `on_status` is called on this thread with the status the wait starts from (when
    given one) and once for each change it sees. `on_progress` is called with ``(progress,
    total, message)``, first with the latest this client kept, then as the server reports it
    (``notifications/progress`` with the token of the call that created the task: a 2025-11-25
    task's whole life; a task resumed from elsewhere has none), on the client's progress thread
    (``mcp_tasks-progress``, one call at a time), never this one, so a slow callback cannot
    stall the wait; the wait returns after the calls for what came before its end. An
    `on_status` with a ``progress`` method (`StatusDisplay`) is told too. A task still running when the time is up keeps
    running, unless ``cancel_on_timeout=True``: then the wait spends at most `CANCEL_BUDGET`
    (0.25 s) more asking the server to cancel it before raising `TaskTimeout`.
    """
    return _run(client, task, WaitSettings.of(options, "wait_task"))


def await_task(
    client: Client, task: str | Status, *, raise_on_error: bool = False, **options: Unpack[WaitOptions]
) -> dict[str, Any]:
    """Wait for the task and return its CallToolResult: `outcome(wait_task(...))`, with the same
    options.

    Raises `TaskFailed`, `TaskCancelled` or `InputRequired` for those outcomes, and `TaskTimeout`
    when the wait runs out of time. A tool's own error (``isError: true``) is a result; with
    ``raise_on_error=True`` it raises `ToolError` (carrying the result) instead.
    """
    check_raise_on_error(raise_on_error)
    final = _run(client, task, WaitSettings.of(options, "await_task"))
    return checked(outcome_of(final, label_of(client, final.task_id)), raise_on_error, final)


def check_raise_on_error(value: object) -> None:
    """TypeError unless `value` is a bool (``raise_on_error=``)."""
    if not isinstance(value, bool):
        raise TypeError(f"raise_on_error must be True or False, got {type(value).__name__}")


def checked(
    result: dict[str, Any],
    raise_on_error: bool,
    status: Status | None = None,
    tool: str | None = None,
    arguments: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """`result`, or `ToolError` (naming the call, when known) when `raise_on_error` and the tool
    reported an error.
    """
    if raise_on_error and result.get("isError") is True:
        raise ToolError(result, status, tool, arguments)
    return result


class CallOptions(TypedDict, total=False):
    """The options of the ``tools/call`` that `call_and_await` sends (its `call_opts`)."""

    timeout: float | None
    """Seconds for the ``tools/call`` request; None: no limit. Default: the client's timeout."""
    meta: Mapping[str, Any] | None
    """The ``_meta`` of the ``tools/call``. Default: None."""
    key: str | None
    """The call's idempotency key (see `call_tool`). Default: None."""


def _call_options(value: object) -> CallOptions:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"call_and_await(): call_opts must be a dict or None, got {type(value).__name__}")
    unknown = sorted(set(value) - set(CallOptions.__annotations__))
    if unknown:
        raise TypeError(f"call_and_await(): unknown call_opts {', '.join(map(repr, unknown))} (use timeout, meta, key)")
    return cast(CallOptions, value)


def call_and_await(
    client: Client,
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    call_opts: CallOptions | None = None,
    raise_on_error: bool = False,
    **options: Unpack[WaitOptions],
) -> dict[str, Any]:
    """Call a tool and, if the server made it a task, wait for its result.

    `call_opts` go to the ``tools/call`` (``timeout``, ``meta``, ``key``: see `CallOptions`); the other
    options are `wait_task`'s, whose `timeout` bounds the wait only. A tool that ran synchronously
    returns its result at once. With ``raise_on_error=True``, a result with ``isError: true``
    (the tool's own error, such as an unknown tool name) raises `ToolError` instead.
    """
    check_raise_on_error(raise_on_error)
    settings = WaitSettings.of(options, "call_and_await")  # bad options fail before the call is sent
    call = _call_options(call_opts)
    meta = call.get("meta")
    hears = progress_callback(settings.on_progress, settings.on_status)
    with follow_call(client, meta, hears) as follow:  # from the call's own stream to the task's end
        called = call_followed(
            client,
            name,
            arguments,
            follow,
            timeout=call.get("timeout", UNSET),
            meta=meta,
            key=call.get("key"),
            wanted=hears is not None,
            keep=settings.listen,
        )
        if isinstance(called, Status):
            try:
                final = _run(client, called, settings, followed=follow.task_id == called.task_id)
            finally:
                if settings.listen:  # followed since its creation: not beyond its wait, however it ended
                    watch_of(client.channel).unkeep([called.task_id])
            return checked(outcome_of(final, label_of(client, final.task_id)), raise_on_error, final, name, arguments)
    return checked(called, raise_on_error, None, name, arguments)


def _run(client: Client, task: str | Status, settings: WaitSettings, *, followed: bool = False) -> Status:
    task_id = task_id_of(task)
    hears = None if followed else progress_callback(settings.on_progress, settings.on_status)
    saved = saved_ref(client, task_id, settings.store, settings.timeout)  # read only when traced: a resume's link
    follow = keeper_of(client.channel).follow(hears, task_id=task_id) if hears is not None else None
    label = label_of(client, task_id)
    if label is not None:
        name_task(settings.on_status, label)  # a display's line names the call
    try:
        with client.channel.tracing.task(task_id, saved) as trace:  # the wait's span, when the client traces
            final = _waited(client, task, settings, trace)
            trace.finish(final)
            return final
    finally:
        if follow is not None:
            follow.close()  # after the calls for what came before the end


def _waited(client: Client, task: str | Status, settings: WaitSettings, trace: TaskTrace) -> Status:
    task_id = task_id_of(task)
    given = task if isinstance(task, Status) else None
    wait: TaskWait | None = None
    try:
        wait = TaskWait(client, task_id, given, settings, trace)
        wait.recorder.take()  # a store's lease, taken before the first read when it is free
        if settings.listen and wait.protocol.era == "modern":
            return _followed(wait, given)
        watch_of(client.channel).unkeep([task_id])  # polled: its stream (from its creation) is let go
        return wait.run(given)
    except TaskTimeout as timed_out:
        raised = _cancelled_after(client, timed_out, task_id) if settings.cancel_on_timeout else timed_out
        label = label_of(client, task_id)  # named by its call, when this client knows it
        if label is not None:
            raised = _named(raised, label)
        if raised is timed_out:
            raise
        raise raised from None
    except KeyboardInterrupt as interrupt:
        if hasattr(interrupt, "add_note"):  # Python 3.11+
            interrupt.add_note(
                f"mcp_tasks: task {short_id(task_id)} is still running on the server; wait for it again or cancel it"
            )
        raise
    finally:
        if wait is not None:
            wait.recorder.close()  # a lease it held is free at once


def _followed(wait: TaskWait, given: Status | None) -> Status:
    """Follow one task on the client's shared listen stream (no thread of its own): the group
    core, with this wait its one member, driven in this thread.
    """
    final = wait.start(given)
    if final is not None:
        return final
    group = Group(wait.client, wait.settings, True, wait.deadline)
    try:
        member = group.follow(wait)
        while not member.over:
            group.next_done()
        if member.error is not None:
            raise member.error
        assert member.final is not None
        return member.final
    finally:
        group.close()


def _named(timed_out: TaskTimeout, label: str) -> TaskTimeout:
    """`timed_out` naming its task by its call (`label`)."""
    timeout = timed_out.data["timeoutMs"] / 1000
    return TaskTimeout(
        timed_out.data["taskId"],
        timeout,
        timed_out.status,
        cancelled=timed_out.cancelled,
        pending=timed_out.pending,
        label=label,
    )


def _cancelled_after(client: Client, timed_out: TaskTimeout, task_id: str) -> TaskTimeout:
    """Cancel a task whose wait ran out of time, within `CANCEL_BUDGET`; the TaskTimeout to raise
    says whether it worked.
    """
    try:
        cancel_task(client, task_id, timeout=CANCEL_BUDGET)
    except McpError as exc:
        log.warning("could not cancel task %s after its wait timed out: %s", short_id(task_id), exc.message)
        return timed_out
    timeout = timed_out.data["timeoutMs"] / 1000
    return TaskTimeout(task_id, timeout, timed_out.status, cancelled=True)
