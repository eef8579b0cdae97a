"""Who asks, and one question at a time: the task an input handler is answering for (`asking_for`,
`asker`), and the turns that keep questions from interleaving (`TURNS`). The session and the tasks
set these as they answer input; what a person sees of them (`mcp_tasks._people._asking`: taking
a turn, live lines holding still) stands above.

Several tasks may ask at once (futures answer input on a pool of workers, threads wait side by
side): a person can answer only one question at a time, so each form is asked whole, in the order
the tasks asked, while the others wait their turn. While a question is on the screen, the live
status lines (`StatusDisplay`) hold still: they end their line before it, and draw again after.

A wait that answers input says until when it may wait its turn (`waiting_until`): its deadline,
its client's closing signal, its own cancellation. A question still in the queue at the deadline
leaves it with the wait's own timeout error; one in the queue when its client closes (or its wait
is cancelled) leaves it at once (`wake_turns`) with the client's closed error (or the wait's). A
question already being asked is never cut short.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

import attrs

from mcp_tasks._call_text import task_label
from mcp_tasks._clock import Deadline, block_for

__all__ = [
    "TURNS",
    "Asker",
    "Line",
    "Turns",
    "Until",
    "asker",
    "asking_for",
    "current_until",
    "waiting_until",
    "wake_turns",
]


@attrs.frozen
class Asker:
    """The task whose input is being answered: its id and, when this client knows it, its tool
    and its arguments' short form (`arguments_text`).
    """

    task_id: str
    tool: str | None = None
    arguments: str = ""

    @property
    def label(self) -> str:
        """``greet {"name": "Ann"} e294…b175``: the call (when known) and the task's short id."""
        return task_label(self.task_id, self.tool, self.arguments)


_ASKER: ContextVar[Asker | None] = ContextVar("mcp_tasks_asker", default=None)


@contextmanager
def asking_for(task_id: str, tool: str | None, arguments: str = "") -> Iterator[None]:
    """While this block runs (in this thread), input handlers answer for `task_id` of `tool`
    (called with `arguments`, in short).
    """
    token = _ASKER.set(Asker(task_id, tool, arguments))
    try:
        yield
    finally:
        _ASKER.reset(token)


def asker() -> Asker | None:
    """The task whose input this thread is answering, or None (a request that names no task)."""
    return _ASKER.get()


@attrs.frozen
class Until:
    """How long a question may wait its turn: until `deadline` passes (then `timed_out()` is
    raised), or until `ended()` gives the error that ends its wait now (its client closing, the
    wait cancelled); whoever ends a wait so calls `wake_turns()`.
    """

    deadline: Deadline
    timed_out: Callable[[], BaseException]
    ended: Callable[[], BaseException | None]


_UNTIL: ContextVar[Until | None] = ContextVar("mcp_tasks_until", default=None)


@contextmanager
def waiting_until(until: Until) -> Iterator[None]:
    """While this block runs (in this thread), a question waits its turn only as `until` says."""
    token = _UNTIL.set(until)
    try:
        yield
    finally:
        _UNTIL.reset(token)


def current_until() -> Until | None:
    """What `waiting_until` set in this thread (None: a question waits for ever)."""
    return _UNTIL.get()


class Line(Protocol):
    """A live terminal line that holds still while a question is asked."""

    def suspend(self) -> None:
        """End the line and stop drawing it."""

    def resume(self) -> None:
        """Draw the line again, if it has something to show."""


class Turns:
    """Questions asked one after another, first come first served (a queue of the waiting)."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.RLock())
        self._queue: deque[object] = deque()  # the questions waiting, in the order they came
        self._owner: int | None = None  # the thread asking now
        self._depth = 0
        self._lines: weakref.WeakSet[Line] = weakref.WeakSet()

    @contextmanager
    def turn(self, until: Until | None = None) -> Iterator[int]:
        """Wait for this thread's turn; yields how many others wait behind it. A wait that is
        interrupted (Ctrl-C), or that `until` ends (its deadline, its client closing), leaves the
        queue, so the questions behind it still come.
        """
        me = threading.get_ident()
        with self._changed:
            nested = self._owner == me  # a question inside a question (a handler that asks twice)
            if nested:
                self._depth += 1
            else:
                place = object()
                self._queue.append(place)
                self._changed.notify_all()  # (`queued` changed)
                try:
                    while self._owner is not None or self._queue[0] is not place:
                        self._changed.wait(self._step(until))
                except BaseException:
                    self._queue.remove(place)
                    self._changed.notify_all()
                    raise
                self._queue.popleft()
                self._owner, self._depth = me, 1
            waiting = len(self._queue)
            lines = [] if nested else list(self._lines)
        try:
            for line in lines:
                line.suspend()
            yield waiting
        finally:
            with self._changed:
                self._depth -= 1
                last = self._depth == 0
                if last:
                    self._owner = None
                    self._changed.notify_all()
                lines = list(self._lines) if last and not self._queue else []
            for line in lines:
                line.resume()

    @staticmethod
    def _step(until: Until | None) -> float | None:
        """How long to block once more (None: until notified); raises what `until` says is over."""
        if until is None:
            return block_for(None)
        ended = until.ended()
        if ended is not None:
            raise ended
        if until.deadline.expired():
            raise until.timed_out()
        return block_for(until.deadline.remaining())

    def wake(self) -> None:
        """Have every waiting question look again at what ends its wait (a client is closing)."""
        with self._changed:
            self._changed.notify_all()

    def queued(self, at_least: int, timeout: float) -> bool:
        """Block until `at_least` questions wait behind the one being asked (False after `timeout`)."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self._queue) >= at_least, timeout)

    def queued_at_most(self, at_most: int, timeout: float) -> bool:
        """Block until no more than `at_most` questions wait their turn (False after `timeout`)."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self._queue) <= at_most, timeout)

    def held(self) -> bool:
        """Whether a question is being asked now (live lines do not draw)."""
        with self._changed:
            return self._owner is not None

    def register(self, line: Line) -> None:
        """Have `line` hold still while questions are asked (kept weakly)."""
        with self._changed:
            self._lines.add(line)


TURNS = Turns()
"""The one queue of questions to the person running this process."""


def wake_turns() -> None:
    """A client is closing (or a wait was cancelled): its questions waiting their turn leave the
    queue now.
    """
    TURNS.wake()
