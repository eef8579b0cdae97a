"""Waiting for a task: one deadline, polled in the caller's thread (or fed by the client's shared
listen stream, read in worker threads: see _watch.py), input answered by a strategy, and a clear
error when time runs out.

The task keeps running on the server after a wait gives up: wait again, or cancel it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, cast

import attrs

from mcp_tasks._clock import Deadline, pause
from mcp_tasks._dispatch import error_response
from mcp_tasks._errors import (
    INTERNAL_ERROR,
    REQUEST_TIMEOUT,
    McpError,
    TaskTimeout,
)
from mcp_tasks._input import input_failure
from mcp_tasks._options import UNSET
from mcp_tasks._redact import short_id
from mcp_tasks._status import Status, TaskState
from mcp_tasks._tasks._helpers import cancel_task, outcome, task_id_of
from mcp_tasks._tasks._options import CANCEL_BUDGET, WaitOptions, WaitSettings
from mcp_tasks._tasks._protocol import TaskProtocol, protocol_of
from mcp_tasks._tasks._record import Recorder, saved_ref, store_of
from mcp_tasks._tasks._side import side_of
from mcp_tasks._tasks._strategies import ReturnStrategy
from mcp_tasks._trace_hook import NO_TASK_TRACE, TaskTrace

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from mcp_tasks._client import Client

__all__ = ["CallOptions", "await_task", "call_and_await", "wait_task"]

log = logging.getLogger("mcp_tasks")

T = TypeVar("T")


def _fingerprint(status: Status) -> tuple[Any, ...]:
    # lastUpdatedAt is left out: some servers move it on every read.
    return (status.wire_status, status.status_message, sorted(status.input_requests), status.result, status.error)


class _Wait:
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
        # 2025-era sessions: the server asks for input with requests of its own, answered on the
        # thread that reads them; what stops the wait is kept here for the wait's thread.
        self.stopped: Status | Exception | None = None
        self.follow_board = False  # a legacy listen: sleep until a status notification names the task
        self.mark = 0  # the board's count for the task before the last read
        self.protocol: TaskProtocol = self._bounded(lambda step: protocol_of(client.channel, step))
        self.meta = self.protocol.meta()  # merged once for every request of the wait
        self.recorder = Recorder(store_of(client, settings.store), task_id, self.deadline)  # a store's ledger and lease

    # -- entry --------------------------------------------------------------------------------

    def run(self, given: Status | None) -> Status:
        if given is not None:
            self._notify(given)  # on_status hears the status the wait starts from
            if given.terminal and given.detailed:
                return given
        if self.protocol.era == "modern":
            return self._shared() if self.settings.listen else self._poll(self._get())
        side = side_of(self.client.channel)
        self.follow_board = self.settings.listen  # a legacy session pushes its status notifications unasked
        with side.answering(self.task_id, self._answer_request):
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
        suggested = status.poll_interval_ms / 1000 if status.poll_interval_ms else self.settings.poll_interval
        return max(suggested, self.settings.min_poll_interval)

    def _sleep(self, interval: float) -> None:
        left = self.deadline.remaining()  # read once for this step
        if left is not None and left <= 0:
            raise self._timed_out()
        step = interval if left is None else min(interval, left)
        if self.follow_board:
            side_of(self.client.channel).board.wait(self.task_id, self.mark, step)
        else:
            pause(step)

    # -- listening ----------------------------------------------------------------------------

    def _shared(self) -> Status:
        """Follow the task on the client's shared listen stream (no thread of its own): a group
        of one wait, driven in this thread.
        """
        from mcp_tasks._tasks._many import Group  # the group drives waits like this one

        group = Group(self.client, self.settings, True, self.deadline, cancel_on_timeout=False)
        try:
            return group.adopt(self)
        finally:
            group.close()

    # -- observing one status -----------------------------------------------------------------

    def _observe(self, status: Status) -> Status | None:
        """Take in one status; the final Status when the wait is over, else None."""
        stopped = self._check_stopped()
        if stopped is not None:  # a legacy input request the strategy did not answer
            self.last = stopped
            self._notify(stopped)
            return stopped
        self.last = status
        self.input_declined = False
        self._notify(status)
        if status.status is TaskState.INPUT_REQUIRED:
            pending = {k: v for k, v in status.input_requests.items() if k not in self.answered}
            if not pending:
                return None  # the server has not caught up with what this wait sent
            if not self.recorder.may_answer():  # leased elsewhere (read only), or just taken (read again)
                if not self.recorder.holding and isinstance(self.settings.input, ReturnStrategy):
                    return status  # the caller asked for input_required back, whoever answers it
                self.input_declined = True
                self.just_answered = self.recorder.holding
                return None
            responses = self.recorder.replay(pending) or self.settings.input.answer(self.client, status, pending)
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
            return status
        return None

    def _update(self, responses: Mapping[str, Any]) -> None:
        self._bounded(lambda step: self.protocol.update(self.task_id, responses, step, self.meta))

    def _notify(self, status: Status) -> None:
        fingerprint = _fingerprint(status)
        if fingerprint != self.seen:
            self.seen = fingerprint
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
            return self._bounded(lambda step: self.protocol.read(self.task_id, step, self.meta))
        self.mark = side_of(self.client.channel).board.version(self.task_id)
        try:
            return self._bounded(lambda step: self.protocol.read(self.task_id, step, self.meta))
        except McpError:
            return self._stopped_or_raise()

    def _needs_drive(self, status: Status) -> bool:
        return self.protocol.era == "legacy" and status.status is TaskState.INPUT_REQUIRED

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
            return self._bounded(lambda step: self.protocol.read(self.task_id, step, self.meta, result=result))
        except McpError:
            return self._stopped_or_raise()

    def _stopped_or_raise(self) -> Status:
        """In an `except McpError`: the status the input left, when that is why the read failed."""
        stopped = self._check_stopped()
        if stopped is None:
            raise  # the McpError being handled (this is called in its except block)
        return stopped

    def _bounded(self, send: Callable[[Deadline], T]) -> T:
        if self.deadline.expired():
            raise self._timed_out()
        try:
            return send(self.deadline.within(self.request_limit))
        except McpError as exc:
            if exc.code == REQUEST_TIMEOUT and exc.kind == "transport" and self.deadline.expired():
                raise self._timed_out() from exc
            raise

    def _timed_out(self) -> TaskTimeout:
        assert self.settings.timeout is not None
        return TaskTimeout(self.task_id, self.settings.timeout, self.last)

    # -- one task of many: the waits on a set of tasks (_many.py) drive these -----------------

    def start(self, given: Status | None) -> Status | None:
        """Take in the status the wait starts from: the final Status when it is already over."""
        if given is None:
            return None
        self._notify(given)  # on_status hears the status the wait starts from
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


TaskWait = _Wait
"""The wait on one task, for the waits on many tasks."""


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
    given one) and once for each change it sees. A task still running when the time is up keeps
    running, unless ``cancel_on_timeout=True``: then the wait spends at most `CANCEL_BUDGET`
    (0.25 s) more asking the server to cancel it before raising `TaskTimeout`.
    """
    return _run(client, task, WaitSettings.of(options, "wait_task"))


def await_task(client: Client, task: str | Status, **options: Unpack[WaitOptions]) -> dict[str, Any]:
    """Wait for the task and return its CallToolResult: `outcome(wait_task(...))`, with the same
    options.

    Raises `TaskFailed`, `TaskCancelled` or `InputRequired` for those outcomes, and `TaskTimeout`
    when the wait runs out of time.
    """
    return outcome(_run(client, task, WaitSettings.of(options, "await_task")))


class CallOptions(TypedDict, total=False):
    """The options of the ``tools/call`` that `call_and_await` sends."""

    timeout: float | None
    meta: Mapping[str, Any] | None


def _call_options(value: object) -> CallOptions:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"call_and_await(): call_opts must be a dict or None, got {type(value).__name__}")
    unknown = sorted(set(value) - set(CallOptions.__annotations__))
    if unknown:
        raise TypeError(f"call_and_await(): unknown call_opts {', '.join(map(repr, unknown))} (use timeout, meta)")
    return cast(CallOptions, value)


def call_and_await(
    client: Client,
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    call_opts: CallOptions | None = None,
    **options: Unpack[WaitOptions],
) -> dict[str, Any]:
    """Call a tool and, if the server made it a task, wait for its result.

    `call_opts` go to the ``tools/call`` (``timeout``, ``meta``: see `CallOptions`); the other
    options are `wait_task`'s, whose `timeout` bounds the wait only. A tool that ran synchronously
    returns its result at once.
    """
    from mcp_tasks._tasks._helpers import call_tool

    settings = WaitSettings.of(options, "call_and_await")  # bad options fail before the call is sent
    call = _call_options(call_opts)
    called = call_tool(client, name, arguments, timeout=call.get("timeout", UNSET), meta=call.get("meta"))
    if isinstance(called, Status):
        return outcome(_run(client, called, settings))
    return called


def _run(client: Client, task: str | Status, settings: WaitSettings) -> Status:
    task_id = task_id_of(task)
    saved = saved_ref(client, task_id, settings.store, settings.timeout)  # read only when traced: a resume's link
    with client.channel.tracing.task(task_id, saved) as trace:  # the wait's span, when the client traces
        final = _waited(client, task, settings, trace)
        trace.finish(final)
        return final


def _waited(client: Client, task: str | Status, settings: WaitSettings, trace: TaskTrace) -> Status:
    task_id = task_id_of(task)
    given = task if isinstance(task, Status) else None
    wait: _Wait | None = None
    try:
        wait = _Wait(client, task_id, given, settings, trace)
        return wait.run(given)
    except TaskTimeout as timed_out:
        if settings.cancel_on_timeout:
            raise _cancelled_after(client, timed_out, task_id) from None
        raise
    except KeyboardInterrupt as interrupt:
        if hasattr(interrupt, "add_note"):  # Python 3.11+
            interrupt.add_note(
                f"mcp_tasks: task {short_id(task_id)} is still running on the server; wait for it again or cancel it"
            )
        raise
    finally:
        if wait is not None:
            wait.recorder.close()  # a lease it held is free at once


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
