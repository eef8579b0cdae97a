"""What the waits on a set tell an ``on_status`` that follows the whole set (`StatusDisplay`,
`SetProgress`): the tasks of the set as it starts, the waits that failed, the futures of a batch;
and what a single wait tells one that shows progress (`StatusDisplay.progress`) or names its
task by its call (`StatusDisplay.task_named`). An
``on_status`` without these methods (any plain callable) is told nothing more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from typing import Any, Protocol, runtime_checkable

from mcp_tasks._status import Status
from mcp_tasks._tasks._progress_keeper import OnProgress

__all__ = [
    "ProgressObserver",
    "SetObserver",
    "expect_set",
    "follow_future",
    "name_task",
    "progress_callback",
    "report_failed",
]


@runtime_checkable
class SetObserver(Protocol):
    """An ``on_status`` that follows a set of tasks."""

    def __call__(self, status: Status) -> object:
        """A status one of the set's waits saw."""

    def expect(self, task_ids: Iterable[str]) -> None:
        """The tasks of a set wait, as it starts."""

    def wait_failed(self, failed: Status) -> None:
        """A task's wait failed (a `FailedWait`, which no status reports)."""

    def follow(self, future: Future[Any]) -> None:
        """A future of a batch (`submit`, `bind_future`), to count until it is done."""


def expect_set(
    on_status: object, task_ids: Iterable[str], labels: Callable[[], Mapping[str, str]] | None = None
) -> None:
    """Tell a set observer the tasks of its set, and (when it takes them: a ``named`` method) the
    calls known of them, which `labels` gives (``export {"report": "q3"} e294…b175`` by task id).
    """
    if isinstance(on_status, SetObserver):
        on_status.expect(task_ids)
        named = getattr(on_status, "named", None)
        if labels is not None and callable(named):
            named(labels())


def name_task(on_status: object, label: str) -> None:
    """Tell an ``on_status`` that names its task (a ``task_named`` method) the task's call and
    short id (``export {"report": "q3"} e294…b175``).
    """
    named = getattr(on_status, "task_named", None)
    if callable(named):
        named(label)


def report_failed(on_status: object, failed: Status) -> None:
    """Tell a set observer that a task's wait failed."""
    if isinstance(on_status, SetObserver):
        on_status.wait_failed(failed)


def follow_future(on_status: object, future: Future[Any]) -> None:
    """Tell a set observer of a future it is to count."""
    if isinstance(on_status, SetObserver):
        on_status.follow(future)


@runtime_checkable
class ProgressObserver(Protocol):
    """An ``on_status`` that also shows a task's progress."""

    def __call__(self, status: Status) -> object:
        """A status the wait saw."""

    def progress(self, progress: float, total: float | None, message: str | None) -> object:
        """The task's latest progress (``notifications/progress``)."""


def progress_callback(on_progress: OnProgress | None, on_status: object) -> OnProgress | None:
    """What hears a wait's progress: `on_progress`, and `on_status` when it shows progress too."""
    shows = on_status.progress if isinstance(on_status, ProgressObserver) else None
    if shows is None or on_progress is None:
        return on_progress or shows

    def both(progress: float, total: float | None, message: str | None) -> None:
        on_progress(progress, total, message)
        shows(progress, total, message)

    return both
