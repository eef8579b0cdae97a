"""Waiting for many tasks at once: `wait_all`, `as_completed`, `wait_any`.

The caller's thread does the waiting: it sleeps on the client's shared `Watch` until news of one
of its tasks comes or one is due for a read (its own poll schedule), reads, answers input with the
wait's strategy and calls `on_status`, all in that thread. One deadline covers the whole set.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, TypedDict

from mcp_tasks._clock import Deadline, wait_condition
from mcp_tasks._errors import INVALID_PARAMS, McpError, RequestTimeout, TaskTimeout
from mcp_tasks._redact import short_id
from mcp_tasks._status import Era, Status, TaskState
from mcp_tasks._store._protocol import TaskStore
from mcp_tasks._tasks._helpers import cancel_task, task_id_of
from mcp_tasks._tasks._options import CANCEL_BUDGET, InputOption, OnStatus, WaitSettings
from mcp_tasks._tasks._record import saved_ref
from mcp_tasks._tasks._schedule import delay, expired, gone
from mcp_tasks._tasks._wait import TaskWait
from mcp_tasks._tasks._watch import READ, Inbox, watch_of

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from mcp_tasks._client import Client

__all__ = ["Group", "ManyOptions", "as_completed", "wait_all", "wait_any"]

MAX_FAILURES = 5
"""Reads of one task that may time out in a row before the wait gives up."""


class ManyOptions(TypedDict, total=False):
    """The options of `wait_all`, `as_completed` and `wait_any`: those of `wait_task`, with
    `listen` None (auto: the client's shared listen stream when the server has one, else polls)
    as the default; `timeout` covers the whole set.
    """

    timeout: float | None
    poll_interval: float
    min_poll_interval: float
    request_timeout: float | None
    listen: bool | None
    input: InputOption
    on_status: OnStatus | None
    cancel_on_timeout: bool
    store: TaskStore | None


def settings_of(options: Mapping[str, Any], caller: str) -> tuple[WaitSettings, bool]:
    """The checked settings, and whether to listen (None and True: yes)."""
    options = dict(options)
    listen = options.pop("listen", None)
    if listen is not None and not isinstance(listen, bool):
        raise TypeError(f"listen must be True, False or None, got {listen!r}")
    return WaitSettings.of(options, caller), listen is not False


class _Member:
    """One task of a group."""

    __slots__ = ("driving", "due", "error", "existed", "failures", "final", "index", "made", "traced", "wait")

    def __init__(self, index: int, wait: TaskWait, existed: bool) -> None:
        self.index = index
        self.wait = wait
        self.traced = False  # its wait's span was started here, and is still to end
        self.made = False  # its wait was made here (not adopted): its lease is freed here
        self.driving = False  # its 2025-era input is being answered on a worker (see Group.offload)
        self.due = 0.0
        self.final: Status | None = None
        self.error: Exception | None = None
        self.existed = existed  # the server has shown this task: -32602 now means it forgot it
        self.failures = 0

    @property
    def task_id(self) -> str:
        return self.wait.task_id

    def last(self) -> Status:
        era: Era = "legacy" if self.wait.protocol.era == "legacy" else "modern"
        return self.wait.last or Status(task_id=self.task_id, status=TaskState.UNKNOWN, era=era)


class Group:
    """A set of task waits sharing one deadline, driven from one thread (see the module
    docstring). `next_done()` blocks until some tasks are over; `close()` lets the rest go.
    """

    def __init__(
        self,
        client: Client,
        settings: WaitSettings,
        listen: bool,
        deadline: Deadline,
        *,
        cancel_on_timeout: bool | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.cancel_on_timeout = settings.cancel_on_timeout if cancel_on_timeout is None else cancel_on_timeout
        self.listen = listen
        self.deadline = deadline
        self.watch = watch_of(client.channel)
        self.inbox = Inbox(self.watch)
        self.members: list[_Member] = []
        self._by_id: dict[str, list[_Member]] = {}
        self._due: list[tuple[float, int, int]] = []
        self._seq = itertools.count()
        self._done: list[_Member] = []
        self._open = 0
        self._exits = ExitStack()
        self._made: list[_Member] = []  # the members whose waits this group made (not adopted)
        self.isolate = False
        """True: a task whose read or input fails ends with that error alone (futures), not the group."""
        self.offload: Callable[[Callable[[], None]], None] | None = None
        """Where a 2025-era task's input is answered, when not in the group's thread (futures)."""
        self._driven: dict[int, Status | BaseException] = {}  # what the offloaded input ended with

    def add(
        self, tasks: Iterable[str | Status], settings: WaitSettings | None = None, listen: bool | None = None
    ) -> list[_Member]:
        """Start waiting for `tasks` (ids or Statuses), with the group's settings and listen, or
        these.
        """
        listen = self.listen if listen is None else listen
        added: list[_Member] = []
        streamed: list[str] = []
        cued: list[str] = []
        for task in tasks:
            task_id = task_id_of(task)
            given = task if isinstance(task, Status) else None
            wait_settings = settings or self.settings
            saved = saved_ref(self.client, task_id, wait_settings.store, wait_settings.timeout)  # read only when traced
            trace = self.client.channel.tracing.task(task_id, saved)  # its span, when the client traces
            wait = TaskWait(self.client, task_id, given, wait_settings, trace)
            wait.deadline = self.deadline
            wait.recorder.deadline = self.deadline
            trace.start()
            member = self._member(wait, given is not None)
            member.traced = member.made = True
            self._made.append(member)
            added.append(member)
            if listen:
                (streamed if wait.protocol.era == "modern" else cued).append(task_id)
            final = wait.start(given)
            if final is not None:
                self._finish(member, final)
            else:
                self._schedule(member, self._first_read(wait, given, listen))
        if streamed:
            scopes = {m.task_id: m.wait.trace.within for m in added}  # the watch's reads are the waits'
            self.watch.want(self.inbox, streamed, stream=True, scopes=scopes)
        if cued:
            self.watch.want(self.inbox, cued, stream=False)
        return added

    def adopt(self, wait: TaskWait) -> Status:
        """Drive one wait that has taken in its starting status (`wait_task(listen=True)`): read
        the task now, then follow it on the shared stream; its final Status.
        """
        member = self._member(wait, wait.last is not None)
        self._schedule(member, self._first_read(wait, wait.last, self.listen))
        if self.listen:
            modern = wait.protocol.era == "modern"
            self.watch.want(self.inbox, [wait.task_id], stream=modern, scopes={wait.task_id: wait.trace.within})
        (done,) = self.next_done()
        return _outcome(done)

    def _first_read(self, wait: TaskWait, given: Status | None, listen: bool) -> float:
        """Seconds until a new member's first read: at once for a bare id polled; a task going
        on a stream is read when the stream acknowledges it (or gives it up): the watch cues it,
        so this read is only the fallback.
        """
        if given is not None:
            return wait.poll_interval(given)
        if listen and wait.protocol.era == "modern":
            return wait.settings.poll_interval
        return 0.0

    def _member(self, wait: TaskWait, existed: bool) -> _Member:
        member = _Member(len(self.members), wait, existed)
        self.members.append(member)
        self._open += 1
        self._by_id.setdefault(wait.task_id, []).append(member)
        self._exits.enter_context(wait.answering())
        return member

    def next_done_ready(self) -> bool:
        """Whether some tasks are over and not yet handed out by `next_done`."""
        return bool(self._done)

    @property
    def open(self) -> int:
        """How many tasks are not over yet."""
        return self._open

    def next_done(self, interrupted: Callable[[], bool] | None = None) -> list[_Member]:
        """Block until some tasks are over (their `final` or `error` set), in the order seen, or
        `interrupted()` (checked under the watch's lock whenever it wakes) says to return.
        Raises `TaskTimeout` (with `.pending`) when the deadline passes first.
        """
        while not self._done:
            if not self._open:
                return []
            with self.watch.changed:
                news = self.inbox.take()
                driven, self._driven = self._driven, {}
            for index, after in driven.items():
                member = self.members[index]
                member.driving = False
                if member.final is None and member.error is None:
                    self._take(member, after)
            for task_id, status in news.items():
                for member in self._by_id.get(task_id, ()):
                    if member.final is None and member.error is None and not member.driving:
                        if status is READ:
                            self._schedule(member, 0.0)
                        else:
                            self._take(member, status)
            now = time.monotonic()
            while self._due and self._due[0][0] <= now:
                due, _, index = heapq.heappop(self._due)
                member = self.members[index]
                if member.due == due and member.final is None and member.error is None and not member.driving:
                    self._take(member, None)
            if self._done:
                break
            if self.deadline.expired():
                raise self._timed_out()
            wake = self._due[0][0] if self._due else None
            if self.deadline.at is not None:
                wake = self.deadline.at if wake is None else min(wake, self.deadline.at)
            with self.watch.changed:
                if interrupted is not None and interrupted():
                    return []
                if not self.inbox.news and not self._driven:
                    wait_condition(self.watch.changed, wake)
        done, self._done = self._done, []
        return done

    def close(self) -> None:
        """Stop following the tasks still open (they keep running on the server); free the
        leases the waits it made hold in a task store.
        """
        ids = [m.task_id for m in self.members]
        self.watch.drop(self.inbox, ids)
        self._exits.close()
        for member in self._made:
            self._end_trace(member, None)  # no longer followed (wait_any's others): no outcome
            member.wait.recorder.close()
        self._made.clear()

    # -- one task -----------------------------------------------------------------------------

    def _take(self, member: _Member, given: Status | BaseException | None) -> None:
        """Observe `given`, or read `member` and observe that; a timeout becomes the group's.
        `given` an exception: the member's offloaded input failed with it.
        """
        if given is None and not self.watch.claim(member.task_id):
            self._schedule(member, self._interval(member))  # the watch reads it: news comes
            return
        try:
            with member.wait.trace.within():  # its requests are its span's children
                if isinstance(given, BaseException):
                    raise given
                if given is None and self.offload is not None:
                    status = member.wait.read_only()
                    if member.wait.needs_drive(status):
                        member.existed = True
                        self._hand_over(member, status, self.offload)
                        return
                else:
                    status = member.wait.read() if given is None else given
                member.existed = True
                final = member.wait.observe(status)
        except TaskTimeout:
            raise self._timed_out() from None
        except McpError as exc:
            if exc.code == INVALID_PARAMS and member.existed and exc.kind != "transport":
                last = member.wait.last
                why = "expired" if last is not None and expired(last) else "forgotten"
                self._fail(member, gone(member.task_id, why, exc))
                return
            # A read that timed out (a slow server) is tried again after a backoff. A server that
            # cannot be reached has had the transport's retries already, the budget a rolling
            # restart needs (see `Retry`): the wait ends, as a single wait's poll does.
            if isinstance(exc, RequestTimeout) and member.failures < MAX_FAILURES:
                member.failures += 1
                self._schedule(member, delay(self._interval(member), streamed=False, failures=member.failures))
                return
            if self.isolate:
                self._fail(member, exc)
                return
            self._end_trace(member, exc)
            raise
        except Exception as exc:  # an input handler that failed
            if self.isolate:
                self._fail(member, exc)
                return
            self._end_trace(member, exc)
            raise
        except BaseException as exc:  # an interrupt
            self._end_trace(member, exc)
            raise
        member.failures = 0
        if final is not None:
            self._finish(member, final)
        else:
            streamed = self.watch.streamed(member.task_id) and not member.wait.input_declined
            just_answered = member.wait.just_answered  # read soon after input was sent
            interval = member.wait.poll_interval(status)
            self._schedule(member, interval if just_answered else delay(interval, streamed=streamed, failures=0))

    def _hand_over(self, member: _Member, status: Status, offload: Callable[[Callable[[], None]], None]) -> None:
        """Answer a 2025-era task's input on `offload`'s thread: the group goes on meanwhile,
        and takes the status the input ends with (or its error) as news.
        """
        wait = member.wait

        def drive() -> None:
            after: Status | BaseException
            try:
                with wait.trace.within():
                    after = wait.drive(status)
            except Exception as exc:  # reaches the group's thread
                after = exc
            with self.watch.changed:
                self._driven[member.index] = after
                self.watch.changed.notify_all()

        offload(drive)
        member.driving = True

    def _interval(self, member: _Member) -> float:
        last = member.wait.last
        return member.wait.settings.poll_interval if last is None else member.wait.poll_interval(last)

    def _schedule(self, member: _Member, after: float) -> None:
        member.due = time.monotonic() + after
        heapq.heappush(self._due, (member.due, next(self._seq), member.index))

    def _finish(self, member: _Member, final: Status) -> None:
        member.final = final
        if member.traced:
            member.wait.trace.finish(final)
        self._end_trace(member, None)
        self._close_member(member)

    def _fail(self, member: _Member, error: Exception) -> None:
        member.error = error
        self._end_trace(member, error)
        self._close_member(member)

    @staticmethod
    def _end_trace(member: _Member, exc: BaseException | None) -> None:
        """End the span this group started for `member`'s wait (once; `exc`: what ended it)."""
        if member.traced:
            member.traced = False
            member.wait.trace.end(exc)

    def _close_member(self, member: _Member) -> None:
        self._open -= 1
        if member.made:
            member.wait.recorder.close()  # its lease is free at once, not when the group closes
        self._done.append(member)
        if all(m.final is not None or m.error is not None for m in self._by_id.get(member.task_id, ())):
            self.watch.drop(self.inbox, [member.task_id])

    def _timed_out(self) -> TaskTimeout:
        pending = [m for m in self.members if m.final is None and m.error is None]
        timeout = self.settings.timeout or 0.0
        first = pending[0] if pending else self.members[0]
        statuses = [m.last() for m in pending]
        if not self.cancel_on_timeout:
            return self._ended(pending, TaskTimeout(first.task_id, timeout, first.wait.last, pending=statuses))
        budget = Deadline(CANCEL_BUDGET)
        cancelled = True
        for member in pending:
            left = budget.remaining()
            try:
                if not left:
                    raise RequestTimeout(CANCEL_BUDGET)
                with member.wait.trace.within():
                    cancel_task(self.client, member.task_id, timeout=left)
            except McpError as exc:
                cancelled = False
                log_cancel_failure(member.task_id, exc)
        timed_out = TaskTimeout(first.task_id, timeout, first.wait.last, cancelled=cancelled, pending=statuses)
        return self._ended(pending, timed_out)

    def _ended(self, pending: list[_Member], timed_out: TaskTimeout) -> TaskTimeout:
        """End the spans of the `pending` waits with the set's `timed_out`; return it."""
        for member in pending:
            self._end_trace(member, timed_out)
        return timed_out


def log_cancel_failure(task_id: str, exc: McpError) -> None:
    """Say that a task could not be cancelled after its wait timed out."""
    import logging

    logging.getLogger("mcp_tasks").warning(
        "could not cancel task %s after its wait timed out: %s", short_id(task_id), exc.message
    )


def _group(client: Client, tasks: Iterable[str | Status], options: Mapping[str, Any], caller: str) -> Group:
    settings, listen = settings_of(options, caller)
    tasks = list(tasks)
    for task in tasks:
        task_id_of(task)  # a bad reference fails before anything is sent
    group = Group(client, settings, listen, Deadline(settings.timeout))
    try:
        group.add(tasks)
    except BaseException:
        group.close()
        raise
    return group


def _outcome(member: _Member) -> Status:
    if member.error is not None:
        raise member.error
    assert member.final is not None
    return member.final


def as_completed(client: Client, tasks: Iterable[str | Status], **options: Unpack[ManyOptions]) -> Iterator[Status]:
    """Yield each task's final Status as it finishes (terminal, or input_required when the input
    strategy does not answer). Options are `wait_task`'s (see `ManyOptions`); `timeout` covers
    the whole set and raises `TaskTimeout` whose `.pending` lists the unfinished tasks. A task
    the server forgot, or that expired, raises a clear `McpError` when its turn comes.
    """
    group = _group(client, tasks, options, "as_completed")
    return _iterate(group)


def _iterate(group: Group) -> Iterator[Status]:
    try:
        while group.open or group.next_done_ready():
            for member in group.next_done():
                yield _outcome(member)
    finally:
        group.close()


def wait_all(client: Client, tasks: Iterable[str | Status], **options: Unpack[ManyOptions]) -> list[Status]:
    """Wait until every task is over; their final Statuses in the order given. See `as_completed`."""
    group = _group(client, tasks, options, "wait_all")
    try:
        while group.open or group.next_done_ready():
            for member in group.next_done():
                _outcome(member)
    finally:
        group.close()
    return [_outcome(m) for m in group.members]


def wait_any(client: Client, tasks: Iterable[str | Status], **options: Unpack[ManyOptions]) -> Status:
    """Wait until one task is over and return its final Status (the others keep running). See
    `as_completed`.
    """
    group = _group(client, tasks, options, "wait_any")
    if not group.members:
        raise ValueError("wait_any() needs at least one task")
    try:
        return _outcome(group.next_done()[0])
    finally:
        group.close()
