"""Issue 33 step 8, the watch's cap, against a server of the tests' own (tests/foreign/listen_tasks.py,
no mcp_tasks code): the ids one listen stream carries are capped only by a refusal that names a
limit. Before: a listen refused for one stale id among 16 halved the cap, and a later wait on 16
fresh tasks had 8 on the stream and 8 polled; a stated limit of 8 had 8 ids streamed, 8 polled.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import mcp_tasks as mt
from tests.conftest import Background
from tests.foreign.listen_tasks import ListenTasksServer
from tests.tasks.test_engine_life import FAILSAFE, LONG_POLL_MS, job, read_once

STALE = "stale-task-0000"


def listens(server: ListenTasksServer, after: int = 0) -> list[list[str]]:
    """The ids of each listen the server was asked for (refused or not), in order."""
    events = server.journal.events(lambda e: e.get("rpc") == "subscriptions/listen", after=after)
    return [e["params"]["notifications"]["taskIds"] for e in events]


def reads(server: ListenTasksServer, task_id: str, after: int) -> int:
    events = server.journal.events(lambda e: e.get("rpc") == "tasks/get", after=after)
    return sum(1 for e in events if e["params"].get("taskId") == task_id)


def test_one_stale_id_among_16_leaves_no_cap(listen_server: Callable[..., ListenTasksServer]) -> None:
    server = listen_server(poll_ms=50, complete_on_listen=10_000, refuse=frozenset({STALE}))
    with mt.Client.http(server.url, timeout=10) as client:
        done = [job(client, follow=False) for _ in range(15)]  # (a stream for the set, not each one)
        client.call_tool("finish")
        statuses = mt.wait_all(client, [*done, STALE], timeout=FAILSAFE)
        assert [s.wire_status for s in statuses[:15]] == ["completed"] * 15
        assert isinstance(statuses[15], mt.FailedWait)  # the stale one: tasks/get said it is gone
        first = listens(server)
        assert first[0] == sorted([*(t.task_id for t in done), STALE]) and STALE not in first[-1]
        assert sorted(first[-1]) == sorted(t.task_id for t in done)  # the rest on one stream

        server.poll_ms = LONG_POLL_MS  # a fresh task is read once, then only its stream tells
        mark = server.journal.mark()
        fresh = [job(client, follow=False) for _ in range(16)]
        waiting = Background(lambda: mt.wait_all(client, fresh, timeout=FAILSAFE))
        read_once(server, *fresh)
        later = listens(server, mark)
        assert sorted(later[-1]) == sorted(t.task_id for t in fresh)  # all 16 on one stream
        assert all(reads(server, t.task_id, mark) == 1 for t in fresh)  # the catch-up read only
        client.close()
        with pytest.raises(mt.TransportError):
            waiting.result(FAILSAFE)


def test_a_stated_limit_of_8_puts_16_ids_on_two_streams(listen_server: Callable[..., ListenTasksServer]) -> None:
    server = listen_server(poll_ms=LONG_POLL_MS, complete_on_listen=10_000, cap=8)
    with mt.Client.http(server.url, timeout=10) as client:
        fresh = [job(client, follow=False) for _ in range(16)]
        waiting = Background(lambda: mt.wait_all(client, fresh, timeout=FAILSAFE))
        read_once(server, *fresh)
        asked = listens(server)
        assert [len(ids) for ids in asked] == [16, 8, 8]  # refused, then two streams of 8
        assert sorted(asked[1] + asked[2]) == sorted(t.task_id for t in fresh)
        assert all(reads(server, t.task_id, 0) == 1 for t in fresh)
        client.close()
        with pytest.raises(mt.TransportError):
            waiting.result(FAILSAFE)
