"""The decisions of a worker that runs for ever (`Pace`): when it claims, how many tasks it asks
for, how it backs off a store that fails, and when it says an outage began and ended.
"""

from __future__ import annotations

import pytest

from mcp_tasks._tasks._pace import BACKOFF_FIRST, BACKOFF_MOST, Pace, claim_interval


def test_it_claims_once_a_second_at_most_and_faster_for_short_leases() -> None:
    assert claim_interval(15.0) == 1.0
    assert claim_interval(0.6) == pytest.approx(0.2)  # a third of the ttl: before a lapsed lease has waited long


def test_it_claims_at_once_then_on_its_cadence() -> None:
    pace = Pace(limit=4, interval=1.0)
    assert pace.wanted(100.0) == 4 and pace.wait(100.0) == 0.0
    assert not pace.claimed(100.0, 1)
    assert pace.wanted(100.5) == 0 and pace.wait(100.5) == 0.5
    assert pace.wanted(101.0) == 3  # the places its limit leaves


def test_a_full_worker_claims_nothing_until_a_task_ends() -> None:
    pace = Pace(limit=2, interval=1.0)
    pace.claimed(0.0, 2)
    assert pace.wanted(50.0) == 0 and pace.wait(50.0) is None  # nothing to wait for but an end
    pace.ended()
    assert pace.wanted(50.0) == 1 and pace.wait(50.0) == 0.0  # the place is filled at once
    pace.ended(5)  # more than held (a follower that freed its tasks): never below none
    assert pace.held == 0 and pace.wanted(50.0) == 2


def test_a_failing_store_is_backed_off_doubling_to_a_bound() -> None:
    pace = Pace(limit=1, interval=1.0)
    waits = []
    now = 0.0
    for _ in range(8):
        pace.failed(now)
        waits.append(pace.due - now)
        assert pace.wanted(now) == 0 and pace.wanted(pace.due) == 1
        now = pace.due
    assert waits[0] == BACKOFF_FIRST and waits == sorted(waits) and waits[-1] == BACKOFF_MOST
    assert waits[:4] == [0.5, 1.0, 2.0, 4.0]
    pace.claimed(now, 0)
    assert pace.failures == 0 and pace.due == now + 1.0  # back to its cadence


def test_an_outage_is_said_once_when_it_begins_and_once_when_it_ends() -> None:
    pace = Pace(limit=1, interval=1.0)
    assert not pace.claimed(0.0, 0)  # no outage: nothing to say
    assert [pace.failed(t) for t in (1.0, 2.0, 3.0)] == [True, False, False]
    assert pace.claimed(4.0, 0)  # it answers again
    assert not pace.claimed(5.0, 0)
    assert pace.failed(6.0)  # a new outage is said again
