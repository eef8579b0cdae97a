"""The pure decision of a run of the Celery task (`mcp_tasks.celery._step.decide`): what it does
with the status it read, the call's deadline and the pause between checks; and how late a
check ran, from its ETA (`_chain.late_by`).
"""

from __future__ import annotations

import datetime

import pytest

import mcp_tasks as mt
from mcp_tasks.celery._chain import late_by
from mcp_tasks.celery._durations import KEEP, Durations, duration_of
from mcp_tasks.celery._step import AGE_SHARE, LONGEST, MIN_CHECK, Check, Finish, Revoked, TimedOut, decide, pause

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


def test_a_new_task_is_checked_after_check_every_or_the_servers_poll_interval_if_longer() -> None:
    assert decide(status(S.WORKING), now=0.0, deadline=None, check_every=1.0, began=0.0) == Check(1.0, "STARTED")
    assert decide(status(S.WORKING, poll_ms=10), now=0.0, deadline=None, check_every=1.0) == Check(1.0, "STARTED")
    slow = decide(status(S.WORKING, poll_ms=30_000), now=0.0, deadline=None, check_every=1.0, began=0.0)
    assert slow == Check(30.0, "STARTED")


def test_an_older_task_is_checked_less_often_within_a_bound() -> None:
    def every(age: float) -> float:
        step = decide(status(S.WORKING, poll_ms=1000), now=100.0 + age, deadline=None, check_every=1.0, began=100.0)
        assert isinstance(step, Check)
        return step.countdown

    assert every(1.0) == 1.0 and every(3.0) == pytest.approx(AGE_SHARE * 3.0)
    assert every(2.5) < every(3.5) <= every(60.0) == LONGEST
    assert every(3600.0) == LONGEST  # a result is seen within LONGEST x check_every of its end
    assert pause(3600.0, 30.0, 1.0) == 30.0  # the server's own interval is honoured even then


def test_the_last_check_lands_on_the_deadline() -> None:
    step = decide(status(S.WORKING), now=9.6, deadline=10.0, check_every=1.0)
    assert isinstance(step, Check) and step.state == "STARTED" and step.countdown == pytest.approx(0.4)
    assert decide(status(S.WORKING), now=9.99, deadline=10.0, check_every=1.0) == Check(MIN_CHECK, "STARTED")


def test_input_still_waiting_after_the_check_shows_input_required() -> None:
    assert decide(status(S.INPUT_REQUIRED), now=0.0, deadline=None, check_every=1.0) == Check(1.0, "INPUT_REQUIRED")


def test_how_late_a_check_ran_is_read_from_its_eta_in_any_form_celery_gives() -> None:
    due = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)
    now = due.timestamp() + 2.5
    assert late_by(due.isoformat(), now) == pytest.approx(2.5)
    assert late_by(due.replace(tzinfo=None), now) == pytest.approx(2.5)  # naive: UTC
    assert late_by(due, due.timestamp() - 1) == 0.0  # early: not late
    assert late_by(None, now) == 0.0 and late_by("not a time", now) == 0.0  # no countdown


def test_a_working_task_is_not_checked_before_the_age_its_tool_usually_ends_at() -> None:
    first = decide(status(S.WORKING), now=0.0, deadline=None, check_every=1.0, began=0.0, expected=10.0)
    assert first == Check(10.0, "STARTED")
    later = decide(status(S.WORKING), now=10.5, deadline=None, check_every=1.0, began=0.0, expected=10.0)
    assert later == Check(pause(10.5, None, 1.0), "STARTED")  # past it: the usual cadence
    capped = decide(status(S.WORKING), now=0.0, deadline=3.0, check_every=1.0, began=0.0, expected=10.0)
    assert capped == Check(3.0, "STARTED")  # the deadline still comes first


def test_input_is_not_put_off_to_the_tools_usual_end() -> None:
    asked = decide(status(S.INPUT_REQUIRED), now=0.0, deadline=None, check_every=1.0, began=0.0, expected=10.0)
    assert asked == Check(1.0, "INPUT_REQUIRED")


def task_ran(seconds: float, state: mt.TaskState = S.COMPLETED, created: str = "2026-07-28T10:00:00Z") -> mt.Status:
    began = datetime.datetime.fromisoformat(created.replace("Z", "+00:00"))
    ended = (began + datetime.timedelta(seconds=seconds)).isoformat()
    return mt.Status(task_id="t-1", status=state, created_at=created, last_updated_at=ended)


def test_a_process_expects_the_shortest_of_a_tools_last_durations() -> None:
    durations = Durations()
    assert durations.expected("e", "nap") is None
    for seconds in (12.0, 10.0, 11.0):
        durations.note("e", "nap", task_ran(seconds))
    durations.note("e", "nap", task_ran(1.0, S.FAILED))  # a failure says nothing of the usual end
    durations.note("e", "nap", mt.Status(task_id="t-2", status=S.COMPLETED))  # nor a task without times
    assert durations.expected("e", "nap") == 10.0
    assert durations.expected("e", "other") is None and durations.expected("f", "nap") is None
    for _ in range(KEEP):
        durations.note("e", "nap", task_ran(20.0))
    assert durations.expected("e", "nap") == 20.0  # only the last KEEP count


def test_a_duration_is_read_from_the_servers_times_or_not_at_all() -> None:
    assert duration_of(task_ran(2.5)) == 2.5
    assert duration_of(task_ran(2.5, created="2026-07-28T10:00:00")) == 2.5  # naive: UTC
    assert duration_of(mt.Status(task_id="t", status=S.COMPLETED, created_at="x", last_updated_at="y")) is None
    assert duration_of(task_ran(-1.0)) is None
