"""Progress a server reports (``notifications/progress``), against socket-level servers of the
tests' own (tests/foreign/progress_http.py: no pinned peer reports progress during a task): the
token rides on the call, progress is routed by it to the task it became, kept for later waits,
and called back on the client's progress thread; what names no token of ours, or is not a
number, is ignored with a log line.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

import pytest

import mcp_tasks as mt
from tests.foreign.progress_http import LegacyProgressServer, ModernProgressServer

Heard = tuple[float, "float | None", "str | None"]


class Ear:
    """An ``on_progress`` that keeps what it heard (and on which thread); `until` waits for it."""

    def __init__(self) -> None:
        self.heard: list[Heard] = []
        self.threads: set[str] = set()
        self._changed = threading.Condition()

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        with self._changed:
            self.heard.append((progress, total, message))
            self.threads.add(threading.current_thread().name)
            self._changed.notify_all()

    def until(self, count: int) -> list[Heard]:
        with self._changed:
            self._changed.wait_for(lambda: len(self.heard) >= count)
            return list(self.heard)


class Notified:
    """A client's ``on_notification``: counts the progress notifications it was told of (after
    the keeper took them), so a test knows the client has one.
    """

    def __init__(self) -> None:
        self.count = 0
        self._changed = threading.Condition()

    def __call__(self, method: str, params: dict[str, object]) -> None:
        if method == "notifications/progress":
            with self._changed:
                self.count += 1
                self._changed.notify_all()

    def until(self, count: int) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self.count >= count)


@pytest.fixture
def legacy() -> Iterator[LegacyProgressServer]:
    with LegacyProgressServer() as server:
        yield server


def in_thread(target: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(target()), name="test-wait")
    thread.start()
    return thread, out


def test_a_task_augmented_call_carries_a_token_and_a_plain_one_only_with_on_progress(
    legacy: LegacyProgressServer,
) -> None:
    with mt.Client.http(legacy.url) as client:
        status = mt.call_tool(client, "report", {})
        assert isinstance(status, mt.Status)
        (made,) = legacy.journal.events(lambda e: e["event"] == "report_task")
        assert isinstance(made["token"], str) and made["token"]
        mt.call_tool(client, "plain")  # not task-augmented, no on_progress: no token
        (plain,) = legacy.journal.events(lambda e: e["event"] == "request" and e["name"] == "plain")
        assert "progressToken" not in plain["params"].get("_meta", {})
        ear = Ear()
        done = mt.call_and_await(client, "report_plain", {"before": [[1, 2, "sync"]]}, on_progress=ear)
        assert done["content"][0]["text"] == "reported"
        assert ear.heard == [(1.0, 2.0, "sync")]  # heard on the call's own stream, before it returned
        (sent,) = legacy.journal.events(lambda e: e["event"] == "request" and e["name"] == "report_plain")
        assert isinstance(sent["token"], str) and sent["token"] != made["token"]
        legacy.finish(status.task_id)


def test_progress_from_the_call_stream_and_the_task_life_reaches_call_and_await(legacy: LegacyProgressServer) -> None:
    with mt.Client.http(legacy.url) as client:
        ear = Ear()
        thread, out = in_thread(
            lambda: mt.call_and_await(client, "report", {"before": [[1, 4, "started"]]}, on_progress=ear, timeout=None)
        )
        assert ear.until(1) == [(1.0, 4.0, "started")]  # before the task existed
        (task_id,) = legacy.task_ids(wait=True)
        legacy.step(task_id, 3, 4, "almost")
        assert ear.until(2)[1] == (3.0, 4.0, "almost")
        legacy.step(task_id, 4)  # no total, no message
        assert ear.until(3)[2] == (4.0, None, None)
        legacy.finish(task_id)
        thread.join()
        assert out[0]["content"][0]["text"] == "report done"  # type: ignore[index]
        assert ear.threads == {"mcp_tasks-progress"}  # never the wait's thread, never the reader's


def test_progress_goes_to_the_task_whose_token_it_carries(legacy: LegacyProgressServer) -> None:
    with mt.Client.http(legacy.url) as client:
        ears = [Ear(), Ear(), Ear()]
        futures = [mt.submit(client, "report", {}, on_progress=ear) for ear in ears]
        ids = [f.task_id for f in futures]
        assert ids == legacy.task_ids()
        for n, task_id in reversed(list(enumerate(ids))):
            legacy.step(task_id, n + 1, 10, f"task {n}")
        for n, ear in enumerate(ears):
            assert ear.until(1) == [(float(n + 1), 10.0, f"task {n}")]
        for task_id in ids:
            legacy.finish(task_id)
        for future in futures:
            assert future.result()["content"][0]["text"] == "report done"
        assert [len(ear.heard) for ear in ears] == [1, 1, 1]


def test_a_later_wait_hears_the_latest_progress_first(legacy: LegacyProgressServer) -> None:
    notified = Notified()
    with mt.Client.http(legacy.url, on_notification=notified) as client:
        status = mt.call_tool(client, "report", {"before": [[1, 3, "one"]]})
        assert isinstance(status, mt.Status)
        legacy.step(status.task_id, 2, 3, "two")
        notified.until(2)  # the client has both (no wait was running)
        ear = Ear()
        thread, out = in_thread(lambda: mt.wait_task(client, status, on_progress=ear, timeout=None))
        assert ear.until(1) == [(2.0, 3.0, "two")]  # the latest, not the whole history
        legacy.finish(status.task_id)
        thread.join()
        assert isinstance(out[0], mt.Status) and out[0].status is mt.TaskState.COMPLETED
        assert ear.heard == [(2.0, 3.0, "two")]
        again = Ear()
        mt.wait_task(client, status, on_progress=again)  # over already: still told its last
        assert again.heard == [(2.0, 3.0, "two")]
    with mt.Client.http(legacy.url) as other:  # a client that did not create it knows nothing of it
        elsewhere = Ear()
        with pytest.raises(mt.McpError):
            mt.wait_task(other, status.task_id, on_progress=elsewhere, timeout=None)
        assert elsewhere.heard == []


def test_progress_with_a_token_nobody_sent_is_ignored(
    legacy: LegacyProgressServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_tasks")
    notified = Notified()
    with mt.Client.http(legacy.url, on_notification=notified) as client:
        ear = Ear()
        future = mt.submit(client, "report", {}, on_progress=ear)
        stranger = "f0e1d2c3b4a5968778695a4b3c2d1e0f"
        legacy.push(future.task_id, {"progressToken": stranger, "progress": 5, "total": 10})
        legacy.push(future.task_id, {"progress": 5})  # no token at all
        legacy.push(future.task_id, {"progressToken": True, "progress": 5})  # not a token
        notified.until(3)
        legacy.step(future.task_id, 1, 10, "mine")
        assert ear.until(1) == [(1.0, 10.0, "mine")]
        legacy.finish(future.task_id)
        future.result()
    text = caplog.text
    assert "progress for a token this client did not send" in text
    assert "without a usable progressToken" in text
    assert stranger not in text  # a token is shown short, as an id is
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize(
    "bad",
    [{"progress": "half"}, {"progress": None}, {"progress": True}, {"progress": 1, "total": "x"}],
)
def test_progress_that_is_not_a_number_is_ignored_with_a_warning(
    legacy: LegacyProgressServer, caplog: pytest.LogCaptureFixture, bad: dict[str, object]
) -> None:
    notified = Notified()
    with mt.Client.http(legacy.url, on_notification=notified) as client:
        ear = Ear()
        future = mt.submit(client, "report", {}, on_progress=ear)
        token = legacy.progress.tokens[str(future.task_id)]
        with caplog.at_level(logging.DEBUG, logger="mcp_tasks"):
            legacy.push(future.task_id, {"progressToken": token, **bad})
            legacy.push(future.task_id, {"progressToken": token, **bad})
            notified.until(2)
        legacy.step(future.task_id, 2, 10, "fine")
        assert ear.until(1) == [(2.0, 10.0, "fine")]  # the bad ones never reached it
        legacy.finish(future.task_id)
        future.result()
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1, warned  # once per client; later ones at debug
    assert "is not a number; ignoring it" in warned[0]


def test_a_message_that_is_not_text_is_left_out(legacy: LegacyProgressServer) -> None:
    with mt.Client.http(legacy.url) as client:
        ear = Ear()
        future = mt.submit(client, "report", {}, on_progress=ear)
        legacy.step(future.task_id, 1, 2, {"not": "text"})
        assert ear.until(1) == [(1.0, 2.0, None)]
        legacy.finish(future.task_id)
        future.result()


def test_a_modern_call_carries_a_token_and_its_stream_progress_is_heard() -> None:
    with ModernProgressServer() as server, mt.Client.http(server.url) as client:
        ear = Ear()
        result = mt.call_and_await(client, "report", {"before": [[1, 3, "a"], [2, 3, "b"]]}, on_progress=ear)
        assert result["content"][0]["text"] == "report done"
        assert ear.until(2) == [(1.0, 3.0, "a"), (2.0, 3.0, "b")]  # heard before it returned, in order
        mt.call_tool(client, "plain")
        assert len(server.tokens) == 2 and all(isinstance(t, str) and t for t in server.tokens)
        assert server.tokens[0] != server.tokens[1]
        mt.call_tool(client, "plain", meta={"progressToken": 77})
        assert server.tokens[2] == 77  # the caller's own token is kept


def test_a_set_wait_refuses_on_progress(legacy: LegacyProgressServer) -> None:
    with mt.Client.http(legacy.url) as client:
        with pytest.raises(TypeError, match=r"on_progress.*progress is per task"):
            mt.wait_all(client, ["x"], on_progress=print)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="on_progress must be callable"):
            mt.wait_task(client, "x", on_progress=3)  # type: ignore[arg-type]
