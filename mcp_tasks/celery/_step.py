"""What one run of the Celery task does with the status it read: a pure decision (`decide`),
so that the shell in `_task` only does the I/O it names.
"""

from __future__ import annotations

import attrs

from mcp_tasks._status import Status, TaskState

__all__ = ["MIN_CHECK", "Check", "Finish", "Revoked", "Step", "TimedOut", "decide"]

MIN_CHECK = 0.05
"""Seconds: the shortest pause before the next check (a server that asks for less is not followed)."""


@attrs.frozen
class Finish:
    """The task ended completed or failed: store its outcome as the Celery result."""


@attrs.frozen
class Revoked:
    """The task was cancelled on the server: the Celery result is REVOKED."""


@attrs.frozen
class TimedOut:
    """The call's own ``timeout`` passed with the task unfinished."""


@attrs.frozen
class Check:
    """Check again in `countdown` seconds; `state` is the Celery state to show meanwhile
    (``STARTED``, or ``INPUT_REQUIRED`` when the task waits for input nobody here answers).
    """

    countdown: float
    state: str


Step = Finish | Revoked | TimedOut | Check


def decide(status: Status, now: float, deadline: float | None, check_every: float) -> Step:
    """The next step for `status`, read at `now` (epoch seconds). `deadline` (epoch) ends the follow
    when the call has a ``timeout``; `check_every` is the pause between checks (a revoke is acted
    on at the next check, so the server's own poll interval does not lengthen it). A task still
    waiting for input after the check shows ``INPUT_REQUIRED``: nobody here answered it.
    """
    if status.status in (TaskState.COMPLETED, TaskState.FAILED):
        return Finish()
    if status.status is TaskState.CANCELLED:
        return Revoked()
    if deadline is not None and now >= deadline:
        return TimedOut()
    pause = check_every
    if deadline is not None:
        pause = min(pause, max(MIN_CHECK, deadline - now))
    return Check(pause, "INPUT_REQUIRED" if status.status is TaskState.INPUT_REQUIRED else "STARTED")
