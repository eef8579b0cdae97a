"""The bound a caller puts on its store calls (`store_deadline`) and the hurry of a client closing
(`Hurry`): read by a store as a call begins (`store_bound`), followed in flight (`on_hurry`).
"""

from __future__ import annotations

import time

from mcp_tasks._store import Hurry, on_hurry, store_bound, store_deadline
from mcp_tasks._store._bound import QUICK


def test_a_hurry_brings_the_bound_forward_and_an_earlier_bound_is_kept() -> None:
    hurry = Hurry()
    far = time.monotonic() + 3600
    with store_deadline(far, hurry):
        assert store_bound() == far
        hurry.set()
        bound = store_bound()
        assert bound is not None and bound < far
        assert bound >= time.monotonic()  # one quick try, even after the hurry's own time
    near = time.monotonic() - 1
    with store_deadline(near, hurry):
        assert store_bound() == near  # already past: the caller's own bound stands
    with store_deadline(None):
        assert store_bound() is None


def test_a_call_in_flight_follows_its_owners_hurry() -> None:
    hurry = Hurry()
    moved: list[float] = []
    with store_deadline(None, hurry), on_hurry(moved.append):
        assert moved == []
        before = time.monotonic()
        hurry.set()
        hurry.set()  # once only
        assert len(moved) == 1 and moved[0] >= before + QUICK
    hurry_later = Hurry()
    hurry_later.set()
    with store_deadline(None, hurry_later), on_hurry(moved.append):
        assert len(moved) == 2  # a call that begins hurried is told at once
    with on_hurry(moved.append):  # no owner: nothing to follow
        pass
    assert len(moved) == 2
