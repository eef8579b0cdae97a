"""Many tasks at once (issue 17) against fastmcp-tasks 4.1.4, which has no subscriptions/listen: the
shared watch finds that out once and every task is polled on its own schedule.
"""

from __future__ import annotations

import concurrent.futures

import pytest

import mcp_tasks as mt
from tests.interop.conftest import Peer
from tests.interop.test_fastmcp_peer import WAIT, started, text_of

pytestmark = pytest.mark.interop


def test_wait_all_as_completed_and_wait_any_are_polled(peer: Peer) -> None:
    client = peer.client(timeout=30.0)  # a client of its own: its watch's threads end with it
    tasks = [started(client, "slow", {"seconds": 0.1 * n, "label": f"t{n}"}) for n in range(1, 6)]
    statuses = mt.wait_all(client, tasks, timeout=WAIT)
    assert [text_of(mt.outcome(s)) for s in statuses] == [f"t{n} done after {0.1 * n}s" for n in range(1, 6)]
    more = [started(client, "slow", {"seconds": 0.2, "label": "a"}), started(client, "long", {"seconds": 30})]
    first = mt.wait_any(client, more, timeout=WAIT)
    assert first.task_id == more[0].task_id
    finished = [s.task_id for s in mt.as_completed(client, [more[0].task_id], timeout=WAIT)]
    assert finished == [more[0].task_id]
    with pytest.raises(mt.TaskTimeout) as timed_out:
        mt.wait_all(client, [more[1]], timeout=0.5, cancel_on_timeout=True)
    assert [s.task_id for s in timed_out.value.pending] == [more[1].task_id]
    client.close()


def test_futures_are_polled(peer: Peer) -> None:
    client = peer.client(timeout=30.0)
    futures = [mt.submit(client, "slow", {"seconds": 0.1, "label": f"f{n}"}) for n in range(3)]
    _, not_done = concurrent.futures.wait(futures, timeout=WAIT)
    assert not not_done
    assert [text_of(f.result()) for f in futures] == [f"f{n} done after 0.1s" for n in range(3)]
    client.close()
