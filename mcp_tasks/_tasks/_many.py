"""Waiting for many tasks at once: `wait_all`, `as_completed`, `wait_any`.

The caller's thread does the waiting (the group core, _group.py): it sleeps on the client's shared
`Watch` until news of one of its tasks comes or one is due for a read (its own poll schedule),
reads, answers input with the wait's strategy and calls `on_status`, all in that thread. One
deadline covers the whole set. A task whose wait fails (the server does not know it, its reads
fail) is given as a `FailedWait` in its place, and the others go on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import McpError, RequestTimeout
from mcp_tasks._redact import short_id
from mcp_tasks._status import Status
from mcp_tasks._store._protocol import TaskStore
from mcp_tasks._tasks._asked import labels_of
from mcp_tasks._tasks._group import Group, Member
from mcp_tasks._tasks._helpers import cancel_task, task_id_of
from mcp_tasks._tasks._observer import expect_set
from mcp_tasks._tasks._options import CANCEL_BUDGET, InputOption, OnStatus, settings_of

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from mcp_tasks._client import Client

__all__ = ["ManyOptions", "as_completed", "cancel_pending", "wait_all", "wait_any"]


class ManyOptions(TypedDict, total=False):
    """The options of `wait_all`, `as_completed` and `wait_any`: those of `wait_task`, but
    `timeout` covers the whole set and `listen` may be None (auto), its default.
    """

    timeout: float | None
    """Seconds for the whole set; None waits for ever. Default: 60.0."""
    poll_interval: float
    """Seconds between reads of a task that suggests none. Default: 1.0."""
    min_poll_interval: float
    """Never read a task more often than this. Default: 0.05."""
    request_timeout: float | None
    """The limit of each request; None: no limit but the set's own. Default: the client's
    timeout."""
    listen: bool | None
    """True: the client's shared ``subscriptions/listen`` stream; False: poll; None: the stream
    when the server has one, else poll. Default: None."""
    input: InputOption
    """How input is answered: "handlers", "return", a function, a strategy. Default: "handlers"."""
    on_status: OnStatus | None
    """Called with each status seen (a `SetProgress` counts the set). Default: None."""
    cancel_on_timeout: bool
    """Cancel the unfinished tasks when the time is up, within `CANCEL_BUDGET` (0.25 s) in all.
    Default: False."""
    store: TaskStore | None
    """The `TaskStore` the waits record into, replay unacknowledged answers from and lease the
    tasks in. Default: the client's ``store``."""


def cancel_pending(client: Client) -> Callable[[list[Member]], bool]:
    """What a set with ``cancel_on_timeout`` does when its deadline passes: cancel the unfinished
    tasks within `CANCEL_BUDGET` in all; whether every cancel went through.
    """

    def cancel(pending: list[Member]) -> bool:
        budget = Deadline(CANCEL_BUDGET)
        cancelled = True
        for member in pending:
            left = budget.remaining()
            try:
                if not left:
                    raise RequestTimeout(CANCEL_BUDGET)
                with member.wait.trace.within():
                    cancel_task(client, member.task_id, timeout=left)
            except McpError as exc:
                cancelled = False
                log_cancel_failure(member.task_id, exc)
        return cancelled

    return cancel


def log_cancel_failure(task_id: str, exc: McpError) -> None:
    """Say that a task could not be cancelled after its wait timed out."""
    import logging

    logging.getLogger("mcp_tasks").warning(
        "could not cancel task %s after its wait timed out: %s", short_id(task_id), exc.message
    )


def _group(client: Client, tasks: Iterable[str | Status], options: Mapping[str, Any], caller: str) -> Group:
    if isinstance(tasks, (str, bytes, bytearray, Status)):
        raise TypeError(
            f"{caller}() takes an iterable of task ids or Statuses, got one {type(tasks).__name__}: "
            "use wait_task(client, task) for one task"
        )
    settings, listen = settings_of(options, caller, progress=False)
    tasks = list(tasks)
    ids = [task_id_of(task) for task in tasks]  # a bad reference fails before anything is sent
    expect_set(settings.on_status, ids, lambda: labels_of(client, ids))  # a display counts them from the start
    cancel = cancel_pending(client) if settings.cancel_on_timeout else None
    group = Group(client, settings, listen, Deadline(settings.timeout), on_timeout=cancel)
    try:
        group.add(tasks)
    except BaseException:
        group.close()
        raise
    return group


def as_completed(client: Client, tasks: Iterable[str | Status], **options: Unpack[ManyOptions]) -> Iterator[Status]:
    """Yield each task's final Status as it finishes (terminal, or input_required when the input
    strategy does not answer). Options are `wait_task`'s (see `ManyOptions`); `timeout` covers
    the whole set and raises `TaskTimeout` whose `.pending` lists the unfinished tasks. A task
    whose wait failed (the server does not know it, or forgot it; its reads failed; its input
    handler raised) comes as a `FailedWait`: its last Status with `.exception`, which
    `outcome()` raises; the others go on. Only the deadline, the client's close (a
    `TransportError`) and an interrupt end the set.
    """
    group = _group(client, tasks, options, "as_completed")
    return _iterate(group)


def _iterate(group: Group) -> Iterator[Status]:
    try:
        while group.open or group.ready():
            for member in group.next_done():
                yield member.outcome()
    finally:
        group.close()


def wait_all(client: Client, tasks: Iterable[str | Status], **options: Unpack[ManyOptions]) -> list[Status]:
    """Wait until every task is over; their final Statuses in the order given. See `as_completed`."""
    group = _group(client, tasks, options, "wait_all")
    try:
        while group.open or group.ready():
            group.next_done()
    finally:
        group.close()
    return [m.outcome() for m in group.members]


def wait_any(client: Client, tasks: Iterable[str | Status], **options: Unpack[ManyOptions]) -> Status:
    """Wait until one task is over and return its final Status (the others keep running). See
    `as_completed`.
    """
    group = _group(client, tasks, options, "wait_any")
    if not group.members:
        raise ValueError("wait_any() needs at least one task")
    try:
        return group.next_done()[0].outcome()
    finally:
        group.close()
