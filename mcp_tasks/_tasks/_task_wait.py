"""The wait on one task, the I/O of its decisions: its deadline, its reads (bounded by it), the
input it answers with its strategy, what it records, and its polling loop. The decisions are
`WaitCore`'s (_wait_core.py): this shell feeds it events and does what each step says.
`wait_task` runs one in the caller's thread (_wait.py); the group core (_group.py) drives many
from one thread.

The first terminal status a wait sees is its outcome, whatever the server says later. When the
client closes, the wait's pause ends at once and it raises the channel's `closed_error()`.

One thread at a time drives a wait (the caller's, the group's, or an input worker the group hands
it to and takes it back from under the watch's lock); a 2025-era server's requests are answered
on the delivery thread, which writes nothing of the wait's (_delivered.py).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, TypeVar

from mcp_tasks._clock import Deadline, wait_sliced
from mcp_tasks._errors import INVALID_PARAMS, REQUEST_TIMEOUT, McpError, TaskTimeout
from mcp_tasks._input import declared_kinds
from mcp_tasks._options import UNSET
from mcp_tasks._redact import short_id
from mcp_tasks._session._turns import Until, waiting_until
from mcp_tasks._status import Status, TaskState
from mcp_tasks._tasks._delivered import DeliveredInput
from mcp_tasks._tasks._options import WaitSettings
from mcp_tasks._tasks._protocol import TaskProtocol, protocol_of
from mcp_tasks._tasks._record import Recorder
from mcp_tasks._tasks._records import store_of
from mcp_tasks._tasks._schedule import expired, gone
from mcp_tasks._tasks._side import side_of
from mcp_tasks._tasks._strategies import HandlersStrategy, ReturnStrategy
from mcp_tasks._tasks._wait_core import Ask, Finish, Raise, ReadAgain, Replay, Send, Step, TakeLease, WaitCore
from mcp_tasks._tracing import NO_TASK_TRACE, TaskTrace

if TYPE_CHECKING:
    from mcp_tasks._client import Client

__all__ = ["TaskWait"]

log = logging.getLogger("mcp_tasks")

T = TypeVar("T")


class TaskWait:
    """One wait: the I/O of its `WaitCore` (see the module)."""

    def __init__(
        self,
        client: Client,
        task_id: str,
        given: Status | None,
        settings: WaitSettings,
        trace: TaskTrace = NO_TASK_TRACE,
        deadline: Deadline | None = None,
    ) -> None:
        self.client = client
        self.trace = trace  # the task's span (client.channel.tracing.task), when the client traces
        self.task_id = task_id
        self.settings = settings
        self.deadline = deadline or Deadline(settings.timeout)
        limit = settings.request_timeout
        self.request_limit: float | None = client.timeout if limit is UNSET else limit
        self.core = WaitCore(
            task_id,
            given,
            store=store_of(client, settings.store) is not None,
            returns=isinstance(settings.input, ReturnStrategy),
            timeout=settings.timeout,
            poll_interval=settings.poll_interval,
            min_poll_interval=settings.min_poll_interval,
        )
        self.dropped = threading.Event()  # set (then `wake_turns()`) by whoever cancels the wait: its future
        self.delivered = DeliveredInput(client, task_id, settings.input, trace, self._asking, lambda: self.core.last)
        self.follow_board = False  # a legacy listen: sleep until a status notification names the task
        self.mark = 0  # the board's count for the task before the last read
        self.protocol: TaskProtocol = self._bounded(lambda step: protocol_of(client.channel, step))
        self.meta = self.protocol.meta()  # merged once for every request of the wait
        self.recorder = Recorder.of(client, task_id, settings.store, self.deadline)

    @property
    def last(self) -> Status | None:
        """The last status the wait took in."""
        return self.core.last

    @property
    def terminal(self) -> Status | None:
        """The first terminal status seen: the outcome."""
        return self.core.terminal

    @property
    def input_declined(self) -> bool:
        """The strategy left some input unanswered: ask again later."""
        return self.core.declined

    @property
    def just_answered(self) -> bool:
        """Input was just sent: read again soon."""
        return self.core.soon

    # -- entry --------------------------------------------------------------------------------

    def run(self, given: Status | None) -> Status:
        """Poll the task in this thread until the wait is over (a 2025-era listen sleeps on the
        session's status notifications between polls); its final Status.
        """
        if given is not None:
            final = self.start(given)
            if final is not None:
                return final
        if self.protocol.era == "modern":
            return self._poll(self._get())
        self.follow_board = self.settings.listen  # a legacy session pushes its status notifications unasked
        with self.answering():
            return self._poll(self._get())

    # -- input asked of a person, and the 2025-era delivery thread's news ----------------------

    def _asking(self) -> AbstractContextManager[None]:
        """While input is answered: a question waiting its turn to ask a person keeps to the
        wait's deadline (then `TaskTimeout`) and leaves when the client closes or `dropped` is set.
        """
        return waiting_until(Until(self.deadline, self.core.timed_out, self._ended))

    def _ended(self) -> BaseException | None:
        """The error that ends this wait now: the client closing, or the wait cancelled."""
        channel = self.client.channel
        if channel.closing.is_set():
            return channel.closed_error()
        if self.dropped.is_set():
            return concurrent.futures.CancelledError(f"the wait on task {short_id(self.task_id)} was cancelled")
        return None

    # -- polling ------------------------------------------------------------------------------

    def _poll(self, status: Status) -> Status:
        while True:
            final = self._observe(status)
            if final is not None:
                return final
            self._sleep(self._interval(status))
            status = self._get()

    def _interval(self, status: Status) -> float:
        self.delivered.drain(self.core)
        return self.core.when(status)

    def _sleep(self, interval: float) -> None:
        left = self.deadline.remaining()  # read once for this step
        if left is not None and left <= 0:
            raise self._timed_out()
        step = interval if left is None else min(interval, left)
        closing = self.client.channel.closing
        if self.follow_board:
            side_of(self.client.channel).board.wait(self.task_id, self.mark, step)
        else:
            wait_sliced(closing, step)
        if closing.is_set():
            raise self._closed(self.client.channel.closed_error())

    # -- observing one status: the core's steps carried out ------------------------------------

    def _observe(self, status: Status) -> Status | None:
        """Take in one status; the final Status when the wait is over, else None."""
        self.delivered.drain(self.core)
        self.core.lease_held(self.recorder.holding)
        leaves = status.status is TaskState.INPUT_REQUIRED and self.protocol.era == "legacy" and self._unanswered()
        return self._do(self.core.seen(status, leaves=leaves))

    def _do(self, step: Step) -> Status | None:
        """Carry out `step` and those that follow it: the final Status, None to read again."""
        while True:
            if step.tell is not None:
                self._tell(step.tell, step.record)
            then = step.then
            if isinstance(then, ReadAgain):
                return None
            if isinstance(then, Finish):
                if then.error is not None:
                    raise then.error
                return then.status
            if isinstance(then, Raise):
                raise then.error
            try:
                step = self._act(then)
            except Exception as exc:  # a store, a strategy or a send that failed
                step = self.core.failed(exc)

    def _act(self, then: TakeLease | Replay | Ask | Send) -> Step:
        core, recorder = self.core, self.recorder
        if isinstance(then, TakeLease):
            return core.took(recorder.take_now())
        if isinstance(then, Replay):
            return core.replayed(recorder.replay(then.pending))
        if isinstance(then, Ask):
            with self._asking():
                return core.responses(self.settings.input.answer(self.client, then.status, then.pending))
        responses = then.responses
        done = recorder.send(responses, lambda: self._update(responses))
        core.lease_held(recorder.holding)  # a lease that lapsed may have been taken again
        if done:
            self.trace.input_round(len(responses))
        return core.sent(done)

    def _update(self, responses: Mapping[str, Any]) -> None:
        self._bounded(lambda step: self.protocol.update(self.task_id, responses, step, self.meta))

    def _tell(self, status: Status, record: Status | None) -> None:
        if record is not None:
            self.recorder.read(record)
            self.core.lease_held(self.recorder.holding)  # an end may have taken it
        log.debug("task %s is %s", short_id(self.task_id), status.wire_status)
        self.trace.status(status)
        if self.settings.on_status is not None:
            self.settings.on_status(status)

    # -- requests bounded by the deadline -----------------------------------------------------

    def _get(self) -> Status:
        status = self._read_once()
        return self._drive(status) if self._needs_drive(status) else status

    def _read_once(self) -> Status:
        """Read the task, without moving a 2025-era task that needs input along."""
        if self.protocol.era == "modern":
            return self._known(lambda: self._bounded(lambda step: self.protocol.read(self.task_id, step, self.meta)))
        self.mark = side_of(self.client.channel).board.version(self.task_id)
        try:
            return self._known(lambda: self._bounded(lambda step: self.protocol.read(self.task_id, step, self.meta)))
        except McpError:
            return self._stopped_or_raise()

    def _known(self, read: Callable[[], Status]) -> Status:
        """`read()`, whose -32602 for a task that existed ends the wait as `_gone` says."""
        try:
            return read()
        except McpError as exc:
            ended = self._gone(exc)
            if ended is None:
                raise
            raise ended from None

    def _gone(self, exc: McpError) -> McpError | None:
        """The error that ends the wait when `exc` (a read's) says the server no longer knows a
        task that existed (-32602 once this wait saw it, or for a task the store keeps): it
        expired (past ``createdAt + ttlMs``) or was forgotten; the store's record ends so too.
        None when `exc` says something else.
        """
        if exc.code != INVALID_PARAMS or exc.kind == "transport":
            return None
        kept = self.recorder.kept()  # one read of the store, on this error only
        if self.last is None and kept is None:
            return None  # never seen: an id the server never had, as far as anyone knows
        last = self.last or (kept.last_status if kept is not None else None)
        why = "expired" if last is not None and expired(last) else "forgotten"
        self.recorder.gone(why, kept)
        return gone(self.task_id, why, exc)

    def _needs_drive(self, status: Status) -> bool:
        return self.protocol.era == "legacy" and status.status is TaskState.INPUT_REQUIRED and not self._unanswered()

    def _unanswered(self) -> bool:
        """What the server may ask is not all answered here: a 2025-era request is left on the
        server (for `resume` elsewhere, or a wait with the handlers), never fetched to be refused.
        """
        strategy = self.settings.input
        if not isinstance(strategy, HandlersStrategy):
            return False
        agreed = self.client.channel.agreed
        declared = agreed.declared if agreed is not None else None
        return strategy.leaves(self.client, None if declared is None else declared_kinds(declared))

    def _drive(self, status: Status) -> Status:
        """Move a 2025-era task that needs input along (its input answered as the server asks);
        the status after.
        """
        try:
            # A person may take a while to answer: the drive has the wait's deadline, no request's.
            owner = self.delivered.answer
            result = self._bounded(lambda _: self.protocol.drive(self.task_id, self.deadline, self.meta, owner))
            if result is None:
                return status
            return self._known(
                lambda: self._bounded(lambda step: self.protocol.read(self.task_id, step, self.meta, result=result))
            )
        except McpError:
            return self._stopped_or_raise()

    def _stopped_or_raise(self) -> Status:
        """In an `except McpError`: the status the input left, when that is why the read failed."""
        self.delivered.drain(self.core)
        stopped = self.core.stop
        if isinstance(stopped, Exception):
            raise stopped
        if stopped is None:
            raise  # the McpError being handled (this is called in its except block)
        return stopped

    def _bounded(self, send: Callable[[Deadline], T]) -> T:
        channel = self.client.channel
        if channel.closing.is_set():
            raise self._closed(channel.closed_error())
        if self.deadline.expired():
            raise self._timed_out()
        try:
            return send(self.deadline.within(self.request_limit))
        except McpError as exc:
            if channel.closing.is_set() and exc.kind == "transport":
                raise self._closed(channel.closed_error(exc)) from exc  # the same error for every wait the close ends
            if exc.code == REQUEST_TIMEOUT and exc.kind == "transport" and self.deadline.expired():
                raise self._timed_out() from exc
            raise

    def _timed_out(self) -> TaskTimeout:
        """The deadline passed: the core ends so (unless over already); the error to raise."""
        self.core.deadline()
        return self.core.timed_out()

    def _closed(self, error: Exception) -> Exception:
        """The client closed: the core ends so (unless over already); `error` is raised."""
        self.core.closed(error)
        return error

    # -- one task of many: the group core (_group.py) drives these ----------------------------

    def start(self, given: Status | None) -> Status | None:
        """Take in the status the wait starts from: the final Status when it is already over (a
        terminal one without its payload decides the outcome too: the next read fetches that).
        on_status hears it; the store has it (the call that read it recorded it), or does not
        keep the task: only an end is written again.
        """
        if given is None:
            return None
        self.core.lease_held(self.recorder.holding)
        return self._do(self.core.start(given))

    def observe(self, status: Status) -> Status | None:
        """Take in one status (input answered, on_status told): the final Status, or None."""
        return self._observe(status)

    def read(self) -> Status:
        """Read the task once (on a 2025-era session, moving it along when it needs input)."""
        return self._get()

    def read_only(self) -> Status:
        """Read the task once; a 2025-era task that needs input is left for `drive`."""
        return self._read_once()

    def needs_drive(self, status: Status) -> bool:
        """Whether `status` is a 2025-era task's need for input, which only `drive` answers."""
        return self._needs_drive(status)

    def drive(self, status: Status) -> Status:
        """Move a 2025-era task that needs input along: it lasts while a person answers."""
        return self._drive(status)

    def answering(self) -> AbstractContextManager[None]:
        """While this block runs, a 2025-era server's requests naming the task come to this wait."""
        if self.protocol.era == "modern":
            return nullcontext()
        return side_of(self.client.channel).answering(self.task_id, self.delivered.answer)

    def poll_interval(self, status: Status) -> float:
        """The interval before the next read: the task's own, or the wait's; floored."""
        return self._interval(status)
