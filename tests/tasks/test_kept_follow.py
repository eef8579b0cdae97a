"""Issue 36 item 8: the tasks a client makes are followed from their creation, whichever way they
are waited on later, against a server of the tests' own (tests/foreign/listen_tasks.py, no
mcp_tasks code). Before: `call_tool` opened no stream; a set waited on once all its tasks were made
began following them then, and read each one whose end it had missed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._tasks import _gather, _kept
from mcp_tasks._tasks._cap import MAX_STREAMS
from mcp_tasks._tasks._gather import MAX_MERGE_GATHER, MERGE_GATHER
from mcp_tasks._tasks._watch import watch_of
from tests.conftest import eventually, mcp_threads
from tests.foreign.listen_tasks import ListenTasksServer
from tests.tasks.test_engine_life import FAILSAFE, LONG_POLL_MS


def job(client: mt.Client) -> mt.Status:
    """A task made with `call_tool`'s defaults."""
    task = mt.call_tool(client, "job")
    assert isinstance(task, mt.Status)
    return task


def listened(server: ListenTasksServer, ids: list[str]) -> None:
    """Wait until the server is asked for a stream of exactly `ids` (no wait asked for one)."""
    server.journal.wait_for(
        lambda e: e.get("rpc") == "subscriptions/listen" and e["params"]["notifications"]["taskIds"] == ids,
        timeout=FAILSAFE,
        what=f"a listen for {len(ids)} task(s) made, before any wait",
    )


def listen_threads() -> list[str]:
    return [name for name in mcp_threads() if name.startswith("mcp_tasks-listen-")]


def test_an_end_heard_before_the_wait_costs_the_wait_no_read(
    listen_server: Callable[..., ListenTasksServer],
) -> None:
    """The stream opened at creation hears the task end (with its result); the keeper lets the
    stream go, and `wait_all` later takes the end it kept: no read, no stream of its own."""
    server = listen_server(poll_ms=LONG_POLL_MS, complete_on_listen=10_000, burst=(("completed", "done early"),))
    with mt.Client.http(server.url, timeout=10) as client:
        watch = watch_of(client.channel)
        task = job(client)
        listened(server, [task.task_id])
        heard = lambda: getattr(watch._keeper.news.get(task.task_id), "terminal", False)  # noqa: E731
        eventually(lambda: heard() and not watch.placed(), timeout=FAILSAFE, message="its end heard, its stream let go")
        eventually(lambda: not listen_threads(), timeout=FAILSAFE, message="the stream's reader gone")
        mark = server.journal.mark()
        (final,) = mt.wait_all(client, [task], timeout=FAILSAFE)
        assert mt.outcome(final)["content"][0]["text"] == "done early"
        asked = server.journal.events(lambda e: e.get("rpc") in ("tasks/get", "subscriptions/listen"), after=mark)
        assert asked == []


def test_a_set_made_first_is_on_one_stream_before_its_wait(listen_server: Callable[..., ListenTasksServer]) -> None:
    """300 tasks made, then waited on: all are on a stream before the wait begins, with the
    watch's manager and one reader (no thread more), and each is read at most once."""
    server = listen_server(poll_ms=LONG_POLL_MS, complete_on_listen=10_000)
    with mt.Client.http(server.url, timeout=10) as client:
        watch = watch_of(client.channel)
        tasks = [job(client) for _ in range(300)]
        made = {t.task_id for t in tasks}
        eventually(lambda: watch.placed() == made, timeout=FAILSAFE, message="all 300 placed")
        names = [n for n in mcp_threads() if n.startswith(("mcp_tasks-watch", "mcp_tasks-listen-"))]
        assert "mcp_tasks-watch" in names and len(names) <= 1 + MAX_STREAMS
        client.call_tool("finish")
        statuses = mt.wait_all(client, tasks, timeout=FAILSAFE)
        assert [s.wire_status for s in statuses] == ["completed"] * 300
        reads = server.journal.events(lambda e: e.get("rpc") == "tasks/get")
        per_task = [sum(1 for e in reads if e["params"].get("taskId") == t) for t in made]
        assert max(per_task) <= 1


def test_ids_no_wait_takes_are_let_go(
    listen_server: Callable[..., ListenTasksServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beyond the most kept (here 1), the oldest is let go: its stream closes, the newer one's
    opens; a wait that wants it later reads it and follows it as before."""
    monkeypatch.setattr(_kept, "MAX_KEPT", 1)
    server = listen_server(poll_ms=LONG_POLL_MS, complete_on_listen=10_000)
    with mt.Client.http(server.url, timeout=10) as client:
        watch = watch_of(client.channel)
        first = job(client)
        listened(server, [first.task_id])
        second = job(client)
        listened(server, [second.task_id])
        eventually(lambda: watch.placed() == {second.task_id}, timeout=FAILSAFE, message="the first let go")
        mark = server.journal.mark()
        client.call_tool("finish")
        statuses = mt.wait_all(client, [first, second], timeout=FAILSAFE)
        assert [s.wire_status for s in statuses] == ["completed", "completed"]
        reads = server.journal.events(lambda e: e.get("rpc") == "tasks/get", after=mark)
        assert first.task_id in {e["params"].get("taskId") for e in reads}  # (what was heard is forgotten)


def placement_times(monkeypatch: pytest.MonkeyPatch, notes: list[str] | None = None) -> list[float]:
    """A list the times the watch places each gathered batch on a stream go in (a listen each),
    by its own clock: a gather begins after the placement before it, so load can only lengthen
    the time between two (the server's receipt of a listen, which load may delay, is no bound).
    `notes`, when given, gets what decided each placement (for a failure's message)."""
    placed: list[float] = []
    place, decide = _gather.Gather.placed, _gather.Gather.wait
    last: dict[str, object] = {}

    def noted(gather: _gather.Gather, now: float) -> None:
        placed.append(now)
        if notes is not None:
            notes.append(f"placed at {now:.3f} after a gather of {last}")
        place(gather, now)

    def decided(gather: _gather.Gather, now: float, **options: Any) -> float:
        wait = decide(gather, now, **options)
        last.update(options, noticed=gather.noticed, merge=gather.merge, now=round(now, 3), wait=round(wait, 3))
        return wait

    monkeypatch.setattr(_gather.Gather, "placed", noted)
    monkeypatch.setattr(_gather.Gather, "wait", decided)
    return placed


def test_a_long_burst_of_creations_reopens_its_stream_less_and_less_often(
    listen_server: Callable[..., ListenTasksServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36 item 7: tasks made one after another for seconds are merged onto the stream after
    a gather that doubles with each merge (up to `MAX_MERGE_GATHER`; the tasks' patience, which
    may take it further, is held to that here). Before: every 0.25 s, so 10,000 tasks made over a
    minute opened some 300 streams. Measured: the time from the first merge to the fifth is at
    least the gathers between them (a bound load can only raise)."""
    monkeypatch.setattr(_gather, "MAX_PATIENCE", MAX_MERGE_GATHER)
    monkeypatch.setattr(_gather, "BURST_QUIET", float("inf"))  # (a stall of the loop is no end)
    server = listen_server(poll_ms=LONG_POLL_MS, complete_on_listen=10_000)
    placed = placement_times(monkeypatch)
    with mt.Client.http(server.url, timeout=10) as client:
        while len(placed) < 6:
            job(client)
    gathers = [min(MERGE_GATHER * 2**k, MAX_MERGE_GATHER) for k in range(1, 5)]  # 0.5, 1, 1, 1
    assert placed[5] - placed[1] >= sum(gathers)


def test_a_burst_of_tasks_that_live_on_opens_ever_fewer_streams(
    listen_server: Callable[..., ListenTasksServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36 item 7: tasks made one after another, none of which ends, are merged onto their
    stream ever less often: once the merge gather is at its ceiling, each merge waits as long as
    the burst is old, so the time since the first task was made at least doubles from one listen
    to the next, and a burst of length T costs about log2(T) streams. Before: a merge every
    `MAX_MERGE_GATHER` past the ceiling, so 10,000 tasks made over 37 s opened 37 streams (the
    gathers are a tenth of their size here, so the burst takes seconds, not a minute).

    The patience is the age of the oldest task still kept, so the doubling holds while no task of
    the burst is let go: here the keeper keeps them all (a fast machine makes more than
    `MAX_KEPT` in these seconds; the burst this one stands for is ten times slower)."""
    monkeypatch.setattr(_gather, "KEEP_GATHER", _gather.KEEP_GATHER / 10)
    monkeypatch.setattr(_gather, "MERGE_GATHER", _gather.MERGE_GATHER / 10)
    monkeypatch.setattr(_gather, "MAX_MERGE_GATHER", _gather.MAX_MERGE_GATHER / 10)
    monkeypatch.setattr(_gather, "MAX_PATIENCE", 3600.0)  # (however slow the machine: no ceiling)
    # A loaded machine may stall the loop below longer than a (scaled) merge gather between two
    # creations, which would end the burst: what ends a burst is another test's, not this one's.
    monkeypatch.setattr(_gather, "BURST_QUIET", float("inf"))
    # Past `MAX_KEPT` the oldest are let go and the patience is the age of the oldest left, shorter
    # than the burst's (CI: 10,000 made 0.44 s to 3.07 s after the first, that gather 0.44 s short).
    monkeypatch.setattr(_kept, "MAX_KEPT", 10**9)  # (however fast the machine: none let go)
    server = listen_server(poll_ms=LONG_POLL_MS, complete_on_listen=10_000)
    notes: list[str] = []
    placed = placement_times(monkeypatch, notes)
    with mt.Client.http(server.url, timeout=10) as client:
        job(client)
        made = time.monotonic()  # (the first task was kept before this)
        while len(placed) < 6:
            job(client)
    ages = [t - made for t in placed]
    # The first merge past the ceiling is the fourth placement; from there on each at least doubles
    # the age (its gather began once the one before was placed, and lasts the burst's age then).
    for k in (4, 5):
        assert ages[k] >= 2 * ages[k - 1], ([round(age, 3) for age in ages], f"made at {made:.3f}", notes)
