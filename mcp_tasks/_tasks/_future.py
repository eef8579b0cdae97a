"""`submit` and `TaskFuture`: a tool call as a `concurrent.futures.Future`, resolved by one
watcher thread per client (``mcp_tasks-futures``, started on first use, joined on close) through
the client's shared listen stream or the per-task poll schedule.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

import attrs

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import InputRequired, McpError, TaskCancelled, TaskFailed, TransportError
from mcp_tasks._options import UNSET
from mcp_tasks._redact import short_id
from mcp_tasks._status import Status
from mcp_tasks._store._protocol import TaskStore
from mcp_tasks._tasks._helpers import call_tool, cancel_task, outcome
from mcp_tasks._tasks._many import Group, settings_of
from mcp_tasks._tasks._options import InputOption, OnStatus, WaitSettings
from mcp_tasks._tasks._record import record_created, store_of
from mcp_tasks._tasks._watch import Watch, watch_of
from mcp_tasks._tasks._workers import Workers
from mcp_tasks._threads import join_all, start_thread

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from mcp_tasks._channel import Channel
    from mcp_tasks._client import Client

__all__ = ["SubmitOptions", "TaskFuture", "submit"]

log = logging.getLogger("mcp_tasks")

CLOSE_TIMEOUT = 5.0
INPUT_WORKERS = 4
"""Threads that answer 2025-era tasks' input for futures at once (see `Futures`)."""


class SubmitOptions(TypedDict, total=False):
    """The options of `submit`: `timeout` and `meta` of the ``tools/call``; the others those of
    `wait_task` for the wait that resolves the future (which has no deadline of its own: give
    ``future.result(timeout=...)`` one). `on_status` and `input` run in the watcher thread.
    `store` (the client's when left out) records the statuses and keeps the answers' ledger and
    the task's lease, as for `wait_task`.
    """

    timeout: float | None
    meta: Mapping[str, Any] | None
    poll_interval: float
    min_poll_interval: float
    request_timeout: float | None
    listen: bool | None
    input: InputOption
    on_status: OnStatus | None
    store: TaskStore | None


class TaskFuture(concurrent.futures.Future[dict[str, Any]]):
    """A tool call's CallToolResult to come: `result()` returns it or raises the outcome's
    exception (`TaskFailed`, `TaskCancelled`, `InputRequired`, an `McpError`). `task_id` is the
    task's id (None for a tool that ran synchronously) and `status` the latest Status seen.
    `cancel()` also asks the server to cancel the task. `concurrent.futures.wait` and
    `as_completed` work with it.
    """

    def __init__(self, client: Client, status: Status | None) -> None:
        super().__init__()
        self.client = client
        self.task_id: str | None = status.task_id if status is not None else None
        self.status: Status | None = status

    def cancel(self) -> bool:
        """Cancel the future and ask the server to cancel the task (False when already done)."""
        if self.done():
            return False
        if self.task_id is not None:
            try:
                cancel_task(self.client, self.task_id)
            except McpError as exc:
                log.warning("could not cancel task %s: %s", short_id(self.task_id), exc.message)
        return bool(super().cancel())

    def __repr__(self) -> str:
        task = f" task={short_id(self.task_id)}" if self.task_id else ""
        return f"<TaskFuture{task} {self._state_name()}>"

    def _state_name(self) -> str:
        if self.cancelled():
            return "cancelled"
        return "done" if self.done() else "pending"


class Futures:
    """The client's watcher of futures (a channel attachment).

    A 2025-era task that needs input is moved along by a ``tasks/result`` that lasts while a
    person answers the server's requests. The watcher does not do that itself, or every other
    future would wait on that person: it hands it to a worker of a bounded pool (`INPUT_WORKERS`
    threads ``mcp_tasks-futures-input-<n>``, started on the first such input), and takes the
    status it ends with as news. A worker rather than the thread that awaits the future: a future
    may have no such thread (callbacks, ``concurrent.futures.wait`` on many, nobody yet), and the
    input must be answered anyway; the pool keeps the library's threads bounded however many
    tasks ask at once (beyond it, input waits its turn, and the other futures still resolve).
    """

    def __init__(self, channel: Channel, watch: Watch) -> None:
        self.channel = channel
        self.watch = watch
        self.inputs = Workers("futures-input", INPUT_WORKERS)
        self._incoming: list[tuple[TaskFuture, Status, WaitSettings, bool]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch_future(self, future: TaskFuture, status: Status, settings: WaitSettings, listen: bool) -> None:
        """Resolve `future` when its task is over."""
        with self.watch.changed:
            if self._stop.is_set():
                raise TransportError("The client is closed")
            self._incoming.append((future, status, settings, listen))
            if self._thread is None:
                self._thread = start_thread("futures", self._run)
            self.watch.changed.notify_all()

    def _run(self) -> None:
        pending: dict[int, TaskFuture] = {}
        client = self._incoming[0][0].client
        group = self._group(client, self._incoming[0][2])
        try:
            while not self._stop.is_set():
                with self.watch.changed:
                    incoming, self._incoming = self._incoming, []
                    if not incoming and not group.open and not group.next_done_ready():
                        if not self._stop.is_set():  # read under the lock: `close` sets it under it
                            self.watch.changed.wait()
                        continue
                for future, status, settings, listen in incoming:
                    self._add(group, pending, future, status, settings, listen)
                try:
                    done = group.next_done(lambda: bool(self._incoming) or self._stop.is_set())
                except Exception as exc:  # no future is left waiting for ever
                    log.debug("the futures watcher failed: %r", exc)
                    self._fail_all(pending, exc)
                    group.close()
                    group = self._group(client, group.settings)
                    continue
                for member in done:
                    _resolve(pending.pop(member.index), member.final, member.error)
        finally:
            group.close()
            self._fail_all(pending, TransportError("The client was closed before the task finished"))

    def _group(self, client: Client, settings: WaitSettings) -> Group:
        group = Group(client, settings, True, Deadline(None))
        group.offload = self.inputs.run
        group.isolate = True  # one future's failed read or input fails that future only
        return group

    def _add(
        self,
        group: Group,
        pending: dict[int, TaskFuture],
        future: TaskFuture,
        status: Status,
        settings: WaitSettings,
        listen: bool,
    ) -> None:
        user = settings.on_status

        def on_status(seen: Status) -> None:
            future.status = seen
            if user is not None:
                user(seen)

        try:
            (member,) = group.add([status], attrs.evolve(settings, on_status=on_status), listen)
        except Exception as exc:
            _resolve(future, None, exc)
            return
        pending[member.index] = future

    @staticmethod
    def _fail_all(pending: dict[int, TaskFuture], error: BaseException) -> None:
        for future in pending.values():
            _resolve(future, None, error)
        pending.clear()

    def close(self) -> None:
        """Stop the watcher (pending futures fail: their tasks keep running on the server)."""
        with self.watch.changed:
            self._stop.set()
            self.watch.changed.notify_all()
        self.inputs.close()

    def join(self) -> None:
        """Join the watcher thread and the input workers."""
        if self._thread is not None:
            join_all([self._thread], CLOSE_TIMEOUT)
        self.inputs.join(CLOSE_TIMEOUT)


def _resolve(future: TaskFuture, final: Status | None, error: BaseException | None) -> None:
    if future.done():
        return  # cancelled by its owner meanwhile
    try:
        if error is not None:
            future.set_exception(error)
        elif final is not None:
            future.status = final
            try:
                future.set_result(outcome(final))
            except (TaskFailed, TaskCancelled, InputRequired, ValueError) as exc:
                future.set_exception(exc)
    except concurrent.futures.InvalidStateError:
        pass  # cancelled between the check and the set


def futures_of(channel: Channel) -> Futures:
    """The channel's `Futures` watcher (made on first use)."""
    watch = watch_of(channel)  # made first: attachments are not made inside one another
    return channel.attachment(Futures, lambda made: Futures(made, watch))


def submit(
    client: Client,
    name: str,
    arguments: Mapping[str, Any] | None = None,
    **options: Unpack[SubmitOptions],
) -> TaskFuture:
    """Call a tool in this thread and return a `TaskFuture` for its result: already done when
    the tool ran synchronously, else bound to its task (`.task_id`, `.status`) and resolved by
    the client's one watcher thread. Options: see `SubmitOptions`.
    """
    unknown = sorted(set(options) - set(SubmitOptions.__annotations__))
    if unknown:
        raise TypeError(f"submit() got an unexpected keyword argument {unknown[0]!r}")
    wait_options: dict[str, Any] = dict(options)
    timeout: Any = wait_options.pop("timeout", UNSET)  # the call's; checked by call_tool
    meta: Any = wait_options.pop("meta", None)
    settings, listen = settings_of({**wait_options, "timeout": None}, "submit")
    called = call_tool(client, name, arguments, timeout=timeout, meta=meta)
    if isinstance(called, dict):
        future = TaskFuture(client, None)
        future.set_result(called)
        return future
    if settings.store is not UNSET and settings.store is not store_of(client):
        record_created(client, called, name, settings.store)  # a store of this call's own keeps it too
    future = TaskFuture(client, called)
    futures_of(client.channel).watch_future(future, called, settings, listen)
    return future
