"""Waiting on a listen stream (issue: await_task(listen=True)): what only a notification can do."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import mcp_tasks as mt
from mcp_tasks.server import Exchange
from tests.conftest import Harness, accept_form, eventually, open_streams


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
    eventually(lambda: open_streams(client) == 0, message="closed")


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

    with mt.Client.direct(Silent()) as client, pytest.raises(mt.TaskTimeout) as timed_out:
        mt.await_task(client, "whatever", listen=True, timeout=0.3)
    assert timed_out.value.status is None
