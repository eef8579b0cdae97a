"""When the shared watch places new ids on a stream (`Gather`, _gather.py) and which ids it keeps
for no wait (`Kept`, _kept.py): pure decisions, times given.
"""

from __future__ import annotations

import pytest

from mcp_tasks._tasks._gather import (
    GATHER,
    KEEP_GATHER,
    MAX_MERGE_GATHER,
    MAX_PATIENCE,
    MERGE_GATHER,
    MERGE_GROWTH,
    Gather,
)
from mcp_tasks._tasks._kept import Kept


def test_the_first_ids_go_on_a_stream_at_once() -> None:
    """Before: 20 ms were gathered before the first stream opened, so a fresh wait whose task
    ended at once heard of it 20 ms late."""
    gather = Gather()
    gather.notice(100.0)
    assert gather.wait(100.005, streams=0, room=1, capped=False, waited=True) == 0.0


def test_ids_for_an_open_stream_are_gathered_for_a_merge() -> None:
    gather = Gather()
    gather.notice(100.0)
    assert gather.wait(100.1, streams=1, room=1, capped=False, waited=True) == pytest.approx(MERGE_GATHER - 0.1)
    assert gather.wait(101.0, streams=1, room=1, capped=False, waited=True) == 0.0
    gather.placed(101.0)
    gather.notice(102.0)  # gathered anew from the next id seen
    assert gather.wait(102.0, streams=1, room=1, capped=False, waited=True) == pytest.approx(MERGE_GATHER)


def test_under_a_cap_ids_are_gathered_to_fill_a_stream() -> None:
    gather = Gather()
    gather.notice(5.0)
    assert gather.wait(5.0, streams=0, room=4, capped=True, waited=True) == pytest.approx(GATHER)
    assert gather.wait(5.0, streams=2, room=4, capped=True, waited=True) == pytest.approx(GATHER)
    assert gather.wait(5.0, streams=4, room=4, capped=True, waited=True) == pytest.approx(MERGE_GATHER)


def test_ids_no_wait_wants_yet_are_gathered_even_with_no_stream_open() -> None:
    """Tasks just made (kept, no wait yet): a burst of creations is placed in a few opens, and a
    polling wait that lets its task go meanwhile costs no stream."""
    gather = Gather()
    gather.notice(0.0)
    assert gather.wait(0.0, streams=0, room=1, capped=False, waited=False) == pytest.approx(KEEP_GATHER)
    assert gather.wait(0.1, streams=0, room=1, capped=False, waited=True) == 0.0  # a wait wants one now
    assert gather.wait(0.0, streams=1, room=1, capped=False, waited=False) >= MERGE_GATHER


def test_a_notice_keeps_the_first_time() -> None:
    gather = Gather()
    gather.notice(1.0)
    gather.notice(1.2)
    assert gather.wait(1.2, streams=1, room=1, capped=False, waited=True) == pytest.approx(MERGE_GATHER - 0.2)


def burst(gather: Gather, start: float, merges: int, *, waited: bool) -> tuple[float, list[float]]:
    """`merges` merges of a burst (an id new right after each placement): the time after the
    last, and each merge's gather."""
    now, gathers = start, []
    for _ in range(merges):
        gather.notice(now)
        gathered = gather.wait(now, streams=1, room=1, capped=False, waited=waited)
        gathers.append(gathered)
        now += gathered
        gather.placed(now)
    return now, gathers


def test_merges_of_a_burst_gather_longer_each_time_up_to_a_ceiling() -> None:
    """Issue 36 item 7. Before: every merge gathered 0.25 s, so 10,000 tasks made over a minute
    reopened their stream some 300 times."""
    for waited in (False, True):
        _, gathers = burst(Gather(), 0.0, 8, waited=waited)
        assert gathers[:3] == pytest.approx([MERGE_GATHER, MERGE_GATHER * MERGE_GROWTH, MERGE_GATHER * MERGE_GROWTH**2])
        assert gathers == sorted(gathers)
        assert gathers[-1] == pytest.approx(MAX_MERGE_GATHER)


def kept_burst(gather: Gather, merges: int, *, oldest: float = 0.0) -> list[float]:
    """A burst of tasks made from `oldest` on that nobody waits on yet: each merge's gather."""
    now, gathers = oldest + KEEP_GATHER, []
    for _ in range(merges):
        gather.notice(now)
        gathered = gather.wait(now, streams=1, room=1, capped=False, waited=False, oldest=oldest)
        gathers.append(gathered)
        now += gathered
        gather.placed(now)
    return gathers


def test_a_burst_of_tasks_that_live_long_is_merged_ever_less_often() -> None:
    """Issue 36 item 7: once the merge gather is at its ceiling, a burst of tasks none of which
    has ended waits as long as the burst is old (each merge about doubles the time since it
    began), up to `MAX_PATIENCE`. Before: a merge every `MAX_MERGE_GATHER`, so 10,000 tasks made
    over 37 s opened 37 streams."""
    gathers = kept_burst(Gather(), 10)
    assert gathers[:3] == pytest.approx([MERGE_GATHER, MERGE_GATHER * MERGE_GROWTH, MAX_MERGE_GATHER])
    made = KEEP_GATHER + sum(gathers[:3])  # the burst's age at the first merge past the ceiling
    assert gathers[3] == pytest.approx(made)
    assert gathers[4] == pytest.approx(2 * made)
    assert max(gathers) == pytest.approx(MAX_PATIENCE)


def test_the_shortest_life_heard_bounds_the_patience() -> None:
    """Tasks heard to end after 3 s: a merge waits at most 1.5 s, so the next ones are on a
    stream before they end; a gather never drops below the ceiling it grew to."""
    gather = Gather()
    gather.ended(5.0)
    gather.ended(3.0)
    gathers = kept_burst(gather, 10)
    assert max(gathers) == pytest.approx(1.5)
    gather.ended(0.5)
    assert gather.patience(100.0, 0.0) == pytest.approx(0.25)
    assert kept_burst(gather, 6, oldest=200.0)[-1] == pytest.approx(MAX_MERGE_GATHER)


def test_a_wait_that_wants_an_id_ends_the_patience() -> None:
    gather = Gather()
    now = KEEP_GATHER + sum(kept_burst(gather, 6))
    gather.notice(now)
    assert gather.wait(now, streams=1, room=1, capped=False, waited=False, oldest=0.0) > MAX_MERGE_GATHER
    assert gather.wait(now, streams=1, room=1, capped=False, waited=True, oldest=0.0) <= MAX_MERGE_GATHER


def test_a_quiet_stream_merges_quickly_again() -> None:
    """Once nothing new came for a whole gather after a placement, a new id (a fresh wait) is
    merged after `MERGE_GATHER` again, not after the burst's long gather."""
    gather = Gather()
    now, _ = burst(gather, 0.0, 6, waited=False)
    later = now + MAX_MERGE_GATHER + 0.1
    gather.notice(later)
    assert gather.wait(later, streams=1, room=1, capped=False, waited=True) == pytest.approx(MERGE_GATHER)


def test_placements_that_are_no_merge_do_not_grow_the_gather() -> None:
    gather = Gather()
    for at in (0.0, 0.01, 0.02):
        gather.notice(at)
        assert gather.wait(at, streams=0, room=4, capped=True, waited=True) == pytest.approx(GATHER)
        gather.placed(at)
    assert gather.merge == MERGE_GATHER


def test_kept_ids_are_let_go_after_their_time_in_order() -> None:
    kept = Kept(hold=10.0, most=100)
    assert kept.add("a", 0.0) == [] and kept.add("b", 4.0) == [] and kept.add("a", 5.0) == []
    assert kept.next() == 10.0 and "a" in kept and len(kept) == 2
    assert kept.due(9.9) == []
    assert kept.due(10.0) == ["a"]
    assert kept.next() == 14.0
    assert kept.due(100.0) == ["b"] and kept.next() is None


def test_kept_ids_say_when_they_were_kept() -> None:
    kept = Kept(hold=10.0, most=100)
    assert kept.oldest() is None and kept.since("a") is None
    kept.add("a", 3.0)
    kept.add("b", 4.0)
    assert kept.oldest() == 3.0 and kept.since("b") == 4.0
    kept.take("a")
    assert kept.oldest() == 4.0


def test_a_wait_takes_a_kept_id_once() -> None:
    kept = Kept(hold=10.0, most=100)
    kept.add("a", 0.0)
    assert kept.take("a") is True
    assert kept.take("a") is False and kept.due(50.0) == []


def test_beyond_the_most_kept_the_oldest_go() -> None:
    kept = Kept(hold=10.0, most=2)
    kept.add("a", 0.0)
    kept.add("b", 1.0)
    assert kept.add("c", 2.0) == ["a"]
    assert "a" not in kept and len(kept) == 2


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="most >= 1"):
        Kept(hold=1.0, most=0)
