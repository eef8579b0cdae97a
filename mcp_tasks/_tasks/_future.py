"""`submit` and `TaskFuture`: a tool call as a `concurrent.futures.Future`, resolved by the
client's futures driver (_driver.py: one thread, ``mcp_tasks-futures``, started on first use,
joined on close) through the client's shared listen stream or the per-task poll schedule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from mcp_tasks._options import UNSET
from mcp_tasks._status import Status
from mcp_tasks._store._protocol import TaskStore
from mcp_tasks._tasks._driver import INPUT_WORKERS, TaskFuture, futures_of
from mcp_tasks._tasks._helpers import call_followed, follow_call
from mcp_tasks._tasks._observer import follow_future
from mcp_tasks._tasks._options import InputOption, OnStatus, settings_of
from mcp_tasks._tasks._progress_keeper import OnProgress, check_on_progress, keeper_of
from mcp_tasks._tasks._records import record_created, store_of

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from mcp_tasks._client import Client

__all__ = ["INPUT_WORKERS", "SubmitOptions", "TaskFuture", "bind_future", "submit"]


class SubmitOptions(TypedDict, total=False):
    """The options of `submit`: `timeout` and `meta` of the ``tools/call``; the others those of
    `wait_task` for the wait that resolves the future (which has no deadline of its own: give
    ``future.result(timeout=...)`` one).
    """

    timeout: float | None
    """Seconds for the ``tools/call`` request (not the task); None: no limit. Default: the
    client's timeout."""
    meta: Mapping[str, Any] | None
    """The ``_meta`` of the ``tools/call``. Default: None."""
    key: str | None
    """The call's idempotency key (see `call_tool`): a key already recorded binds the future to
    that call's task (or its kept result). Default: None."""
    poll_interval: float
    """Seconds between reads when the task suggests none. Default: 1.0."""
    min_poll_interval: float
    """Never read more often than this. Default: 0.05."""
    request_timeout: float | None
    """The limit of each request of the wait; None: no limit. Default: the client's timeout."""
    listen: bool | None
    """True: the client's shared ``subscriptions/listen`` stream; False: poll; None: the stream
    when the server has one, else poll. Default: None."""
    input: InputOption
    """How input is answered, on one of the driver's input workers: "handlers", "return", a
    function, a strategy. Default: "handlers"."""
    on_status: OnStatus | None
    """Called in the driver's thread with each status seen (on an input worker for the status
    its answer brings). Default: None."""
    on_progress: OnProgress | None
    """Called with ``(progress, total, message)`` for the progress the server reports, from the
    call's own stream until the future is done, on the client's progress thread. Default: None."""
    store: TaskStore | None
    """Records the statuses and keeps the answers' ledger and the task's lease, as for
    `wait_task`. Default: the client's ``store``."""


def submit(
    client: Client,
    name: str,
    arguments: Mapping[str, Any] | None = None,
    **options: Unpack[SubmitOptions],
) -> TaskFuture:
    """Call a tool in this thread and return a `TaskFuture` for its result: already done when
    the tool ran synchronously, else bound to its task (`.task_id`, `.status`) and resolved by
    the client's futures driver. Options: see `SubmitOptions`.
    """
    unknown = sorted(set(options) - set(SubmitOptions.__annotations__))
    if unknown:
        raise TypeError(f"submit() got an unexpected keyword argument {unknown[0]!r}")
    wait_options: dict[str, Any] = dict(options)
    timeout: Any = wait_options.pop("timeout", UNSET)  # the call's; checked by call_tool
    meta: Any = wait_options.pop("meta", None)
    key: Any = wait_options.pop("key", None)
    on_progress = check_on_progress(wait_options.pop("on_progress", None))
    settings, listen = settings_of({**wait_options, "timeout": None}, "submit")
    follow = follow_call(client, meta, on_progress)
    try:
        called = call_followed(
            client,
            name,
            arguments,
            follow,
            timeout=timeout,
            meta=meta,
            key=key,
            wanted=on_progress is not None,
            keep=listen,
        )
    except BaseException:
        follow.close()
        raise
    if isinstance(called, dict):
        follow.close()
        future = TaskFuture(client, None, tool=name, arguments=arguments)
        follow_future(settings.on_status, future)  # a display of the batch counts it
        future.set_result(called)
        return future
    if settings.store is not UNSET and settings.store is not store_of(client):
        record_created(client, called, name, settings.store, None, arguments)  # a store of this call's own too
    future = TaskFuture(client, called, tool=name, arguments=arguments)
    if on_progress is not None and follow.task_id != called.task_id:  # a key's earlier call
        follow.close()
        follow = keeper_of(client.channel).follow(on_progress, task_id=called.task_id)
    future.add_done_callback(lambda _: follow.close(flush=False))
    follow_future(settings.on_status, future)
    futures_of(client.channel).watch_future(future, called, settings, listen)
    return future


def bind_future(client: Client, status: Status, **options: Unpack[SubmitOptions]) -> TaskFuture:
    """A `TaskFuture` for a task that exists already (`status`, as read or kept in a store),
    resolved by the client's futures driver as `submit`'s are (options: `SubmitOptions` but
    `timeout`, `meta` and `key`, which are the call's). For code that follows tasks it did not create.
    """
    if not isinstance(status, Status):
        raise TypeError(f"bind_future() takes a Status, got {type(status).__name__}")
    for name in ("timeout", "meta", "key"):
        if name in options:
            raise TypeError(f"bind_future() got an unexpected keyword argument {name!r}")
    wait_options: dict[str, Any] = dict(options)
    on_progress = check_on_progress(wait_options.pop("on_progress", None))
    settings, listen = settings_of({**wait_options, "timeout": None}, "bind_future")
    future = TaskFuture(client, status)
    if on_progress is not None:  # what this client kept of it, and what comes
        follow = keeper_of(client.channel).follow(on_progress, task_id=status.task_id)
        future.add_done_callback(lambda _: follow.close(flush=False))
    follow_future(settings.on_status, future)
    futures_of(client.channel).watch_future(future, status, settings, listen)
    return future
