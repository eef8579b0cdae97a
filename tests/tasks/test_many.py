"""Many tasks at once (issue 17): wait_all, as_completed and wait_any over the client's shared
listen stream, or polled, against the reference server (direct, stdio, HTTP), the tests' own
2025-era servers, and a socket-level server whose listen stream misbehaves.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._tasks._cap import MAX_CAPPED_STREAMS
from mcp_tasks._tasks._watch import watch_of
from mcp_tasks.server import Exchange
from tests.conftest import Harness, accept_form, eventually, mcp_threads, release
from tests.foreign.listen_tasks import ListenTasksServer
from tests.session.test_issue15_regressions import TRANSPORTS as LEGACY_TRANSPORTS
from tests.session.test_issue15_regressions import Legacy, accept_all, servers, text  # noqa: F401  (the fixture)


def start(client: mt.Client, count: int, gate: str = "slow", *, follow: bool = True) -> list[mt.Status]:
    arguments = [{"label": str(i), "block": True, "gate": gate} for i in range(count)]
    tasks = [mt.call_tool(client, "slow_compute", a, follow=follow) for a in arguments]
    assert all(isinstance(t, mt.Status) for t in tasks)
    return [t for t in tasks if isinstance(t, mt.Status)]


def release_when_seen(client: mt.Client, count: int, gate: str = "slow") -> Callable[[mt.Status], None]:
    """An on_status that releases the gate once it has heard of `count` statuses (the statuses the
    wait starts from are heard first, so the release comes from inside the wait)."""
    seen: list[mt.Status] = []

    def on_status(status: mt.Status) -> None:
        seen.append(status)
        if len(seen) == count:
            release(client, gate)

    return on_status


@pytest.mark.parametrize("listen", [None, False])
def test_wait_all_returns_every_final_status_in_order(harness: Harness, listen: bool | None) -> None:
    client = harness.client(server={"poll_interval": 0.05})
    tasks = start(client, 12)
    statuses = mt.wait_all(client, tasks, timeout=30, listen=listen, on_status=release_when_seen(client, 12))
    assert [s.task_id for s in statuses] == [t.task_id for t in tasks]
    assert [mt.outcome(s)["structuredContent"]["label"] for s in statuses] == [str(i) for i in range(12)]


def test_listening_reads_each_task_about_once(harness: Harness) -> None:
    """Poll interval 600 s: only the stream can finish the wait; one read per task after the
    acknowledgement, the completions come with their results on the stream."""
    client = harness.client(server={"poll_interval": 600})
    tasks = start(client, 20, follow=False)  # (a stream for the set: followed from creation, see test_kept_follow)
    statuses = mt.wait_all(client, tasks, timeout=30, on_status=release_when_seen(client, 20))
    assert {s.wire_status for s in statuses} == {"completed"}
    gets = client.call_tool("stats", {"method": "tasks/get"})["structuredContent"]["times"]
    assert len(gets) <= 20
    listens = client.call_tool("stats", {"method": "subscriptions/listen"})["structuredContent"]["times"]
    assert 1 <= len(listens) <= 2  # one stream (two if the ids came in two batches), not one per task


def test_tasks_finished_before_the_wait_are_caught_up_with_one_read_each(harness: Harness) -> None:
    """The stream cannot tell of what happened before it opened: each task is read once, by its
    wait or by the watch's manager helping it (never both), and `on_status` still runs in the
    caller's thread."""
    client = harness.client(server={"poll_interval": 600})
    tasks = start(client, 40, follow=False)  # made elsewhere, as it were (else their ends are heard)
    release(client)
    eventually(lambda: all(mt.get_task(client, t).terminal for t in tasks), timeout=30, message="all done")
    before = len(client.call_tool("stats", {"method": "tasks/get"})["structuredContent"]["times"])
    threads: set[str] = set()
    statuses = mt.wait_all(client, tasks, timeout=30, on_status=lambda _: threads.add(threading.current_thread().name))
    assert [mt.outcome(s)["structuredContent"]["label"] for s in statuses] == [str(i) for i in range(40)]
    gets = client.call_tool("stats", {"method": "tasks/get"})["structuredContent"]["times"]
    assert len(gets) - before == 40
    assert threads == {threading.current_thread().name}


def test_as_completed_yields_in_finishing_order(harness: Harness) -> None:
    client = harness.client(server={"poll_interval": 0.05})
    tasks = [start(client, 1, gate=f"g{i}")[0] for i in range(3)]
    order = ["g1", "g2", "g0"]
    release(client, order[0])
    finished = []
    for status in mt.as_completed(client, tasks, timeout=30):
        finished.append(status.task_id)
        if len(finished) < 3:
            release(client, order[len(finished)])
    assert finished == [tasks[1].task_id, tasks[2].task_id, tasks[0].task_id]


def test_wait_any_returns_the_first_and_leaves_the_others(harness: Harness) -> None:
    client = harness.client(server={"poll_interval": 0.05})
    tasks = [start(client, 1, gate=f"a{i}")[0] for i in range(3)]
    release(client, "a2")
    first = mt.wait_any(client, [t.task_id for t in tasks], timeout=30)
    assert first.task_id == tasks[2].task_id and first.wire_status == "completed"
    assert mt.get_task(client, tasks[0]).wire_status == "working"


def test_one_deadline_for_the_set_and_its_pending(harness: Harness) -> None:
    client = harness.client(server={"poll_interval": 0.05})
    tasks = start(client, 3, gate="never")
    done = start(client, 1, gate="now")
    release(client, "now")
    with pytest.raises(mt.TaskTimeout) as raised:
        mt.wait_all(client, [*tasks, *done], timeout=0.5)
    timed_out = raised.value
    assert sorted(s.task_id for s in timed_out.pending) == sorted(t.task_id for t in tasks)
    assert {s.wire_status for s in timed_out.pending} == {"working"}
    assert not timed_out.cancelled
    assert "3 tasks" in str(timed_out) and tasks[0].task_id not in str(timed_out)
    assert mt.get_task(client, tasks[0]).wire_status == "working"


def test_cancel_on_timeout_cancels_the_rest(harness: Harness) -> None:
    client = harness.client(server={"poll_interval": 0.05})
    tasks = start(client, 3, gate="never")
    with pytest.raises(mt.TaskTimeout) as raised:
        mt.wait_all(client, tasks, timeout=0.3, cancel_on_timeout=True)
    assert raised.value.cancelled
    for task in tasks:
        eventually(functools.partial(is_cancelled, client, task), message="cancelled")


def is_cancelled(client: mt.Client, task: mt.Status) -> bool:
    return mt.get_task(client, task).wire_status == "cancelled"


def test_input_for_one_task_of_many(harness: Harness) -> None:
    client = harness.client(server={"poll_interval": 0.05}, input_handlers=mt.InputHandlers(form=accept_form))
    tasks = start(client, 3)
    asking = mt.call_tool(client, "confirm_delete")
    assert isinstance(asking, mt.Status)
    threads: list[str] = []

    def on_status(status: mt.Status) -> None:
        threads.append(threading.current_thread().name)
        if status.task_id == asking.task_id and status.wire_status == "input_required":
            release(client)

    statuses = mt.wait_all(client, [*tasks, asking], timeout=30, on_status=on_status)
    assert mt.outcome(statuses[3])["structuredContent"]["confirmation"]["action"] == "accept"
    assert {s.wire_status for s in statuses} == {"completed"}
    assert set(threads) == {threading.current_thread().name}  # on_status runs in the caller's thread


def test_input_the_strategy_leaves_is_a_final_status(harness: Harness) -> None:
    client = harness.client(server={"poll_interval": 0.05})
    asking = mt.call_tool(client, "confirm_delete")
    assert isinstance(asking, mt.Status)
    (status,) = mt.wait_all(client, [asking], timeout=30, input="return")
    assert status.wire_status == "input_required"


def test_bad_arguments_fail_before_anything_is_sent(client: mt.Client) -> None:
    with pytest.raises(TypeError):
        mt.wait_all(client, ["a"], listen="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        mt.wait_all(client, ["a"], pollinterval=1)  # type: ignore[call-arg]
    with pytest.raises(ValueError):
        mt.wait_all(client, ["a", ""])
    with pytest.raises(ValueError):
        mt.wait_any(client, [])
    assert mt.wait_all(client, []) == []


def test_the_poll_interval_of_the_task_is_honoured(harness: Harness) -> None:
    """listen=False: each task is read no sooner than its pollIntervalMs (200 ms) after the last."""
    client = harness.client(server={"poll_interval": 0.2})
    tasks = start(client, 2, gate="never")
    with pytest.raises(mt.TaskTimeout):
        mt.wait_all(client, tasks, timeout=1.2, listen=False)
    gets = client.call_tool("stats", {"method": "tasks/get"})["structuredContent"]["times"]
    assert len(gets) >= 4
    # Two tasks polled: a task's reads are at least 200 ms apart, so no three reads fall within
    # 200 ms.
    for i in range(2, len(gets)):
        assert gets[i] - gets[i - 2] >= 0.19


def test_no_thread_is_left_after_close(harness: Harness) -> None:
    client = harness.client(server={"poll_interval": 600})
    tasks = start(client, 5, gate="never")
    with pytest.raises(mt.TaskTimeout):
        mt.wait_all(client, tasks, timeout=0.5)
    client.close()
    assert [name for name in mcp_threads() if "watch" in name] == []


# -- a server whose listen stream misbehaves --------------------------------------------------


def listens(server: ListenTasksServer) -> int:
    return len(server.journal.events(lambda e: e.get("rpc") == "subscriptions/listen"))


def test_left_out_ids_are_polled_a_dropped_stream_is_reopened_and_a_cue_is_read(
    listen_server: Callable[..., ListenTasksServer],
) -> None:
    """The first stream drops; the second acknowledges every other id, completes the tasks and
    sends each acknowledged one a completion without its result; the rest are polled."""
    server = listen_server(ack_every=2, drop=1, complete_on_listen=2, poll_ms=100)
    with mt.Client.http(server.url, timeout=10) as client:
        tasks = [mt.call_tool(client, "job") for _ in range(6)]
        statuses = mt.wait_all(client, [t for t in tasks if isinstance(t, mt.Status)], timeout=30)
    assert [mt.outcome(s)["content"][0]["text"] for s in statuses] == [
        f"done {t.task_id[:4]}" for t in tasks if isinstance(t, mt.Status)
    ]
    assert listens(server) == 2


def test_a_task_whose_end_comes_on_the_stream_while_catching_up_is_not_read(
    listen_server: Callable[..., ListenTasksServer],
) -> None:
    """Every task completes at the first catch-up read, its full status pushed on the stream
    while that read (and the other one in flight) is held: once the stream's news is taken in, no
    task is read any more (the stream told), by the waiting thread or by the watch's manager
    (before: each task was read all the same, 41 reads for 40 tasks)."""
    gate = threading.Event()
    server = listen_server(complete_on_listen=0, complete_on_get=True, get_gate=gate, poll_ms=600_000)
    with mt.Client.http(server.url, timeout=10) as client:
        tasks = [t for t in (mt.call_tool(client, "job", follow=False) for _ in range(40)) if isinstance(t, mt.Status)]
        watch = watch_of(client.channel)
        ended: list[list[mt.Status]] = []
        waiter = threading.Thread(target=lambda: ended.append(mt.wait_all(client, tasks, timeout=30)))
        waiter.start()
        try:
            server.journal.wait_for(lambda e: e.get("rpc") == "tasks/get", what="the first catch-up read")
            eventually(lambda: not watch._catch.due, message="the pushed statuses taken in")
        finally:
            gate.set()
            waiter.join()
    assert [mt.outcome(s)["content"][0]["text"] for s in ended[0]] == [f"done {t.task_id[:4]}" for t in tasks]
    gets = server.journal.events(lambda e: e.get("rpc") == "tasks/get")
    assert 1 <= len(gets) <= 2  # the reads held when the statuses came


def test_a_stream_that_keeps_dropping_is_reopened_a_bounded_number_of_times(
    listen_server: Callable[..., ListenTasksServer],
) -> None:
    server = listen_server(drop=100, complete_on_listen=3, poll_ms=100)
    with mt.Client.http(server.url, timeout=10) as client:
        tasks = [mt.call_tool(client, "job", follow=False) for _ in range(3)]  # (one stream for the set)
        statuses = mt.wait_all(client, [t for t in tasks if isinstance(t, mt.Status)], timeout=30)
        assert {s.wire_status for s in statuses} == {"completed"}
    assert listens(server) == 3


def test_a_cap_on_ids_per_stream_means_a_few_streams_and_polls_beyond(
    listen_server: Callable[..., ListenTasksServer],
) -> None:
    """The server takes at most 2 ids per stream: the watch learns it from the -32602, opens at
    most MAX_CAPPED_STREAMS streams of 2, and polls the rest; the tasks complete on the first stream."""
    server = listen_server(cap=2, complete_on_listen=1, poll_ms=100)
    with mt.Client.http(server.url, timeout=10) as client:
        made = (mt.call_tool(client, "job", follow=False) for _ in range(10))  # all made before the first listen
        tasks = [t for t in made if isinstance(t, mt.Status)]
        statuses = mt.wait_all(client, tasks, timeout=30)
        assert {s.wire_status for s in statuses} == {"completed"}
    asked = [
        len(e["params"]["notifications"]["taskIds"])
        for e in server.journal.events(lambda e: e.get("rpc") == "subscriptions/listen")
    ]
    # The tasks may all complete on the first capped stream before the watch opens the next ones:
    # how many it opens is the race's, that none carries more than the cap or goes past the most is not.
    assert asked[0] == 10 and asked[1:] == [2] * len(asked[1:]), asked
    assert 1 <= len(asked[1:]) <= MAX_CAPPED_STREAMS, asked


def test_a_task_the_server_forgets_ends_its_wait_with_a_clear_error(
    listen_server: Callable[..., ListenTasksServer],
) -> None:
    server = listen_server(complete_on_listen=1000, poll_ms=50)
    with mt.Client.http(server.url, timeout=10) as client:
        task = mt.call_tool(client, "job")
        assert isinstance(task, mt.Status)
        mt.get_task(client, task)
        client.call_tool("forget")
        (status,) = mt.wait_all(client, [task], timeout=30, listen=False)
    assert isinstance(status, mt.FailedWait) and status.status is mt.TaskState.WORKING  # the last seen
    error = status.exception
    assert isinstance(error, mt.McpError) and error.data["reason"] == "forgotten"
    assert "no longer known" in error.message and task.task_id not in error.message
    with pytest.raises(mt.McpError) as raised:
        mt.outcome(status)
    assert raised.value is error


class Expiring:
    """A direct server whose one task, created long ago with a ttl of 1 s, is working at the first
    read and unknown (-32602) from the second on."""

    def __init__(self) -> None:
        self.gets = 0

    def handle(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        if "id" not in message:
            return None
        if message["method"] == "server/discover":
            result: dict[str, Any] = {"supportedVersions": ["2026-07-28"]}
        elif self.gets > 0:
            error = {"code": -32602, "message": "Unknown or inaccessible taskId"}
            return {"jsonrpc": "2.0", "id": message["id"], "error": error}
        else:
            self.gets += 1
            result = {
                "resultType": "complete",
                "taskId": "old-task-0001",
                "status": "working",
                "createdAt": "2020-01-01T00:00:00Z",
                "ttlMs": 1000,
                "pollIntervalMs": 10,
            }
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def test_a_task_that_expired_ends_its_wait_with_a_clear_error() -> None:
    with mt.Client.direct(Expiring()) as client:
        status = mt.wait_any(client, ["old-task-0001"], timeout=30, listen=False)
    assert isinstance(status, mt.FailedWait)
    error = status.exception
    assert isinstance(error, mt.McpError) and error.data["reason"] == "expired"
    assert "createdAt + ttlMs" in error.message and "old-task-0001" not in error.message


# -- 2025-11-25 servers: the session's status notifications are cues ---------------------------


@pytest.mark.parametrize("transport", LEGACY_TRANSPORTS)
def test_legacy_tasks_many_at_once_with_input_for_one(
    servers: Callable[..., Legacy],  # noqa: F811
    transport: str,
) -> None:
    legacy = servers(transport)
    client = legacy.client(timeout=10)
    held = [mt.call_tool(client, "hold") for _ in range(3)]
    quick = mt.call_tool(client, "quick")
    asking = mt.call_tool(client, "ask_task")
    tasks = [t for t in [*held, quick, asking] if isinstance(t, mt.Status)]
    assert len(tasks) == 5 and {t.era for t in tasks} == {"legacy"}
    released: list[bool] = []

    def on_status(status: mt.Status) -> None:
        if status.task_id == asking.task_id and status.terminal and not released:  # type: ignore[union-attr]
            released.append(True)
            client.call_tool("release")

    statuses = mt.wait_all(client, tasks, timeout=30, input=accept_all, on_status=on_status)
    assert [text(mt.outcome(s)) for s in statuses] == ["held done"] * 3 + ["quick done", "hello Ada (accept)"]


def test_one_reference_stream_takes_ten_thousand_ids(harness: Harness) -> None:
    """The reference server's cap is 10,000 ids per stream (it was 100): unknown ids are left out."""
    client = harness.client(server={"poll_interval": 600})
    (task,) = start(client, 1)
    ids = [f"unknown-{n}" for n in range(9_999)] + [task.task_id]
    declared = {"io.modelcontextprotocol/clientCapabilities": mt.capabilities()}
    with client.listen({"taskIds": ids}, meta=declared, timeout=30) as subscription:
        assert subscription.accepted == {"taskIds": [task.task_id]}
    release(client)
