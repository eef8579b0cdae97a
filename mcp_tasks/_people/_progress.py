"""The progress of a set of tasks: `SetProgress` follows what the waits of a set see (an
``on_status`` for `wait_all`, `as_completed`, `wait_any` and futures) and gives a `SetSnapshot`
after each change: counts by state, elapsed time, the latest message, the failures by their call
and short id (``export {"report": "q3"} e294…b175``; the short id alone when the call is unknown).

A set wait tells the `on_status` it was given which tasks the set has (``expect``) and which
waits failed (``wait_failed``), and the calls it knows of them (``named``); `submit` and
`bind_future` hand it their futures (``follow``).
Plain ``on_status`` callables are told none of this: they see each status, as before.
"""

from __future__ import annotations

import html
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from typing import Any

import attrs

from mcp_tasks._printable import printable
from mcp_tasks._redact import redact_ids, short_id
from mcp_tasks._status import Status, TaskState

__all__ = ["SetProgress", "SetSnapshot", "clock_text", "set_line"]

SHOWN_FAILURES = 3
"""Failures a line names (the rest are counted)."""

_STATES = ("completed", "failed", "cancelled", "input_required", "working")


def clock_text(seconds: float) -> str:
    """Elapsed seconds as a person reads them: ``4.2s``, ``12s``, ``3m05s``, ``1h02m``."""
    whole = int(seconds)
    if whole < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


@attrs.frozen
class SetSnapshot:
    """Where a set of tasks stands: how many there are (`total`), how many are in each state,
    the seconds since the progress began (`elapsed`), the latest status message (``abcd…wxyz:
    text``, or None) and the failed tasks, in the order they failed, each named by its call and
    short id (``export {"report": "q3"} e294…b175``) or its short id alone when its call is not
    known (values under secret-looking keys hidden, arguments cut to about 40 characters).

    `failed` counts failed tasks, completed ones whose result is a tool error (``isError``), and
    tasks whose wait failed (`FailedWait`); `working` counts the tasks not yet read too.
    """

    total: int
    completed: int
    failed: int
    cancelled: int
    input_required: int
    working: int
    elapsed: float
    latest: str | None = None
    failures: tuple[str, ...] = ()

    @property
    def over(self) -> int:
        """Tasks that are over: completed, failed or cancelled."""
        return self.completed + self.failed + self.cancelled

    @property
    def finished(self) -> bool:
        """Whether every task of the set is over (an empty set is not)."""
        return self.total > 0 and self.over == self.total

    def counts(self) -> str:
        """``37/50 done, 2 failed, 11 working``: the states with tasks in them."""
        parts = [f"{self.completed}/{self.total} done"]
        if self.failed:
            parts.append(f"{self.failed} failed")
        if self.cancelled:
            parts.append(f"{self.cancelled} cancelled")
        if self.input_required:
            parts.append(f"{self.input_required} need{'s' if self.input_required == 1 else ''} input")
        if self.working:
            parts.append(f"{self.working} working")
        return ", ".join(parts)

    def named_failures(self) -> str | None:
        """``failed: export {"report": "q3"} abcd…wxyz, 0123…cdef (+2)``, or None when none failed."""
        if not self.failures:
            return None
        shown = ", ".join(self.failures[:SHOWN_FAILURES])
        more = len(self.failures) - SHOWN_FAILURES
        return f"failed: {shown}" + (f" (+{more})" if more > 0 else "")

    def __str__(self) -> str:
        return set_line(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(set_line(self))

    def _repr_html_(self) -> str:
        rows = [("tasks", self.counts()), ("elapsed", clock_text(self.elapsed))]
        named = self.named_failures()
        if named:
            rows.append(("failures", named.removeprefix("failed: ")))
        if self.latest:
            rows.append(("latest", self.latest))
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(label)}</th>"
            f"<td style='text-align:left'>{html.escape(value)}</td></tr>"
            for label, value in rows
        )
        bar = f"<progress value='{self.over}' max='{max(self.total, 1)}'></progress>"
        title = f"<b>{self.over}/{self.total} tasks over</b>"
        return f"<div>{title} {bar}<table>{body}</table></div>"


def set_line(snapshot: SetSnapshot) -> str:
    """One line: ``[12s] 37/50 done, 2 failed, 11 working · failed: ab12…cd34 · e294…b175: text``
    (the failures before the message, so a narrow terminal keeps them).
    """
    parts = [f"[{clock_text(snapshot.elapsed)}] {snapshot.counts()}"]
    named = snapshot.named_failures()
    if named:
        parts.append(named)
    if snapshot.latest:
        parts.append(snapshot.latest)
    return " · ".join(parts)


def _state(status: Status) -> str:
    state = status.status
    if state is TaskState.COMPLETED:
        return "failed" if isinstance(status.result, dict) and status.result.get("isError") is True else "completed"
    if state in (TaskState.FAILED, TaskState.CANCELLED, TaskState.INPUT_REQUIRED):
        return str(state.value)
    return "working"


class SetProgress:
    """An ``on_status`` that counts a set of tasks and gives `callback` a `SetSnapshot` each time.

    The plain hook for a progress bar of your own (tqdm, rich): `callback` (when given) is
    called with a snapshot after each change::

        def show(snapshot):  # with tqdm: bar.n = snapshot.over
            print(f"{snapshot.over}/{snapshot.total} over")

        mt.wait_all(client, [task], on_status=mt.SetProgress(show))

    Give it to `wait_all`, `as_completed`, `wait_any`, or to each `submit` of a batch: the set
    is every task it was given (one progress per set). `snapshot()` reads it at any time. The
    callback runs in the thread that saw the change, one call at a time.
    """

    def __init__(
        self, callback: Callable[[SetSnapshot], object] | None = None, *, started: float | None = None
    ) -> None:
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable or None, got {callback!r}")
        self._callback = callback
        self._started = time.monotonic() if started is None else started
        self._lock = threading.RLock()
        self._states: dict[str, str] = {}
        self._failures: list[str] = []
        self._labels: dict[str, str] = {}  # a task's call and short id, when known
        self._latest: str | None = None
        self._told = False  # the status being taken in brought a new message
        self._calls = itertools.count(1)  # keys of futures of tools that ran synchronously

    def __call__(self, status: Status) -> None:
        with self._lock:
            if status.status_message:
                text = printable(redact_ids(status.status_message, status.task_id, status.session_id))
                latest = f"{short_id(status.task_id)}: {text}"
                self._told, self._latest = latest != self._latest, latest  # news even in the same state
            self._set(status.task_id, _state(status))

    def expect(self, task_ids: Iterable[str]) -> None:
        """The tasks of a set (a set wait says so as it starts; they count as working)."""
        with self._lock:
            for task_id in task_ids:
                self._states.setdefault(task_id, "working")
            self._changed()

    def wait_failed(self, failed: Status) -> None:
        """The wait of a task of the set failed (a `FailedWait`): it counts as failed."""
        with self._lock:
            self._set(failed.task_id, "failed")

    def named(self, labels: Mapping[str, str]) -> None:
        """What each of these tasks was called with, by task id (``export {"report": "q3"}
        e294…b175``, as `TaskFuture.label` gives it): its failure is shown so.
        """
        with self._lock:
            self._labels.update(labels)

    def follow(self, future: Future[Any]) -> None:
        """Count `future` (a `TaskFuture`) in the set, and its end when it comes."""
        task_id = getattr(future, "task_id", None)
        key = task_id if isinstance(task_id, str) and task_id else f"call-{next(self._calls)}"
        label = getattr(future, "label", None)
        with self._lock:
            if isinstance(label, str) and label:
                self._labels[key] = label
            self._states.setdefault(key, "working")
            self._changed()
        future.add_done_callback(lambda done: self._future_done(key, done))

    def snapshot(self) -> SetSnapshot:
        """Where the set stands now."""
        with self._lock:
            counts = dict.fromkeys(_STATES, 0)
            for state in self._states.values():
                counts[state] += 1
            failures = tuple(
                self._labels.get(key) or short_id(key) for key in self._failures if self._states.get(key) == "failed"
            )
            return SetSnapshot(
                total=len(self._states),
                elapsed=time.monotonic() - self._started,
                latest=self._latest,
                failures=failures,
                **counts,
            )

    def __repr__(self) -> str:
        return f"<SetProgress {self.snapshot().counts()}>"

    # -- internals ----------------------------------------------------------------------------

    def _future_done(self, key: str, future: Future[Any]) -> None:
        if future.cancelled():
            state = "cancelled"
        elif future.exception() is not None:
            status = getattr(future, "status", None)
            seen = _state(status) if isinstance(status, Status) else "working"
            state = seen if seen in ("failed", "cancelled", "input_required") else "failed"  # as the task ended
        else:
            state = "completed"
        with self._lock:
            self._set(key, state)

    def _set(self, key: str, state: str) -> None:
        before = self._states.get(key)
        if before in ("completed", "failed", "cancelled") and state in ("working", "input_required"):
            return  # an old status after the end (a future's last read): the end stays
        if before == state and key in self._states and not self._told:
            return  # nothing new (a future's end after its final status)
        self._told = False
        self._states[key] = state
        if state == "failed" and key not in self._failures:
            self._failures.append(key)
        self._changed()

    def _changed(self) -> None:
        if self._callback is not None:
            self._callback(self.snapshot())
