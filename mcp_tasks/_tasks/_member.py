"""One task of a group (_group.py): its wait, when it is due next, and how it ended."""

from __future__ import annotations

from mcp_tasks._status import Era, Status, TaskState
from mcp_tasks._tasks._failed import FailedWait
from mcp_tasks._tasks._task_wait import TaskWait

__all__ = ["Member"]


class Member:
    """One task of a group: its wait, where it is due next, and how it ended."""

    __slots__ = ("driving", "error", "failures", "final", "index", "made", "traced", "wait")

    def __init__(self, index: int, wait: TaskWait) -> None:
        self.index = index
        self.wait = wait
        self.traced = False  # its wait's span was started here, and is still to end
        self.made = False  # its wait was made here (not followed): its lease is freed here
        self.driving = False  # its input is being answered on a worker (see `Group.offload`)
        self.final: Status | None = None
        self.error: Exception | None = None
        self.failures = 0

    @property
    def task_id(self) -> str:
        return self.wait.task_id

    @property
    def over(self) -> bool:
        return self.final is not None or self.error is not None

    def last(self) -> Status:
        """The last Status seen (``unknown`` when none was)."""
        era: Era = "legacy" if self.wait.protocol.era == "legacy" else "modern"
        return self.wait.last or Status(task_id=self.task_id, status=TaskState.UNKNOWN, era=era)

    def outcome(self) -> Status:
        """Its final Status, or a `FailedWait` with the error that ended it."""
        if self.error is not None:
            return FailedWait.of(self.last(), self.error)
        assert self.final is not None
        return self.final
