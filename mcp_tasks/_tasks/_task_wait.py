"""The wait on one task: its deadline, its reads (bounded by it), the input it answers with its
strategy, the statuses it has seen, and its polling loop. `wait_task` runs one in the caller's
thread (_wait.py); the group core (_group.py) drives many from one thread.

The first terminal status a wait sees is its outcome, whatever the server says later. When the
client closes, the wait's pause ends at once and it raises the channel's `closed_error()`.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from mcp_tasks._clock import Deadline, wait_sliced
from mcp_tasks._errors import INTERNAL_ERROR, INVALID_PARAMS, REQUEST_TIMEOUT, McpError, TaskTimeout
from mcp_tasks._input import declared_kinds, input_failure
from mcp_tasks._options import UNSET
from mcp_tasks._redact import short_id
from mcp_tasks._session._dispatch import error_response
from mcp_tasks._session._turns import Until, waiting_until
from mcp_tasks._status import Status, TaskState
from mcp_tasks._tasks._contradiction import unsettled
from mcp_tasks._tasks._options import WaitSettings
from mcp_tasks._tasks._protocol import TaskProtocol, protocol_of
from mcp_tasks._tasks._record import Recorder
from mcp_tasks._tasks._schedule import expired, gone, interval_of
from mcp_tasks._tasks._side import side_of
from mcp_tasks._tasks._strategies import HandlersStrategy, ReturnStrategy
from mcp_tasks._tracing import NO_TASK_TRACE, TaskTrace

if TYPE_CHECKING:
    from mcp_tasks._client import Client

__all__ = ["TaskWait"]

log = logging.getLogger("mcp_tasks")

T = TypeVar("T")


def _fingerprint(status: Status) -> tuple[Any, ...]:
    # lastUpdatedAt is left out: some servers move it on every read.
    return (status.wire_status, status.status_message, sorted(status.input_requests), status.result, status.error)


class TaskWait:
    """The state of one wait."""

    def __init__(
        self,
        client: Client,
        task_id: str,
        given: Status | None,
        settings: WaitSettings,
        trace: TaskTrace = NO_TASK_TRACE,
    ) -> None:
        self.client = client
        self.trace = trace  # the task's span (client.channel.tracing.task), when the client traces
        self.task_id = task_id
        self.settings = settings
        self.deadline = Deadline(settings.timeout)
        limit = settings.request_timeout
        self.request_limit: float | None = client.timeout if limit is UNSET else limit
        self.answered: set[str] = set()
        self.last: Status | None = given
        self.seen: tuple[Any, ...] | None = None
        self.just_answered = False
        self.input_declined = False  # the strategy left some input unanswered: ask again later
        self.terminal: Status | None = None  # the first terminal status seen: the outcome
        self.dropped = threading.Event()  # set (then `wake_turns()`) by whoever cancels the wait: its future
        # 2025-era sessions: the server asks for input with requests of its own, answered on the
        # thread that reads them; what stops the wait is kept here for the wait's thread.
        self.stopped: Status | Exception | None = None
        self.follow_board = False  # a legacy listen: sleep until a status notification names the task
        self.mark = 0  # the board's count for the task before the last read
        self.protocol: TaskProtocol = self._bounded(lambda step: protocol_of(client.channel, step))
        self.meta = self.protocol.meta()  # merged once for every request of the wait
        self.recorder = Recorder.of(client, task_id, settings.store, self.deadline)

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

    # -- legacy input: the server's own requests ----------------------------------------------

    def _answer_request(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Answer a 2025-era server's input request about this task with the wait's input
        strategy, as a pending request of the input_required status (keyed by the request's id).
        When the strategy does not answer it, or fails, the server gets an error back and the
        wait stops with that status (or raises that failure).
        """
        key = str(message.get("id"))
        request = {"method": message.get("method"), "params": message.get("params", {})}
        base = self.last or Status(task_id=self.task_id, status=TaskState.WORKING, era="legacy")
        status = attrs.evolve(
            base,
            status=TaskState.INPUT_REQUIRED,
            raw={**base.raw, "taskId": self.task_id, "status": TaskState.INPUT_REQUIRED.value},
            input_requests={key: request},
        )
        try:
            with self._asking():
                responses = self.settings.input.answer(self.client, status, {key: request})
            response = responses.get(key) if isinstance(responses, Mapping) else None
            if responses is not None and not isinstance(response, dict):
                returned = response if isinstance(responses, Mapping) else responses
                raise input_failure(key, ("invalid_return", returned), status)
        except Exception as exc:  # reaches the caller from the wait's own thread
            return self._stop(exc, message, "The client could not answer this request")
        if response is None:
            return self._stop(status, message, "The client's wait returned without answering")
        self.just_answered = True
        self.trace.input_round(1)
        return {"jsonrpc": "2.0", "id": message.get("id"), "result": response}

    def _asking(self) -> AbstractContextManager[None]:
        """While input is answered: a question waiting its turn to ask a person keeps to the
        wait's deadline (then `TaskTimeout`) and leaves when the client closes or `dropped` is set.
        """
        return waiting_until(Until(self.deadline, self._timed_out, self._ended))

    def _ended(self) -> BaseException | None:
        """The error that ends this wait now: the client closing, or the wait cancelled."""
        channel = self.client.channel
        if channel.closing.is_set():
            return channel.closed_error()
        if self.dropped.is_set():
            return concurrent.futures.CancelledError(f"the wait on task {short_id(self.task_id)} was cancelled")
        return None

    def _stop(self, why: Status | Exception, message: dict[str, Any], text: str) -> dict[str, Any]:
        self.stopped = why
        side_of(self.client.channel).board.publish(self.task_id)  # a legacy listen wakes at once
        return error_response(message, McpError(INTERNAL_ERROR, text))

    def _check_stopped(self) -> Status | None:
        stopped = self.stopped
        if isinstance(stopped, Exception):
            raise stopped
        return stopped

    # -- polling ------------------------------------------------------------------------------

    def _poll(self, status: Status) -> Status:
        while True:
            final = self._observe(status)
            if final is not None:
                return final
            self._sleep(self._interval(status))
            status = self._get()

    def _interval(self, status: Status) -> float:
        if self.just_answered:
            # The task was just given its input: look again soon rather than a full interval on.
            self.just_answered = False
            return self.settings.min_poll_interval
        return self._poll_interval(status)

    def _poll_interval(self, status: Status) -> float:
        return interval_of(status, self.settings.poll_interval, self.settings.min_poll_interval)

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
            raise self.client.channel.closed_error()

    # -- observing one status -----------------------------------------------------------------

    def _observe(self, status: Status) -> Status | None:
        """Take in one status; the final Status when the wait is over, else None."""
        stopped = self._check_stopped()
        if stopped is not None:  # a legacy input request the strategy did not answer
            self.last = stopped
            self._notify(stopped)
            return stopped
        first = self.terminal
        if first is not None:  # the outcome is decided; a later read may only bring its payload
            if status.status is first.status and status.detailed and not first.detailed:
                self.terminal = first = status
                self.last = status
                self._notify(status)
            if not first.detailed:  # the read that was to bring its payload did not
                raise unsettled(first, status)
            return first
        self.last = status
        self.input_declined = False
        self._notify(status)
        if status.status is TaskState.INPUT_REQUIRED:
            pending = {k: v for k, v in status.input_requests.items() if k not in self.answered}
            if not pending:
                if self.protocol.era == "legacy" and self._unanswered():
                    return status  # the request waits on the server for a process that answers it
                return None  # the server has not caught up with what this wait sent
            if not self.recorder.may_answer():  # leased elsewhere (read only), or just taken (read again)
                if not self.recorder.holding and isinstance(self.settings.input, ReturnStrategy):
                    return status  # the caller asked for input_required back, whoever answers it
                self.input_declined = True
                self.just_answered = self.recorder.holding
                return None
            responses: dict[str, Any] | None = self.recorder.replay(pending)
            if not responses:
                with self._asking():
                    responses = self.settings.input.answer(self.client, status, pending)
            if responses is None:
                return status
            if not isinstance(responses, Mapping):
                raise input_failure(None, ("invalid_return", responses), status.with_input_requests(pending))
            if responses and self.recorder.send(responses, lambda: self._update(responses)):
                self.answered.update(responses)
                self.just_answered = True
                self.trace.input_round(len(responses))
            self.input_declined = any(key not in responses for key in pending)
            return None
        if status.terminal:
            self.terminal = status
            return status
        return None

    def _update(self, responses: Mapping[str, Any]) -> None:
        self._bounded(lambda step: self.protocol.update(self.task_id, responses, step, self.meta))

    def _notify(self, status: Status, *, record: bool = True) -> None:
        fingerprint = _fingerprint(status)
        if fingerprint != self.seen:
            self.seen = fingerprint
            if record:
                self.recorder.read(status)
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
            owner = self._answer_request
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
        stopped = self._check_stopped()
        if stopped is None:
            raise  # the McpError being handled (this is called in its except block)
        return stopped

    def _bounded(self, send: Callable[[Deadline], T]) -> T:
        channel = self.client.channel
        if channel.closing.is_set():
            raise channel.closed_error()
        if self.deadline.expired():
            raise self._timed_out()
        try:
            return send(self.deadline.within(self.request_limit))
        except McpError as exc:
            if channel.closing.is_set() and exc.kind == "transport":
                raise channel.closed_error(exc) from exc  # the same error for every wait the close ends
            if exc.code == REQUEST_TIMEOUT and exc.kind == "transport" and self.deadline.expired():
                raise self._timed_out() from exc
            raise

    def _timed_out(self) -> TaskTimeout:
        assert self.settings.timeout is not None
        return TaskTimeout(self.task_id, self.settings.timeout, self.last)

    # -- one task of many: the group core (_group.py) drives these ----------------------------

    def start(self, given: Status | None) -> Status | None:
        """Take in the status the wait starts from: the final Status when it is already over (a
        terminal one without its payload decides the outcome too: the next read fetches that).
        """
        if given is None:
            return None
        # on_status hears the status the wait starts from; the store has it (the call that read
        # it recorded it), or does not keep the task: it is not written again.
        self._notify(given, record=given.terminal)
        if given.terminal:
            self.terminal = given
        return given if given.terminal and given.detailed else None

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
        return side_of(self.client.channel).answering(self.task_id, self._answer_request)

    def poll_interval(self, status: Status) -> float:
        """The interval before the next read: the task's own, or the wait's; floored."""
        return self._interval(status)
