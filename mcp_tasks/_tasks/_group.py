"""The group core: task waits driven from one thread (members, their poll schedule, their news
from the client's shared `Watch`), for the waits on a set (_many.py), the futures' driver
(_driver.py) and a single ``wait_task(listen=True)`` (_wait.py). A member's failure (a task the
server does not know, reads that keep failing, an input handler that raised) ends that member
only (a `FailedWait`); only the deadline (`TaskTimeout`, its ``.pending`` the unfinished), the
client's close (the channel's ``closed_error()``) and an interrupt end the group.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from typing import TYPE_CHECKING

from mcp_tasks._clock import Deadline, wait_condition
from mcp_tasks._errors import McpError, RequestTimeout, TaskTimeout
from mcp_tasks._status import Status, TaskState
from mcp_tasks._tasks._helpers import task_id_of
from mcp_tasks._tasks._member import Member
from mcp_tasks._tasks._observer import report_failed
from mcp_tasks._tasks._options import WaitSettings
from mcp_tasks._tasks._record import Claim, Recorder
from mcp_tasks._tasks._record_many import close_all, release_all, take_all
from mcp_tasks._tasks._records import saved_ref, store_of
from mcp_tasks._tasks._schedule import Due, delay
from mcp_tasks._tasks._starts import starts_of
from mcp_tasks._tasks._task_wait import TaskWait
from mcp_tasks._tasks._watch import READ, watch_of

if TYPE_CHECKING:
    from mcp_tasks._client import Client

__all__ = ["MAX_FAILURES", "Group", "Member", "Offload"]

MAX_FAILURES = 5
"""Reads of one task that may time out in a row before its wait gives up."""

Offload = Callable[[Callable[[], None]], None]
"""Where a member's input is answered when not in the group's thread (the futures' input workers)."""


class Group:
    """Task waits sharing one deadline, driven from one thread: `next_done()` blocks until some
    are over, `close()` lets the rest go. `offload`: where input is answered (futures), instead
    of this thread. `on_timeout(pending)`: called when the deadline passes; True when it
    cancelled them all (`TaskTimeout.cancelled`).
    """

    def __init__(
        self,
        client: Client,
        settings: WaitSettings,
        listen: bool,
        deadline: Deadline,
        *,
        offload: Offload | None = None,
        on_timeout: Callable[[list[Member]], bool] | None = None,
    ) -> None:
        self.client, self.settings, self.listen, self.deadline = client, settings, listen, deadline
        self.offload, self.on_timeout = offload, on_timeout
        self.channel = client.channel
        self.watch = watch_of(client.channel)
        self.inbox = self.watch.inbox()
        self.members: list[Member] = []
        self._by_id: dict[str, list[Member]] = {}
        self._due = Due()
        self._done: list[Member] = []
        self._open = 0
        self._exits = ExitStack()  # the 2025-era waits' request owners
        self._made: list[Member] = []
        self._driven: dict[int, tuple[Status | None, Status] | Exception] = {}  # what offloaded input ended with
        self._ending: list[Recorder] = []  # the waits over whose leases are still to be freed (`_free`)

    # -- members ------------------------------------------------------------------------------

    def add(
        self,
        tasks: Iterable[str | Status],
        settings: WaitSettings | None = None,
        listen: bool | None = None,
        *,
        claimed: Claim | None = None,
        taken: tuple[Claim, set[str]] | None = None,
    ) -> list[Member]:
        """Start waiting for `tasks` (ids or Statuses), with the group's settings and listen, or
        these; each wait takes its task's lease in a store when it is free, or holds the one
        `claimed` (from `store.claim`) as its own, or the one in `taken` (`take_all`'s, made by
        the caller for these tasks and others: those this call holds leave its set).
        """
        listen = self.listen if listen is None else listen
        added: list[Member] = []
        streamed: list[str] = []
        cued: list[str] = []
        tasks = list(tasks)
        wait_settings = settings or self.settings
        ids = [task_id_of(task) for task in tasks]
        store = store_of(self.client, wait_settings.store)
        batch = (
            taken
            if taken is not None or claimed is not None
            else take_all(store, ids, self.deadline, starts_of(self.channel).holds_all(store, ids))
        )
        try:
            for task, task_id in zip(tasks, ids, strict=True):
                given = task if isinstance(task, Status) else None
                # read only when traced:
                saved = saved_ref(self.client, task_id, wait_settings.store, wait_settings.timeout)
                trace = self.channel.tracing.task(task_id, saved)  # its span, when the client traces
                wait = TaskWait(self.client, task_id, given, wait_settings, trace, self.deadline)
                wait.recorder.ends_later = True  # its end is recorded with the round's others (`_free`)
                trace.start()
                member = self._member(wait)
                member.traced = member.made = True
                self._made.append(member)
                added.append(member)
                if batch is not None:  # taken for all at once: the first wait of a task holds it
                    took = task_id in batch[1]
                    batch[1].discard(task_id)
                    # asked for its holder, unless it holds the lease its record came with (`Starts`) and the
                    # batch was taken for another
                    asked = wait.recorder.started in (None, batch[0].holder)
                    wait.recorder.take(batch[0] if took else None, asked=asked)
                else:
                    wait.recorder.take(claimed)  # its lease is freed by `close` when anything fails
                if listen:
                    (streamed if wait.protocol.era == "modern" else cued).append(task_id)
                final = wait.start(given)
                if final is not None:
                    self._finish(member, final)
                else:
                    self._schedule(member, self._first_read(wait, given, listen))
        except BaseException:
            if taken is None and batch is not None and batch[1]:  # the leases taken for waits never made
                release_all(store, batch[0].holder, batch[1])
            raise
        if streamed:
            scopes = {m.task_id: m.wait.trace.within for m in added}  # the watch's reads are the waits'
            self.watch.want(self.inbox, streamed, stream=True, scopes=scopes)
        if cued:
            self.watch.want(self.inbox, cued, stream=False)
        if not listen:
            self.watch.unkeep(ids)  # polled: their streams (from their creation) are let go
        self._free()
        return added

    def follow(self, wait: TaskWait) -> Member:
        """Drive a wait made elsewhere, which has taken in its starting status: read it now, then
        follow it on the shared stream.
        """
        member = self._member(wait)
        self._schedule(member, self._first_read(wait, wait.last, self.listen))
        if self.listen:
            modern = wait.protocol.era == "modern"
            self.watch.want(self.inbox, [wait.task_id], stream=modern, scopes={wait.task_id: wait.trace.within})
        return member

    def _first_read(self, wait: TaskWait, given: Status | None, listen: bool) -> float:
        """Seconds to a new member's first read (one going on a stream is read when the watch cues it)."""
        if given is not None:
            return wait.poll_interval(given)
        if listen and wait.protocol.era == "modern":
            return wait.settings.poll_interval
        return 0.0

    def _member(self, wait: TaskWait) -> Member:
        member = Member(len(self.members), wait)
        self.members.append(member)
        self._open += 1
        self._by_id.setdefault(wait.task_id, []).append(member)
        self._exits.enter_context(wait.answering())
        return member

    @property
    def open(self) -> int:
        """How many members are not over yet."""
        return self._open

    def ready(self) -> bool:
        """Whether some members are over, not yet handed out by `next_done`."""
        return bool(self._done)

    def pending(self) -> list[Member]:
        """The members not over yet."""
        return [m for m in self.members if not m.over]

    # -- the loop -----------------------------------------------------------------------------

    def next_done(self, interrupted: Callable[[], bool] | None = None) -> list[Member]:
        """Block until some members are over, in the order seen, or `interrupted()` (checked
        under the watch's lock, which `wake()` takes) says to return. Raises `TaskTimeout` when the
        deadline passes first, the channel's closed error when the client closes.
        """
        while not self._done:
            if not self._open:
                return []
            with self.watch.changed:
                news = self.inbox.take()
                driven, self._driven = self._driven, {}
            self._check_closing()
            for index, after in driven.items():
                member = self.members[index]
                member.driving = False
                if not member.over:
                    self._driven_end(member, after)
            for task_id, status in news.items():
                for member in self._by_id.get(task_id, ()):
                    if not member.over and not member.driving:
                        self._schedule(member, 0.0) if status is READ else self._take(member, status)
            for index in self._due.take(time.monotonic()):
                member = self.members[index]
                if not member.over and not member.driving:
                    self._take(member, None)
            if self._done:
                break
            if self.deadline.expired():
                raise self._timed_out()
            wake = self._due.next()
            if self.deadline.at is not None:
                wake = self.deadline.at if wake is None else min(wake, self.deadline.at)
            with self.watch.changed:
                if interrupted is not None and interrupted():
                    return []
                if not self.inbox.news and not self._driven and not self.channel.closing.is_set():
                    wait_condition(self.inbox.changed, wake)
        self._free()
        done, self._done = self._done, []
        return done

    def cue(self, task_id: str) -> None:
        """Have `next_done` read `task_id` now (from any thread: its state may have changed)."""
        with self.watch.changed:
            self.inbox.news[task_id] = READ
            self.inbox.changed.notify_all()

    def wake(self) -> None:
        """Wake `next_done` (to look at `interrupted()` again)."""
        with self.watch.changed:
            self.inbox.changed.notify_all()

    def _check_closing(self) -> None:
        if self.channel.closing.is_set():
            closed = self.channel.closed_error()
            for member in self.pending():
                self._end_trace(member, closed)
            raise closed

    def close(self) -> None:
        """Stop following the members still open (they keep running on the server); free the
        leases the waits it made hold in a task store.
        """
        self.watch.drop(self.inbox, [m.task_id for m in self.members])
        self._exits.close()
        for member in self._made:
            self._end_trace(member, None)  # no longer followed (wait_any's others): no outcome
        self._ending.extend(member.wait.recorder for member in self._made)
        self._made.clear()
        self._free()

    # -- one member ---------------------------------------------------------------------------

    def _take(self, member: Member, given: Status | None) -> None:
        """Observe `given`, or read `member` and observe that."""
        if given is None:
            with self.watch.changed:
                if not self.watch.claim(member.task_id):
                    self._schedule(member, self._interval(member))  # the watch reads it: news comes
                    return
                heard = self.inbox.news.get(member.task_id)
            if isinstance(heard, Status):
                given = heard  # came on its stream since this pass began: as fresh as a read
        wait = member.wait
        try:
            with wait.trace.within():  # its requests are its span's children
                status = (wait.read_only() if self.offload is not None else wait.read()) if given is None else given
                if self.offload is not None and status.status is TaskState.INPUT_REQUIRED and wait.terminal is None:
                    self._hand_over(member, status, self.offload)
                    return
                final = wait.observe(status)
        except TaskTimeout:
            raise self._timed_out() from None
        except McpError as exc:
            self._failed(member, exc)
            return
        except Exception as exc:  # an input handler that failed
            self._fail(member, exc)
            return
        except BaseException as exc:  # an interrupt
            self._end_trace(member, exc)
            raise
        self._observed(member, status, final)

    def _observed(self, member: Member, status: Status, final: Status | None) -> None:
        member.failures = 0
        if final is not None:
            self._finish(member, final)
            return
        wait = member.wait
        streamed = self.watch.streamed(member.task_id) and not wait.input_declined
        just_answered = wait.just_answered  # read soon after input was sent
        interval = wait.poll_interval(status)
        self._schedule(member, interval if just_answered else delay(interval, streamed=streamed, failures=0))

    def _failed(self, member: Member, exc: McpError) -> None:
        """A read of `member` failed with `exc`: tried again, the member's end, or the group's
        (closing). A task the server forgot is the member's end (its wait says so: `TaskWait._gone`).
        """
        if self.channel.closing.is_set():
            self._check_closing()
        if isinstance(exc, RequestTimeout) and member.failures < MAX_FAILURES:
            # A read that timed out (a slow server) is tried again after a backoff. A server that
            # cannot be reached has had the transport's retries already (see `Retry`): it ends.
            member.failures += 1
            self._schedule(member, delay(self._interval(member), streamed=False, failures=member.failures))
        else:
            self._fail(member, exc)

    def _hand_over(self, member: Member, status: Status, offload: Offload) -> None:
        """Answer `member`'s input on `offload`'s thread: the group goes on meanwhile, and takes
        what the input ends with (the final Status or None, and the status after) as news.
        """
        wait = member.wait

        def answer() -> None:
            after: tuple[Status | None, Status] | Exception
            try:
                with wait.trace.within():
                    seen = wait.drive(status) if wait.needs_drive(status) else status
                    after = (wait.observe(seen), seen)
            except Exception as exc:  # reaches the group's thread
                after = exc
            with self.watch.changed:
                self._driven[member.index] = after
                self.inbox.changed.notify_all()

        member.driving = True
        try:
            offload(answer)
        except McpError:
            member.driving = False
            self._check_closing()
            raise

    def _driven_end(self, member: Member, after: tuple[Status | None, Status] | Exception) -> None:
        if isinstance(after, TaskTimeout):
            raise self._timed_out()
        if isinstance(after, McpError):
            self._failed(member, after)
        elif isinstance(after, Exception):
            self._fail(member, after)
        else:
            self._observed(member, after[1], after[0])

    @staticmethod
    def _interval(member: Member) -> float:
        last = member.wait.last
        return member.wait.settings.poll_interval if last is None else member.wait.poll_interval(last)

    def _schedule(self, member: Member, after: float) -> None:
        self._due.schedule(member.index, time.monotonic() + after)

    def _finish(self, member: Member, final: Status) -> None:
        member.final = final
        if member.traced:
            member.wait.trace.finish(final)
        self._end_trace(member, None)
        self._close_member(member)

    def _fail(self, member: Member, error: Exception) -> None:
        member.error = error
        report_failed(member.wait.settings.on_status, member.outcome())  # no status says so
        self._end_trace(member, error)
        self._close_member(member)

    @staticmethod
    def _end_trace(member: Member, exc: BaseException | None) -> None:
        """End the span this group started for `member`'s wait (once; `exc`: what ended it)."""
        if member.traced:
            member.traced = False
            member.wait.trace.end(exc)

    def _close_member(self, member: Member) -> None:
        self._open -= 1
        if member.made:
            self._ending.append(member.wait.recorder)  # freed before it is handed out, not when the group closes
        self._done.append(member)
        if all(m.over for m in self._by_id.get(member.task_id, ())):
            self.watch.drop(self.inbox, [member.task_id])

    def _free(self) -> None:
        """Free the leases of the waits over since the last time: those of one store in one call."""
        ending, self._ending = self._ending, []
        close_all(ending)

    def _timed_out(self) -> TaskTimeout:
        pending = self.pending()
        timeout = self.deadline.timeout or 0.0
        first = pending[0] if pending else self.members[0]
        statuses = [m.last() for m in pending]
        cancelled = self.on_timeout(pending) if self.on_timeout is not None and pending else False
        timed_out = TaskTimeout(first.task_id, timeout, first.wait.last, cancelled=cancelled, pending=statuses)
        for member in pending:
            self._end_trace(member, timed_out)
        return timed_out
