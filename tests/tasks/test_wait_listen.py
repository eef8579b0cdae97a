"""Waiting on a listen stream (issue: await_task(listen=True)): what only a notification can do."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import mcp_tasks as mt
from mcp_tasks.server import Exchange
from tests.conftest import STREAM_GONE, Harness, accept_form, eventually, open_streams


def test_input_is_answered_from_a_notification(harness: Harness) -> None:
    """The poll interval is 600 s: the input request and the completion both come by notification."""
    client = harness.client(server={"poll_interval": 600}, input_handlers=mt.InputHandlers(form=accept_form))
    seen: list[str] = []
    result = mt.call_and_await(
        client, "confirm_delete", listen=True, timeout=10, on_status=lambda s: seen.append(s.wire_status)
    )
    assert result["structuredContent"]["confirmation"]["action"] == "accept"
    assert "completed" in seen
    gets = client.call_tool("stats", {"method": "tasks/get"})["structuredContent"]["times"]
    assert len(gets) == 1  # only the read after the acknowledgement


def test_a_handler_exception_still_closes_the_stream(harness: Harness) -> None:
    def explode(params: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("handler bug")

    client = harness.client(server={"poll_interval": 600}, input_handlers=mt.InputHandlers(form=explode))
    with pytest.raises(RuntimeError):
        mt.call_and_await(client, "confirm_delete", listen=True, timeout=10)
    eventually(lambda: open_streams(client) == 0, timeout=STREAM_GONE, message="closed")


class LegacyPusher:
    """A direct server that says working on tasks/get, and pushes completion under the legacy
    notification name notifications/tasks/status."""

    TASK: ClassVar[dict[str, Any]] = {
        "taskId": "legacy-named",
        "createdAt": "2026-11-30T10:00:00Z",
        "lastUpdatedAt": "2026-11-30T10:00:00Z",
    }

    def handle(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        if "id" not in message:
            return None
        method = message["method"]
        if method == "server/discover":
            return {"jsonrpc": "2.0", "id": message["id"], "result": {"supportedVersions": ["2026-07-28"]}}
        if method == "tasks/get":
            result = {"resultType": "complete", **self.TASK, "status": "working", "pollIntervalMs": 600000}
            return {"jsonrpc": "2.0", "id": message["id"], "result": result}
        assert method == "subscriptions/listen"
        meta = {"io.modelcontextprotocol/subscriptionId": message["id"]}
        ack = {"notifications": {"taskIds": ["legacy-named"]}, "_meta": meta}
        exchange.notify({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": ack})
        done = {**self.TASK, "status": "completed", "result": {"content": [], "isError": False}, "_meta": meta}
        exchange.notify({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": done})
        exchange.cancelled.wait(30)
        return None


def test_the_legacy_notification_name_is_accepted() -> None:
    with mt.Client.direct(LegacyPusher()) as client:
        assert mt.await_task(client, "legacy-named", listen=True, timeout=10) == {"content": [], "isError": False}


def test_a_listen_wait_that_cannot_be_acknowledged_in_time_on_direct() -> None:
    """Direct included: opening the stream is bounded by the wait's deadline."""

    class Silent:
        def handle(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
            exchange.cancelled.wait(30)
            return None

    with mt.Client.direct(Silent(), protocol="2026-07-28") as client, pytest.raises(mt.TaskTimeout) as timed_out:
        mt.await_task(client, "whatever", listen=True, timeout=0.3)
    assert timed_out.value.status is None


# -- listen waits degrade to polling (issue 9, item 6) -------------------------------------------

DONE = {"content": [{"type": "text", "text": "done"}], "isError": False}


class Scripted:
    """A direct server for one task, "t-9": tasks/get says working `working_reads` times, then
    completed; subscriptions/listen is answered by `listen` (a method of a subclass)."""

    def __init__(self, working_reads: int = 1) -> None:
        self.working_reads = working_reads
        self.gets = 0

    def handle(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        if "id" not in message:
            return None
        if message["method"] == "server/discover":
            return {"jsonrpc": "2.0", "id": message["id"], "result": {"supportedVersions": ["2026-07-28"]}}
        if message["method"] == "subscriptions/listen":
            return self.listen(message, exchange)
        assert message["method"] == "tasks/get"
        self.gets += 1
        task: dict[str, Any] = {"resultType": "complete", "taskId": "t-9", "pollIntervalMs": 50}
        if self.gets <= self.working_reads:
            task["status"] = "working"
        else:
            task.update(status="completed", result=DONE)
        return {"jsonrpc": "2.0", "id": message["id"], "result": task}

    def listen(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        raise NotImplementedError

    @staticmethod
    def acknowledge(message: dict[str, Any], exchange: Exchange, accepted: dict[str, Any]) -> dict[str, Any]:
        meta = {"io.modelcontextprotocol/subscriptionId": message["id"]}
        params = {"notifications": accepted, "_meta": meta}
        exchange.notify({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": params})
        return meta


class NoListen(Scripted):
    def listen(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}}


class AckWithoutTaskIds(Scripted):
    def listen(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        self.acknowledge(message, exchange, {"toolsListChanged": True})
        exchange.cancelled.wait(30)
        return None


class AckWithoutTheTask(Scripted):
    def listen(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        self.acknowledge(message, exchange, {"taskIds": []})
        exchange.cancelled.wait(30)
        return None


class NeverPushes(Scripted):
    def listen(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        self.acknowledge(message, exchange, {"taskIds": ["t-9"]})
        exchange.cancelled.wait(60)
        return None


class EndsAfterAck(Scripted):
    def listen(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        self.acknowledge(message, exchange, {"taskIds": ["t-9"]})
        return {"jsonrpc": "2.0", "id": message["id"], "result": {}}


class PushesAnArray(Scripted):
    """Notifies a JSON array on the stream, then the task's completion."""

    def listen(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        exchange.notify([0])  # type: ignore[arg-type]  # hostile on purpose
        meta = self.acknowledge(message, exchange, {"taskIds": ["t-9"]})
        exchange.notify([1, 2, 3])  # type: ignore[arg-type]
        done = {"taskId": "t-9", "status": "completed", "result": DONE, "_meta": meta}
        exchange.notify({"jsonrpc": "2.0", "method": "notifications/tasks", "params": done})
        exchange.cancelled.wait(30)
        return None


@pytest.mark.parametrize("server", [NoListen, AckWithoutTaskIds, EndsAfterAck, PushesAnArray])
def test_a_listen_wait_that_cannot_listen_still_returns_the_outcome(server: type[Scripted]) -> None:
    """-32601 for subscriptions/listen, an acknowledgement that says nothing of taskIds, a stream
    that ends after its acknowledgement, a JSON array pushed on the stream: the outcome either way
    (816a4a3 raised -32601 or -32602 for the first two)."""
    scripted = server(working_reads=2)
    with mt.Client.direct(scripted) as client:
        assert mt.await_task(client, "t-9", listen=True, timeout=10) == DONE


def test_an_acknowledgement_that_leaves_the_task_out_means_the_task_is_polled() -> None:
    """Issue 17: a server may acknowledge a subset (a cap, say); the ids left out are polled."""
    scripted = AckWithoutTheTask(working_reads=1)
    with mt.Client.direct(scripted) as client:
        assert mt.await_task(client, "t-9", listen=True, timeout=10) == DONE
    assert scripted.gets == 2


def test_a_stream_that_never_pushes_cannot_stall_the_wait() -> None:
    """The server acknowledges and never pushes; the task is done at its second read. The wait
    reads it at the safety cadence (never under 5 s) and returns the outcome with two reads, where
    816a4a3 sat until its deadline."""
    scripted = NeverPushes(working_reads=1)
    with mt.Client.direct(scripted) as client:
        assert mt.await_task(client, "t-9", listen=True, timeout=20, poll_interval=0.05) == DONE
    assert scripted.gets == 2


class DeclineOnce:
    """An input strategy that answers {} the first time it is asked, then accepts."""

    def __init__(self) -> None:
        self.asked = 0

    def answer(self, client: mt.Client, status: mt.Status, pending: dict[str, Any]) -> dict[str, Any]:
        self.asked += 1
        if self.asked == 1:
            return {}
        return {key: accept_form({}) for key in pending}


@pytest.mark.parametrize("listen", [False, True])
def test_an_input_strategy_that_answers_nothing_is_asked_again(harness: Harness, listen: bool) -> None:
    """{} from the strategy: asked again at the poll interval, in both modes (on 816a4a3 a listen
    wait never asked again and timed out)."""
    client = harness.client(server={"poll_interval": 0.05})
    strategy = DeclineOnce()
    result = mt.call_and_await(client, "confirm_delete", listen=listen, timeout=20, input=strategy)
    assert result["structuredContent"]["confirmation"]["action"] == "accept"
    assert strategy.asked == 2
