"""The pure decision of a run of the Celery task (`mcp_tasks.celery._step.decide`): what it does
with the status it read, the call's deadline and the pause between checks.
"""

from __future__ import annotations

import pytest

import mcp_tasks as mt
from mcp_tasks.celery._step import MIN_CHECK, Check, Finish, Revoked, TimedOut, decide

S = mt.TaskState


def status(state: mt.TaskState, poll_ms: int | None = None) -> mt.Status:
    return mt.Status(task_id="t-1", status=state, poll_interval_ms=poll_ms)


@pytest.mark.parametrize("state", [S.COMPLETED, S.FAILED])
def test_an_end_is_the_result_even_past_the_deadline(state: mt.TaskState) -> None:
    assert decide(status(state), now=100.0, deadline=50.0, check_every=1.0) == Finish()


def test_a_task_cancelled_on_the_server_is_revoked() -> None:
    assert decide(status(S.CANCELLED), now=100.0, deadline=None, check_every=1.0) == Revoked()


def test_a_running_task_past_its_deadline_has_timed_out() -> None:
    assert decide(status(S.WORKING), now=100.0, deadline=100.0, check_every=1.0) == TimedOut()


def test_a_running_task_is_checked_again_after_check_every_whatever_the_server_asks() -> None:
    assert decide(status(S.WORKING, poll_ms=30_000), now=0.0, deadline=None, check_every=1.0) == Check(1.0, "STARTED")
    assert decide(status(S.WORKING, poll_ms=10), now=0.0, deadline=None, check_every=1.0) == Check(1.0, "STARTED")


def test_the_last_check_lands_on_the_deadline() -> None:
    step = decide(status(S.WORKING), now=9.6, deadline=10.0, check_every=1.0)
    assert isinstance(step, Check) and step.state == "STARTED" and step.countdown == pytest.approx(0.4)
    assert decide(status(S.WORKING), now=9.99, deadline=10.0, check_every=1.0) == Check(MIN_CHECK, "STARTED")


def test_input_still_waiting_after_the_check_shows_input_required() -> None:
    assert decide(status(S.INPUT_REQUIRED), now=0.0, deadline=None, check_every=1.0) == Check(1.0, "INPUT_REQUIRED")
