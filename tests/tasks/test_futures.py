"""`mt.submit` and `TaskFuture` (issue 17): one watcher thread per client resolves every future."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable

import pytest

import mcp_tasks as mt
from mcp_tasks._tasks._watch import MAX_STREAMS, watch_of
from tests.conftest import STREAM_GONE, Harness, eventually, mcp_threads, open_streams, release
from tests.session.test_issue15_regressions import TRANSPORTS as LEGACY_TRANSPORTS
from tests.session.test_issue15_regressions import Legacy, servers, text  # noqa: F401  (the fixture)


def watchers() -> list[str]:
    return [name for name in mcp_threads() if name.endswith("futures")]


def test_futures_resolve_through_one_watcher(harness: Harness) -> None:
    client = harness.client(server={"poll_interval": 0.05})
    futures = [mt.submit(client, "slow_compute", {"label": str(i), "block": True}) for i in range(8)]
    assert all(isinstance(f, concurrent.futures.Future) and f.task_id for f in futures)
    assert len(watchers()) == 1
    release(client)
    _, not_done = concurrent.futures.wait(futures, timeout=30)
    assert not not_done
    assert [f.result()["structuredContent"]["label"] for f in futures] == [str(i) for i in range(8)]
    assert all(f.status is not None and f.status.wire_status == "completed" for f in futures)


def test_as_completed_and_outcomes(harness: Harness) -> None:
    client = harness.client(server={"poll_interval": 0.05})
    failing = mt.submit(client, "protocol_error_job")
    plain = mt.submit(client, "greet", {"name": "Ada"})
    assert plain.done() and plain.task_id is None  # a synchronous tool: done at once
    assert plain.result()["content"][0]["text"] == "Hello, Ada!"
    finished = list(concurrent.futures.as_completed([failing, plain], timeout=30))
    assert set(finished) == {failing, plain}
    with pytest.raises(mt.TaskFailed):
        failing.result()


def test_a_future_cancelled_from_another_thread_while_others_await_it(harness: Harness) -> None:
    client = harness.client(server={"poll_interval": 0.05})
    future = mt.submit(client, "slow_compute", {"block": True, "gate": "never"})
    outcomes: list[str] = []
    started = threading.Barrier(4)

    def awaiting() -> None:
        started.wait()
        try:
            future.result(timeout=30)
        except concurrent.futures.CancelledError:
            outcomes.append("cancelled")

    threads = [threading.Thread(target=awaiting) for _ in range(3)]
    for thread in threads:
        thread.start()
    started.wait()
    canceller = threading.Thread(target=future.cancel)
    canceller.start()
    canceller.join()
    for thread in threads:
        thread.join()
    assert outcomes == ["cancelled"] * 3 and future.cancelled()
    assert future.task_id is not None
    task_id = future.task_id
    eventually(lambda: mt.get_task(client, task_id).wire_status == "cancelled", message="cancelled on the server")
    assert not future.cancel()  # already done


def test_cancel_is_a_cancel_when_the_driver_reads_the_cancelled_task_first(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver may read the task cancelled between `cancel()`'s tasks/cancel and its own
    read: the future is then cancelled as its owner asked, not failed with `TaskCancelled`.
    """
    import mcp_tasks._tasks._driver as driver

    client = harness.client(server={"poll_interval": 0.05})
    future = mt.submit(client, "slow_compute", {"block": True, "gate": "never"})
    read = mt.get_task

    def read_once_the_driver_has(client: mt.Client, task_id: str) -> mt.Status:
        concurrent.futures.wait([future], timeout=30)  # the interleaving that raced: driver first
        return read(client, task_id)

    monkeypatch.setattr(driver, "get_task", read_once_the_driver_has)
    assert future.cancel()
    assert future.cancelled()
    with pytest.raises(concurrent.futures.CancelledError):
        future.result(timeout=0)


def test_close_fails_pending_futures_and_leaves_no_thread(harness: Harness) -> None:
    client = harness.client(server={"poll_interval": 600})
    future = mt.submit(client, "slow_compute", {"block": True, "gate": "never"})
    assert watchers()
    client.close()
    with pytest.raises(mt.TransportError):
        future.result(timeout=10)
    assert watchers() == [] and [n for n in mcp_threads() if "watch" in n] == []


def test_bad_options_fail_before_the_call(client: mt.Client) -> None:
    with pytest.raises(TypeError):
        mt.submit(client, "greet", {"name": "x"}, cancel_on_timeout=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        mt.submit(client, "greet", {"name": "x"}, listen="auto")  # type: ignore[arg-type]


@pytest.mark.parametrize("transport", LEGACY_TRANSPORTS)
def test_legacy_futures(servers: Callable[..., Legacy], transport: str) -> None:  # noqa: F811
    legacy = servers(transport)
    client = legacy.client(timeout=10)
    held = mt.submit(client, "hold")
    quick = mt.submit(client, "quick")
    assert text(quick.result(timeout=30)) == "quick done"
    client.call_tool("release")
    assert text(held.result(timeout=30)) == "held done"


def streams_are(client: mt.Client, count: int) -> bool:
    return open_streams(client) == count


def test_ids_arriving_apart_are_merged_into_one_stream(harness: Harness) -> None:
    """Each batch after the first reopens the one stream with every id (opened before the old one
    closes: nothing is lost, so no read for the merge); each stream closes once its tasks are done."""
    client = harness.client(server={"poll_interval": 600})
    watch = watch_of(client.channel)
    futures = []
    for opened in (1, 2, 3):
        futures.append(mt.submit(client, "slow_compute", {"block": True}))
        # (over HTTP the server sees a closed stream at its next keep-alive: STREAM_GONE)
        eventually(
            lambda n=opened: watch.opens == n and streams_are(client, MAX_STREAMS),  # type: ignore[misc]
            timeout=STREAM_GONE,
            message=f"{opened} opens, one stream",
        )
    release(client)
    assert [f.result(timeout=30)["structuredContent"]["computed"] for f in futures] == [True] * 3
    eventually(lambda: open_streams(client) == 0, timeout=STREAM_GONE, message="streams closed")
    gets = client.call_tool("stats", {"method": "tasks/get"})["structuredContent"]["times"]
    assert len(gets) == 3  # one read per task, when its first stream took it; none for the merge


def watch_threads() -> list[str]:
    """The threads of the watch and the futures (the transport's own are left out)."""
    kinds = ("mcp_tasks-watch", "mcp_tasks-listen-", "mcp_tasks-futures")
    return [name for name in mcp_threads() if name.startswith(kinds)]


def test_a_stream_costs_one_thread_and_futures_three_in_all(harness: Harness) -> None:
    """Futures followed on the shared stream: the manager, the stream's one reader (no thread
    forwarding its events) and the watcher, whatever the number of tasks."""
    client = harness.client(server={"poll_interval": 600})
    watch = watch_of(client.channel)
    futures = [mt.submit(client, "slow_compute", {"label": str(i), "block": True}) for i in range(6)]
    eventually(lambda: len(watch.placed()) == 6 and streams_are(client, 1), timeout=STREAM_GONE, message="placed")
    eventually(lambda: len(watch_threads()) == 3, timeout=STREAM_GONE, message="3 threads")  # (a merged
    names = watch_threads()  # stream's old reader is joined just after the server sees it closed)
    assert {n.rsplit("-", 1)[0] if n.startswith("mcp_tasks-listen-") else n for n in names} == {
        "mcp_tasks-watch",
        "mcp_tasks-listen",
        "mcp_tasks-futures",
    }
    release(client)
    assert [f.result(timeout=30)["structuredContent"]["label"] for f in futures] == [str(i) for i in range(6)]
