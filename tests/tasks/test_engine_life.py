"""Regression tests for issue 25 (one owner of the tasks engine's life), each against a server of
the tests' own with no mcp_tasks code (tests/foreign/listen_tasks.py for 2026-07-28, the
2025-11-25 servers over stdio and HTTP), each naming what failed before:

- `close()` woke no wait that follows the shared stream (they slept to their next safety read),
  nor a polling wait (it slept its poll interval), and a future handed to the driver while it
  was busy stayed pending for ever;
- a 2026-07-28 future's input was answered on the one driver thread: a person's prompt stalled
  every other future;
- `TaskFuture.cancel()` said True for a task that had already completed (its result lost);
- the first terminal status was not final: news that came in a burst overwrote it;
- one task the server does not know ended the whole set;
- a listen refused for one bad id halved the ids-per-stream cap for the client's whole life;
- a str given as the set was waited on character by character;
- a listen stream merged into a new one was closed at once, and what it still had on its way (pushed
  before the new one was registered) was lost: thread-per-wait listening waited for safety reads.

The tests synchronise on what the servers journal and on events, never on sleeps; the few
timeouts are fail-safes, never asserted bounds.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._tasks import _news
from tests.conftest import Background
from tests.foreign.listen_tasks import ListenTasksServer
from tests.session.test_issue15_regressions import TRANSPORTS as LEGACY_TRANSPORTS
from tests.session.test_issue15_regressions import Legacy, servers  # noqa: F401  (the fixture)

FAILSAFE = 30.0
CLOSED = "the client was closed"
LONG_POLL_MS = 600_000
"""A poll interval no wait sleeps out in a test: only a close (or news) can end the sleep."""


def job(client: mt.Client, tool: str = "job", *, follow: bool = False) -> mt.Status:
    """A task, followed only once a wait wants it (these tests are about the waits' streams; one
    followed from its creation: tests/tasks/test_kept_follow.py)."""
    task = mt.call_tool(client, tool, follow=follow)
    assert isinstance(task, mt.Status)
    return task


def read_once(server: ListenTasksServer, *tasks: mt.Status) -> None:
    """Wait until the server has answered a tasks/get for each task."""
    for task in tasks:
        server.journal.wait_for(
            lambda e, t=task.task_id: e.get("rpc") == "tasks/get" and e["params"].get("taskId") == t,  # type: ignore[misc]
            timeout=FAILSAFE,
            what="a read of the task",
        )


class Prompt:
    """An input strategy standing for a person who has not answered yet: it opens, then blocks
    until `reply()`."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.answered = threading.Event()

    def __call__(self, status: mt.Status) -> dict[str, Any]:
        self.open.set()
        self.answered.wait(FAILSAFE)
        return {key: {"action": "accept", "content": {"name": "Ada"}} for key in status.input_requests}

    def reply(self) -> None:
        self.answered.set()


def assert_closed(error: BaseException | None) -> None:
    assert isinstance(error, mt.TransportError), repr(error)
    assert error.message == CLOSED


def close_while_waiting(
    client: mt.Client, waits: list[Callable[[], object]], futures: list[concurrent.futures.Future[Any]], prompt: Prompt
) -> None:
    """Close `client` while `waits` (each in a thread of its own) and `futures` wait and the
    person's `prompt` is open: every wait and future ends with the one closed error (before the
    person answers), and no thread is left (the conftest checks that).
    """
    running = [Background(wait) for wait in waits]
    assert prompt.open.wait(FAILSAFE)
    closer = Background(client.close)
    for background in running:
        with pytest.raises(mt.TransportError) as raised:
            background.result(FAILSAFE)
        assert_closed(raised.value)
    _, not_done = concurrent.futures.wait(futures, timeout=FAILSAFE)
    assert not not_done, "a future stayed pending after close()"
    for future in futures:
        assert_closed(future.exception())
    assert not prompt.answered.is_set()  # all of that while the person still had not answered
    prompt.reply()
    closer.result(FAILSAFE)


def test_close_ends_every_kind_of_wait_at_once(listen_server: Callable[..., ListenTasksServer]) -> None:
    """Before: the polling wait slept its 600 s poll interval, the listening waits (one task, a set)
    their safety read, and their errors differed."""
    server = listen_server(poll_ms=LONG_POLL_MS, complete_on_listen=10_000)
    client = mt.Client.http(server.url, timeout=10)
    polled, listened, one, other, followed, iterated = (job(client) for _ in range(6))
    prompt = Prompt()
    futures = [mt.submit(client, "job"), mt.submit(client, "ask", input=prompt)]
    waits: list[Callable[[], object]] = [
        lambda: mt.wait_task(client, polled, timeout=None, listen=False),
        lambda: mt.wait_task(client, listened, timeout=None, listen=True),
        lambda: mt.wait_all(client, [one, other], timeout=None),
        lambda: mt.wait_any(client, [followed], timeout=None, listen=False),
        lambda: list(mt.as_completed(client, [iterated], timeout=None)),
    ]
    try:
        assert futures[0].status is not None
        read_once(server, futures[0].status)  # the driver follows it
        close_while_waiting(client, waits, list(futures), prompt)
    finally:
        prompt.reply()
        client.close()


@pytest.mark.parametrize("transport", LEGACY_TRANSPORTS)
def test_close_ends_every_kind_of_wait_at_once_on_a_2025_session(
    servers: Callable[..., Legacy],  # noqa: F811
    transport: str,
) -> None:
    """The same on a 2025-11-25 session: the person's prompt is open inside a tasks/result."""
    legacy = servers(transport)
    client = legacy.client(timeout=10)
    held = [job(client, "hold") for _ in range(6)]
    prompt = Prompt()
    futures = [mt.submit(client, "hold"), mt.submit(client, "ask_task", input=prompt)]
    waits: list[Callable[[], object]] = [
        lambda: mt.wait_task(client, held[0], timeout=None, listen=False),
        lambda: mt.wait_task(client, held[1], timeout=None, listen=True),
        lambda: mt.wait_all(client, held[2:4], timeout=None),
        lambda: mt.wait_any(client, [held[4]], timeout=None, listen=False),
        lambda: list(mt.as_completed(client, [held[5]], timeout=None)),
    ]
    try:
        close_while_waiting(client, waits, list(futures), prompt)
    finally:
        prompt.reply()
        client.close()


def test_a_future_handed_over_while_the_driver_reads_ends_at_close(
    listen_server: Callable[..., ListenTasksServer],
) -> None:
    """Before: the second future, queued while the driver was inside the first one's tasks/get,
    was neither taken in nor failed when the driver stopped: pending for ever."""
    gate = threading.Event()
    server = listen_server(poll_ms=50, get_gate=gate)
    client = mt.Client.http(server.url, timeout=10)
    try:
        first = mt.submit(client, "job", listen=False)
        assert first.status is not None
        read_once(server, first.status)  # the driver is inside that read now (the gate holds it)
        second = mt.submit(client, "job", listen=False)
        client.close()
        _, not_done = concurrent.futures.wait([first, second], timeout=FAILSAFE)
        assert not not_done, "a future stayed pending after close()"
        assert_closed(first.exception())
        assert_closed(second.exception())
        with pytest.raises(mt.TransportError):
            mt.submit(client, "job")  # a closed client takes no more
    finally:
        gate.set()
        client.close()


def test_a_persons_prompt_does_not_hold_up_the_other_futures(listen_server: Callable[..., ListenTasksServer]) -> None:
    """Before: a 2026-07-28 future's input was answered on the driver's thread, so the other
    future resolved only once the person had answered."""
    server = listen_server(poll_ms=50, complete_on_listen=10_000)
    prompt = Prompt()
    with mt.Client.http(server.url, timeout=10) as client:
        asking = mt.submit(client, "ask", input=prompt, listen=False)
        assert prompt.open.wait(FAILSAFE)
        other = mt.submit(client, "job", listen=False)
        client.call_tool("finish")
        try:
            assert other.result(timeout=FAILSAFE)["content"][0]["text"].startswith("done")
            assert not prompt.answered.is_set()  # resolved while the person had not answered
        finally:
            prompt.reply()
        assert asking.result(timeout=FAILSAFE)["content"][0]["text"].startswith("done")


def test_cancel_keeps_the_outcome_of_a_task_that_had_ended(listen_server: Callable[..., ListenTasksServer]) -> None:
    """Before: `cancel()` said True and the future was cancelled though the task had completed on
    the server (the server refuses to cancel it), and its result was lost."""
    server = listen_server(poll_ms=LONG_POLL_MS, complete_on_listen=10_000)
    with mt.Client.http(server.url, timeout=10) as client:
        ended = mt.submit(client, "job", listen=False)  # its first read is due in 600 s
        client.call_tool("finish")
        assert ended.cancel() is False
        assert ended.result(timeout=FAILSAFE)["content"][0]["text"].startswith("done")
        assert not ended.cancelled()
        running = mt.submit(client, "job", listen=False)
        assert running.cancel() is True and running.cancelled()
        assert running.task_id is not None
        assert mt.get_task(client, running.task_id).status is mt.TaskState.CANCELLED


def test_the_first_terminal_status_is_final(listen_server: Callable[..., ListenTasksServer]) -> None:
    """A server that pushes completed(A), then working, then completed(B) in one burst: the wait's
    outcome is A. Before: the news of one task was only the latest, and A was overwritten."""
    burst = (("completed", "A"), ("working", None), ("completed", "B"))
    server = listen_server(poll_ms=LONG_POLL_MS, complete_on_listen=10_000, burst=burst)
    with mt.Client.http(server.url, timeout=10) as client:
        results = [mt.await_task(client, job(client), timeout=FAILSAFE, listen=True) for _ in range(3)]
        assert [r["content"][0]["text"] for r in results] == ["A"] * 3
        statuses = mt.wait_all(client, [job(client) for _ in range(3)], timeout=FAILSAFE)
        assert [mt.outcome(s)["content"][0]["text"] for s in statuses] == ["A"] * 3


def test_one_unknown_task_ends_as_its_own_failure(listen_server: Callable[..., ListenTasksServer]) -> None:
    """Before: the first task the server did not know raised for the set: the others' results
    were lost, and an as_completed iterator was dead."""
    server = listen_server(poll_ms=50, complete_on_listen=10_000)
    with mt.Client.http(server.url, timeout=10) as client:
        tasks: list[str | mt.Status] = [job(client), "no-such-task", job(client)]
        client.call_tool("finish")
        statuses = mt.wait_all(client, tasks, timeout=FAILSAFE)
        assert [s.status for s in statuses] == [mt.TaskState.COMPLETED, mt.TaskState.UNKNOWN, mt.TaskState.COMPLETED]
        failed = statuses[1]
        assert isinstance(failed, mt.FailedWait) and failed.task_id == "no-such-task"
        assert isinstance(failed.exception, mt.McpError) and failed.exception.code == -32602
        with pytest.raises(mt.McpError):
            mt.outcome(failed)


def test_as_completed_goes_on_after_a_failed_member_until_its_deadline(
    listen_server: Callable[..., ListenTasksServer],
) -> None:
    server = listen_server(poll_ms=50, complete_on_listen=10_000)
    with mt.Client.http(server.url, timeout=10) as client:
        done = job(client)
        client.call_tool("finish")
        working = job(client)
        seen: list[mt.Status] = []
        with pytest.raises(mt.TaskTimeout) as raised:
            for status in mt.as_completed(client, ["no-such-task", done, working], timeout=1.0, listen=False):
                seen.append(status)
        assert sorted(s.task_id for s in seen) == sorted(["no-such-task", done.task_id])
        assert [s.task_id for s in raised.value.pending] == [working.task_id]


def test_a_refused_stream_does_not_cap_the_later_ones(listen_server: Callable[..., ListenTasksServer]) -> None:
    """A server that refuses a stream naming an id it does not know (-32602, nothing said of a
    limit). Before: the watch halved its ids-per-stream cap for the client's whole life, and half
    of every later wait's tasks were polled."""
    server = listen_server(poll_ms=LONG_POLL_MS, complete_on_listen=10_000, refuse=frozenset({"no-such-task"}))
    with mt.Client.http(server.url, timeout=10) as client:
        first = [job(client) for _ in range(2)]
        first_wait = Background(lambda: mt.wait_all(client, first, timeout=FAILSAFE))
        read_once(server, *first)
        with pytest.raises(mt.McpError) as raised:
            mt.wait_task(client, "no-such-task", timeout=FAILSAFE, listen=True)
        assert raised.value.code == -32602
        later = [job(client) for _ in range(8)]
        later_wait = Background(lambda: mt.wait_all(client, later, timeout=FAILSAFE))
        read_once(server, *later)
        listens = [
            e["params"]["notifications"]["taskIds"]
            for e in server.journal.events(lambda e: e.get("rpc") == "subscriptions/listen")
        ]
        assert {t.task_id for t in later} <= set(listens[-1])  # the last stream took them all
        client.close()
        for background in (first_wait, later_wait):
            with pytest.raises(mt.TransportError):
                background.result(FAILSAFE)


@pytest.mark.parametrize("given", ["0123-task", b"0123-task", "status"])
def test_one_task_given_as_the_set_is_a_type_error(
    listen_server: Callable[..., ListenTasksServer], given: object
) -> None:
    """Before: a str was waited on as a set of one-character task ids (the server answered
    "Unknown or inaccessible taskId" for each)."""
    server = listen_server()
    with mt.Client.http(server.url, timeout=10) as client:
        task = job(client) if given == "status" else given
        mark = server.journal.mark()
        for wait in (mt.wait_all, mt.wait_any, mt.as_completed):
            with pytest.raises(TypeError, match="wait_task"):
                wait(client, task, timeout=5)  # type: ignore[arg-type]
        assert server.journal.events(lambda e: e.get("rpc") == "tasks/get", after=mark) == []


def test_what_a_merged_stream_still_brings_is_news(
    listen_server: Callable[..., ListenTasksServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second wait's task merges the first one's stream into a new stream; the server pushes the
    first task's completion on the old stream only, after the new one's acknowledgement (when the
    new task is read). Before: the old stream was closed at once and its late news ignored, so the
    first wait slept to its safety read (10 poll intervals: here 6,000 s)."""
    monkeypatch.setattr(_news, "LINGER", FAILSAFE)  # the old stream is read until it has caught up
    server = listen_server(poll_ms=LONG_POLL_MS, complete_on_listen=10_000, late_push=True)
    client = mt.Client.http(server.url, timeout=10)
    first, second = job(client), job(client)
    try:
        first_wait = Background(lambda: mt.await_task(client, first, timeout=FAILSAFE, listen=True))
        read_once(server, first)  # on a stream of its own, caught up
        second_wait = Background(lambda: mt.await_task(client, second, timeout=None, listen=True))
        assert first_wait.result(FAILSAFE)["content"][0]["text"] == f"done {first.task_id[:4]}"
        listens = server.journal.events(lambda e: e.get("rpc") == "subscriptions/listen")
        asked = [set(e["params"]["notifications"]["taskIds"]) for e in listens]
        assert asked == [{first.task_id}, {first.task_id, second.task_id}]  # merged
    finally:
        client.close()
    with pytest.raises(mt.TransportError):
        second_wait.result(FAILSAFE)


def test_what_a_lingering_stream_brought_is_not_news_again_on_the_stream_that_replaced_it() -> None:
    """The merged stream is read once the old one is closed, and brings again what the server pushed
    on both: those statuses (told apart by their lastUpdatedAt) are not news twice (an older one
    after a newer one); a status without lastUpdatedAt cannot be told apart, so it is news."""
    old, new = _news.Stream(), _news.Stream()
    linger = _news.Linger(old, new)
    earlier = {"taskId": "a", "status": "working", "lastUpdatedAt": "2026-12-01T10:00:00Z"}
    later = {"taskId": "a", "status": "completed", "lastUpdatedAt": "2026-12-01T10:00:01Z"}
    bare = {"taskId": "a", "status": "working"}
    linger.heard_on_old(earlier)
    linger.heard_on_old(bare)
    assert not linger.due(linger.until - 0.01) and linger.due(linger.until)
    new.replayed |= linger.heard
    assert _news.replayed(new, earlier)
    assert not _news.replayed(new, earlier)  # once only
    assert not _news.replayed(new, later)
    assert not _news.replayed(new, bare)
