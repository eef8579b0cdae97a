"""The futures' driver: `TaskFuture`, and the one thread per client (``mcp_tasks-futures``) that
resolves every future of the client on a group of its own (the group core, _group.py).

Input, of either era, is never answered on the driver's thread, or every other future would wait
on the person answering: it goes to a bounded pool of input workers (`INPUT_WORKERS` threads
``mcp_tasks-futures-input-<n>``, started on the first input), and what it ends with comes back to
the driver as news. A worker rather than the thread that awaits the future: a future may have no
such thread (callbacks, ``concurrent.futures.wait`` on many, nobody yet); the pool keeps the
library's threads bounded however many tasks ask at once (beyond it, input waits its turn).

When the client closes, every future not done fails with the channel's ``closed_error()``: those
the driver follows, and those handed to it that it has not taken in yet.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from mcp_tasks._call_text import arguments_text, call_text, task_label
from mcp_tasks._clock import Deadline
from mcp_tasks._errors import InputRequired, McpError, TaskCancelled, TaskFailed
from mcp_tasks._redact import short_id
from mcp_tasks._session._turns import wake_turns
from mcp_tasks._status import Status, TaskState
from mcp_tasks._tasks._group import Group
from mcp_tasks._tasks._helpers import cancel_task, get_task, outcome
from mcp_tasks._tasks._options import WaitSettings
from mcp_tasks._tasks._record import Claim
from mcp_tasks._tasks._record_many import release_all, take_all
from mcp_tasks._tasks._records import store_of
from mcp_tasks._tasks._watch import Watch, watch_of
from mcp_tasks._tasks._workers import Workers
from mcp_tasks._threads import join_all, start_thread

if TYPE_CHECKING:
    from mcp_tasks._client import Client
    from mcp_tasks._session._channel import Channel

__all__ = ["INPUT_WORKERS", "Futures", "TaskFuture", "futures_of", "settled_future"]

log = logging.getLogger("mcp_tasks")

CLOSE_TIMEOUT = 5.0
INPUT_WORKERS = 4
"""Threads that answer futures' input at once (see the module docstring)."""


class TaskFuture(concurrent.futures.Future[dict[str, Any]]):
    """A tool call's CallToolResult to come: `result()` returns it or raises the outcome's
    exception (`TaskFailed`, `TaskCancelled`, `InputRequired`, an `McpError`). `task_id` is the
    task's id (None for a tool that ran synchronously) and `status` the latest Status seen.
    `tool` and `arguments` are the call's (a copy of the arguments given to `submit`; None when
    not known, as for a task bound with `bind_future`); `label` names it in short, as displays
    and questions do. `cancel()` also asks the server to cancel the task.
    `concurrent.futures.wait` and `as_completed` work with it.
    """

    def __init__(
        self,
        client: Client,
        status: Status | None,
        *,
        tool: str | None = None,
        arguments: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.client = client
        self.task_id: str | None = status.task_id if status is not None else None
        self.status: Status | None = status
        self.tool: str | None = tool
        self.arguments: dict[str, Any] | None = dict(arguments) if arguments is not None else None

    @property
    def label(self) -> str:
        """``export {"report": "q3"} e294…b175``: the call (values under secret-looking keys
        hidden) and the task's short id; the call alone for a tool that ran synchronously.
        """
        shown = arguments_text(self.arguments)
        if self.task_id is None:
            return call_text(self.tool, self.arguments) or "call"
        return task_label(self.task_id, self.tool, shown)

    def cancel(self) -> bool:
        """Ask the server to cancel the task, then read it once: False when the future is done,
        when the task had already ended (the future then gets its outcome) or the cancel failed;
        else the future is cancelled (True).
        """
        if self.done():
            return False
        task_id = self.task_id
        if task_id is None:
            return bool(super().cancel())
        _cancelling.add(self)  # the driver may read the cancelled task before this returns
        try:
            cancel_task(self.client, task_id)
            status = get_task(self.client, task_id)
        except McpError as exc:
            log.warning("could not cancel task %s: %s", short_id(task_id), exc.message)
            _cancelling.discard(self)
            ended = True  # (or the cancel failed): its outcome is what it is
        else:
            ended = status.terminal and status.status is not TaskState.CANCELLED
        if ended:
            futures_of(self.client.channel).cue(task_id)  # the driver reads it now: the outcome comes
            return False
        cancelled = bool(super().cancel())
        if cancelled:
            futures_of(self.client.channel).drop(self)  # its question waiting its turn is not asked
        return cancelled

    def __repr__(self) -> str:
        task = f" task={short_id(self.task_id)}" if self.task_id else ""
        tool = f" tool={self.tool!r}" if self.tool else ""
        return f"<TaskFuture{task}{tool} {self._state_name()}>"

    def _state_name(self) -> str:
        if self.cancelled():
            return "cancelled"
        return "done" if self.done() else "pending"


_cancelling: weakref.WeakSet[TaskFuture] = weakref.WeakSet()
"""Futures whose owner asked the server to cancel their task: a cancelled end is that cancel."""

_Handed = tuple[TaskFuture, Status, WaitSettings, bool]  # a future handed to the driver: its task, settings, listen


class Futures:
    """The client's futures driver (a channel attachment): see the module docstring."""

    def __init__(self, channel: Channel, watch: Watch) -> None:
        self.channel = channel
        self.watch = watch
        self.inputs = Workers("futures-input", INPUT_WORKERS)
        self._incoming: list[_Handed] = []
        self._stop = False  # under the watch's lock
        self._group: Group | None = None
        self._thread: threading.Thread | None = None
        self._drops: weakref.WeakKeyDictionary[TaskFuture, threading.Event] = weakref.WeakKeyDictionary()

    def watch_future(self, future: TaskFuture, status: Status, settings: WaitSettings, listen: bool) -> None:
        """Resolve `future` when its task is over (the channel's closed error once closing)."""
        with self.watch.changed:
            if self._stop or self.channel.closing.is_set():
                raise self.channel.closed_error()
            self._incoming.append((future, status, settings, listen))
            if self._group is None:
                self._group = Group(future.client, settings, True, Deadline(None), offload=self.inputs.run)
                group = self._group
                self._thread = start_thread("futures", lambda: self._run(group))
            self._group.wake()

    def drop(self, future: TaskFuture) -> None:
        """`future` was cancelled: its wait ends, and a question of its waiting its turn to ask a
        person leaves the queue.
        """
        with self.watch.changed:
            dropped = self._drops.pop(future, None)
        if dropped is not None:
            dropped.set()
            wake_turns()

    def cue(self, task_id: str) -> None:
        """Have the driver read `task_id` now."""
        with self.watch.changed:
            if self._group is not None:
                self._group.cue(task_id)

    def _interrupted(self) -> bool:
        return bool(self._incoming) or self._stop

    def _run(self, group: Group) -> None:
        pending: dict[int, TaskFuture] = {}
        try:
            while True:
                with self.watch.changed:
                    if self._stop:
                        return
                    incoming, self._incoming = self._incoming, []
                    if not incoming and not group.open and not group.ready():
                        group.inbox.changed.wait()
                        continue
                self._take_in(group, pending, incoming)
                try:
                    done = group.next_done(self._interrupted)
                except Exception as exc:  # the client closing (or a failure of the group's own)
                    log.debug("the futures driver's group ended: %r", exc)
                    _fail_all(pending.values(), exc)
                    pending.clear()
                    if self.channel.closing.is_set():
                        return
                    continue
                for member in done:
                    _resolve(pending.pop(member.index), member.final, member.error)
        finally:
            group.close()
            with self.watch.changed:
                self._stop = True  # no future is handed over from now on
                incoming, self._incoming = self._incoming, []
            _fail_all([*pending.values(), *(f for f, *_ in incoming)], self.channel.closed_error())

    def _take_in(self, group: Group, pending: dict[int, TaskFuture], incoming: list[_Handed]) -> None:
        """Add the futures handed over since the last pass, the leases of those of one store
        taken in one call (`take_all`), however many were submitted meanwhile.
        """
        by_store: dict[int, list[_Handed]] = {}
        for handed in incoming:
            by_store.setdefault(id(store_of(handed[0].client, handed[2].store)), []).append(handed)
        for batch in by_store.values():
            store = store_of(batch[0][0].client, batch[0][2].store)
            taken = take_all(store, [status.task_id for _, status, _, _ in batch], group.deadline)
            try:
                for future, status, settings, listen in batch:
                    self._add(group, pending, future, status, settings, listen, taken)
            finally:
                if taken is not None and taken[1]:  # taken for futures that failed to be added
                    release_all(store, taken[0].holder, taken[1])

    def _add(
        self,
        group: Group,
        pending: dict[int, TaskFuture],
        future: TaskFuture,
        status: Status,
        settings: WaitSettings,
        listen: bool,
        taken: tuple[Claim, set[str]] | None,
    ) -> None:
        user = settings.on_status

        def on_status(seen: Status) -> None:
            future.status = seen
            if user is not None:
                user(seen)

        try:
            (member,) = group.add([status], attrs.evolve(settings, on_status=on_status), listen, taken=taken)
        except Exception as exc:
            _resolve(future, None, exc)
            return
        self._drops[future] = member.wait.dropped
        pending[member.index] = future  # (one over already is handed out by the next `next_done`)

    def close(self) -> None:
        """Stop the driver (futures not done fail: their tasks keep running on the server)."""
        with self.watch.changed:
            self._stop = True
            if self._group is not None:
                self._group.wake()
        self.inputs.close()

    def join(self) -> None:
        """Join the driver's thread and the input workers."""
        if self._thread is not None:
            join_all([self._thread], CLOSE_TIMEOUT)
        self.inputs.join(CLOSE_TIMEOUT)


def _fail_all(futures: Iterable[TaskFuture], error: BaseException) -> None:
    for future in futures:
        _resolve(future, None, error)


def _resolve(future: TaskFuture, final: Status | None, error: BaseException | None) -> None:
    if future.done():
        return  # cancelled by its owner meanwhile
    try:
        if error is not None:
            future.set_exception(error)
        elif final is not None:
            future.status = final
            if final.status is TaskState.CANCELLED and future in _cancelling:
                concurrent.futures.Future.cancel(future)  # as its owner's cancel() will say
                return
            try:
                future.set_result(outcome(final))
            except (TaskFailed, TaskCancelled, InputRequired, ValueError) as exc:
                future.set_exception(exc)
    except concurrent.futures.InvalidStateError:
        pass  # cancelled between the check and the set


def settled_future(client: Client, task_id: str, final: Status | None, error: BaseException | None) -> TaskFuture:
    """A `TaskFuture` for `task_id` already done: with `error`, or the outcome of `final` (a
    wait of one's own followed it; `final` None with `error`: it read nothing).
    """
    future = TaskFuture(client, final)
    future.task_id = task_id
    _resolve(future, final, error)
    return future


def futures_of(channel: Channel) -> Futures:
    """The channel's `Futures` driver (made on first use)."""
    watch = watch_of(channel)  # made first: attachments are not made inside one another
    return channel.attachment(Futures, lambda made: Futures(made, watch))
