"""When each member of a wait on many tasks is read next (`Due`): pure, so tested alone."""

from __future__ import annotations

from mcp_tasks._tasks._schedule import Due


def test_members_come_up_earliest_first_and_once() -> None:
    due = Due()
    due.schedule(2, 5.0)
    due.schedule(0, 1.0)
    due.schedule(1, 1.0)
    assert due.next() == 1.0
    assert due.take(0.5) == []
    assert due.take(1.0) == [0, 1]  # equal times: in the order scheduled
    assert due.take(10.0) == [2]
    assert due.take(10.0) == [] and due.next() is None


def test_a_member_scheduled_again_keeps_only_its_latest_time() -> None:
    due = Due()
    due.schedule(0, 1.0)
    due.schedule(0, 3.0)  # read later after all
    assert due.take(2.0) == []
    assert due.take(3.0) == [0]
    due.schedule(1, 4.0)
    due.schedule(1, 2.0)  # read sooner
    assert due.take(2.0) == [1]
    assert due.take(4.0) == []
