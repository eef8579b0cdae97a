"""What one run of the Celery task does with the status it read: a pure decision (`decide`),
so that the shell in `_run` only does the I/O it names.

The cadence of the checks (`pause`). Each check costs a broker message, a worker slot for a
moment and a ``tasks/get``; what it buys is how soon an end (or a revoke, acted on when the next
check comes due) is seen. So a check waits:

- never less than `check_every`, nor less than the ``pollInterval`` the server asks for (it
  knows its own costs; a server that asks for a long one gets it, and its ends and revokes are
  seen that late);
- longer as the task grows old, a share (`AGE_SHARE`) of its age: a task that has run for a
  minute is unlikely to end within the next second, so checking it every second mostly reads
  "working" again. The checks of a task that runs `D` seconds grow in number with log(D)
  instead of with D, and in a busy fleet the slots go to starts and to tasks near their end;
- but never longer than `LONGEST` × `check_every` for its age alone, so that a result is seen
  within that bound of its end (plus the fleet's queueing), however old its task.

With the defaults (1 s, a server that asks for 1 s) a task of 10 s is read 7 times on an idle
fleet instead of 10; in a busy one, where the slots are the limit, fewer (bench/celery_fleet.py
measures it: reads per task, and how late the last result is against the last end).
"""

from __future__ import annotations

import attrs

from mcp_tasks._status import Status, TaskState

__all__ = ["AGE_SHARE", "LONGEST", "MIN_CHECK", "Check", "Finish", "Revoked", "Step", "TimedOut", "decide", "pause"]

MIN_CHECK = 0.05
"""Seconds: the shortest pause before the next check (a call's deadline that close)."""
AGE_SHARE = 0.5
"""A check waits at least this share of the task's age (see the module's docstring)."""
LONGEST = 2.0
"""The age alone never makes a pause longer than this many `check_every`."""


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


def pause(age: float, poll_interval: float | None, check_every: float, expected: float | None = None) -> float:
    """Seconds before the next check of a task `age` seconds old whose server asks for
    `poll_interval` (None: it says nothing), as the module's docstring explains; never sooner
    than the age `expected` for its end (`_durations`: None, not known).
    """
    floor = max(check_every, poll_interval or 0.0)
    wait = max(floor, min(AGE_SHARE * max(age, 0.0), LONGEST * check_every))
    if expected is not None and age + wait < expected:
        wait = expected - age
    return wait


def decide(
    status: Status,
    now: float,
    deadline: float | None,
    check_every: float,
    began: float | None = None,
    expected: float | None = None,
) -> Step:
    """The next step for `status`, read at `now` (epoch seconds). `deadline` (epoch) ends the follow
    when the call has a ``timeout``; `check_every` is the shortest pause between checks, lengthened
    by the server's ``pollInterval`` and by the task's age since `began` (epoch; None: unknown, as
    new) and, for a working task, by the age `expected` for its end, as `pause` says; the last
    check lands on the deadline. A task still waiting for input after the check shows
    ``INPUT_REQUIRED``: nobody here answered it (its next check is not put off).
    """
    if status.status in (TaskState.COMPLETED, TaskState.FAILED):
        return Finish()
    if status.status is TaskState.CANCELLED:
        return Revoked()
    if deadline is not None and now >= deadline:
        return TimedOut()
    if status.status is not TaskState.WORKING:
        expected = None  # input waits for its answer, not for the tool's usual end
    wait = pause(now - began if began is not None else 0.0, status.poll_interval, check_every, expected)
    if deadline is not None:
        wait = min(wait, max(MIN_CHECK, deadline - now))
    return Check(wait, "INPUT_REQUIRED" if status.status is TaskState.INPUT_REQUIRED else "STARTED")
