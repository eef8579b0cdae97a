"""The decisions of one wait on a task, with no I/O: events go in (a status read or pushed, the
lease taken or lost, answers replayed, given or sent, a 2025-era request answered or refused on
the delivery thread, a call that failed, the deadline, close) and each gives a `Step` back: tell
of a status and maybe record it, then read again, take the lease, replay, ask, send, raise or
finish. `TaskWait` (_task_wait.py) does the I/O and feeds the events.

What it keeps to, whatever the order of events:

- the first terminal status seen is the outcome (a later read may only bring its payload);
- a status is recorded only while the wait holds the task's lease; an end is the one exception:
  the shell records it after taking the lease when it is free (`Recorder.read`), and nothing
  unfinished is recorded after an end;
- an input key is sent at most once (a key sent is never pending again here);
- once finished (an outcome, the deadline, close) the wait stays finished as it was.

Its events come from one thread at a time (the wait's, or the input worker a group hands the
wait to under the watch's lock); the delivery thread never touches it (see `TaskWait`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Union

import attrs

from mcp_tasks._errors import TaskTimeout
from mcp_tasks._input import input_failure
from mcp_tasks._status import Status, TaskState
from mcp_tasks._tasks._contradiction import unsettled
from mcp_tasks._tasks._schedule import interval_of

__all__ = ["Ask", "Finish", "Raise", "ReadAgain", "Replay", "Send", "Step", "TakeLease", "WaitCore"]

Pending = dict[str, dict[str, Any]]


@attrs.frozen
class ReadAgain:
    """Read the task again, after `WaitCore.when`."""


@attrs.frozen
class TakeLease:
    """Input waits while another may hold the lease: try to take it (then `WaitCore.took`)."""


@attrs.frozen
class Replay:
    """Look in the store for answers to `pending` written and never acknowledged (then `replayed`)."""

    pending: Pending


@attrs.frozen
class Ask:
    """Ask the input strategy for `pending`, the requests of `status` (then `WaitCore.responses`)."""

    status: Status
    pending: Pending


@attrs.frozen
class Send:
    """Send `responses` to the server, through the store's ledger (then `WaitCore.sent`)."""

    responses: dict[str, Any]


@attrs.frozen
class Raise:
    """A call of this step failed: raise `error` (the wait may be read again after it)."""

    error: Exception


@attrs.frozen
class Finish:
    """The wait is over: its final `status`, or the `error` that ends it."""

    status: Status | None = None
    error: Exception | None = None


Next = Union[ReadAgain, TakeLease, Replay, Ask, Send, Raise, Finish]

READ_AGAIN = ReadAgain()


@attrs.frozen
class Step:
    """What the shell does after one event, in order: tell of `tell` (log, trace, on_status),
    record `record` in the store (an end: only once its lease is taken), then `then`.
    """

    then: Next = READ_AGAIN
    tell: Status | None = None
    record: Status | None = None


def _fingerprint(status: Status) -> tuple[Any, ...]:
    # lastUpdatedAt is left out: some servers move it on every read.
    return (status.wire_status, status.status_message, sorted(status.input_requests), status.result, status.error)


class WaitCore:
    """The decisions of one wait (see the module). `store`: the wait has a task store (input then
    waits for the lease, and answers are replayed from it); `returns`: its strategy returns input
    to the caller; `timeout`: the wait's, for its `TaskTimeout`.
    """

    def __init__(
        self,
        task_id: str,
        given: Status | None = None,
        *,
        store: bool = False,
        returns: bool = False,
        timeout: float | None = None,
        poll_interval: float = 1.0,
        min_poll_interval: float = 0.05,
    ) -> None:
        self.task_id, self.store, self.returns, self.timeout = task_id, store, returns, timeout
        self.poll_interval, self.min_poll_interval = poll_interval, min_poll_interval
        self.last: Status | None = given  # the last status taken in
        self.terminal: Status | None = None  # the first terminal status seen: the outcome
        self.answered: set[str] = set()  # the keys this wait sent
        self.holding = False  # the lease, as the last event said
        self.soon = False  # input was just sent: read again at the floor
        self.declined = False  # input was left unanswered: ask again later
        self.ended: Finish | None = None
        self._seen: tuple[Any, ...] | None = None
        self._asking: tuple[Status, Pending] | None = None  # the input being answered
        self._sending: dict[str, Any] = {}
        self._stop: Status | Exception | None = None  # a 2025-era request the wait could not answer
        self._ended_recorded = False  # an end was handed to the store

    # -- statuses -----------------------------------------------------------------------------

    def start(self, given: Status) -> Step:
        """The status the wait starts from (its caller recorded it, unless it is an end): over
        when it is an end with its payload; an end without decides the outcome too.
        """
        if self.ended is not None:
            return Step(self.ended)
        tell, record = self._news(given, record=given.terminal)
        if given.terminal:
            self.terminal = given
            if given.detailed:
                return Step(self._end(given), tell, record)
        return Step(READ_AGAIN, tell, record)

    def seen(self, status: Status, *, leaves: bool = False) -> Step:
        """A status read or pushed. `leaves`: a 2025-era input request is left on the server for
        a process that answers it (then an input_required with nothing new to answer ends the wait).
        """
        if self.ended is not None:
            return Step(self.ended)
        self._asking = None
        first = self.terminal
        if first is not None:  # decided: a later status may only bring its payload
            tell = record = None
            if status.status is first.status and status.detailed and not first.detailed:
                self.terminal = self.last = first = status
                tell, record = self._news(status)
            if not first.detailed:  # the read that was to bring it said another state
                return Step(self._end(error=unsettled(first, status)), tell, record)
            return Step(self._end(first), tell, record)
        stop = self._stop
        if isinstance(stop, Exception):
            return Step(self._end(error=stop))
        if stop is not None:
            self.last = stop
            tell, record = self._news(stop)
            return Step(self._end(stop), tell, record)
        self.last = status
        self.declined = False
        tell, record = self._news(status)
        if status.status is TaskState.INPUT_REQUIRED:
            pending = {k: v for k, v in status.input_requests.items() if k not in self.answered}
            if not pending:  # the server has not caught up with what this wait sent, or waits for another
                return Step(self._end(status) if leaves else READ_AGAIN, tell, record)
            self._asking = (status, pending)
            if self.store and not self.holding:
                return Step(TakeLease(), tell, record)
            return Step(Replay(pending) if self.store else Ask(status, pending), tell, record)
        if status.terminal:
            self.terminal = status
            return Step(self._end(status), tell, record)
        return Step(READ_AGAIN, tell, record)

    def _news(self, status: Status, *, record: bool = True) -> tuple[Status | None, Status | None]:
        """`status` to tell of when it differs from the last one told, and to record when also
        allowed: an end, or a status while the lease is held and no end was recorded.
        """
        fingerprint = _fingerprint(status)
        if fingerprint == self._seen:
            return None, None
        self._seen = fingerprint
        if not record:
            return status, None
        if status.terminal:
            self._ended_recorded = True
            return status, status
        return status, status if self.holding and not self._ended_recorded else None

    # -- the lease ----------------------------------------------------------------------------

    def lease_held(self, held: bool) -> None:
        """The lease was taken or lost (by a renewal, an end recorded, a send that took it again)."""
        self.holding = held

    def took(self, taken: bool) -> Step:
        """After `TakeLease`: a lease just taken answers nothing yet (whoever held it may have
        answered meanwhile: read again soon); one held elsewhere leaves the input to its holder,
        or to the caller when the strategy returns input.
        """
        if self.ended is not None:
            return Step(self.ended)
        asking, self._asking = self._asking, None
        self.holding = taken
        if not taken and self.returns and asking is not None:
            return Step(self._end(asking[0]))
        self.declined = True
        self.soon = taken
        return Step()

    # -- answering ----------------------------------------------------------------------------

    def replayed(self, answers: Mapping[str, Any]) -> Step:
        """After `Replay`: answers an earlier wait wrote and never saw acknowledged go again as
        they were; with none, the strategy is asked.
        """
        if self.ended is not None or self._asking is None:
            return Step(self.ended or READ_AGAIN)
        status, pending = self._asking
        if answers:
            return self.responses(answers)
        return Step(Ask(status, pending))

    def responses(self, responses: object) -> Step:
        """After `Ask` (or a replay): what to send. None returns the status to the caller; a
        value that is no mapping is the strategy's failure.
        """
        if self.ended is not None or self._asking is None:
            return Step(self.ended or READ_AGAIN)
        status, pending = self._asking
        if responses is None:
            return Step(self._end(status))
        if not isinstance(responses, Mapping):
            failure = input_failure(None, ("invalid_return", responses), status.with_input_requests(pending))
            return Step(self._end(error=failure))
        fresh = {key: value for key, value in responses.items() if key not in self.answered}
        if not fresh:
            return self._asked(responses)
        self._sending = fresh
        return Step(Send(fresh))

    def sent(self, done: bool) -> Step:
        """After `Send`: `done`, the server has the answers; else another wait took the lease over
        meanwhile, and answers now.
        """
        if self.ended is not None or self._asking is None:
            return Step(self.ended or READ_AGAIN)
        sending, self._sending = self._sending, {}
        if done:
            self.answered.update(sending)
            self.soon = True
        return self._asked(sending)

    def _asked(self, responses: Mapping[str, Any]) -> Step:
        asking, self._asking = self._asking, None
        assert asking is not None
        self.declined = any(key not in responses for key in asking[1])
        return Step()

    # -- the 2025-era delivery thread's news (handed over by the shell) -----------------------

    def stopped(self, why: Status | Exception) -> None:
        """A request the strategy did not answer (`why`: the status it leaves) or failed on."""
        self._stop = why

    def answered_in_place(self) -> None:
        """A 2025-era request was answered: read again soon."""
        self.soon = True

    @property
    def stop(self) -> Status | Exception | None:
        """What a 2025-era request left unanswered, if anything (see `stopped`)."""
        return self._stop

    # -- ends from outside --------------------------------------------------------------------

    def failed(self, error: Exception) -> Step:
        """A call of the step failed (the store, the strategy, the send): the input being
        answered is dropped; the shell raises `error`, and may read again.
        """
        self._asking, self._sending = None, {}
        return Step(self.ended or Raise(error))

    def deadline(self) -> Step:
        """The wait's deadline passed."""
        return Step(self._end(error=self.timed_out()))

    def closed(self, error: Exception) -> Step:
        """The client closed (`error`: its closed error), or the wait was cancelled."""
        return Step(self._end(error=error))

    def timed_out(self) -> TaskTimeout:
        """The `TaskTimeout` of this wait, with the last status seen."""
        return TaskTimeout(self.task_id, self.timeout or 0.0, self.last)

    def _end(self, status: Status | None = None, *, error: Exception | None = None) -> Finish:
        if self.ended is None:
            self.ended = Finish(status, error)
            self._asking = None
        return self.ended

    # -- when -------------------------------------------------------------------------------

    def when(self, status: Status) -> float:
        """Seconds before the next read: the floor just after input was sent, else the task's
        own interval or the wait's.
        """
        if self.soon:
            self.soon = False
            return self.min_poll_interval
        return interval_of(status, self.poll_interval, self.min_poll_interval)
