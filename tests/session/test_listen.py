"""Listen streams (subscriptions/listen) on every transport: acknowledgement, events, the bounded
queue, every way a stream ends, and the worker thread."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
import requests

import mcp_tasks as mt
from mcp_tasks._clock import Deadline
from mcp_tasks._session._subscription import Event
from mcp_tasks.server import Exchange, serve_http
from tests.conftest import STREAM_GONE, Background, Harness, eventually, mcp_threads, open_streams
from tests.fixtures.servers import make_server

DECLARED = {"io.modelcontextprotocol/clientCapabilities": mt.capabilities()}


def add_tools(client: mt.Client, *names: str) -> None:
    for name in names:
        client.call_tool("add_tool_named", {"name": name})


def test_acknowledgement_and_accepted_filter(harness: Harness) -> None:
    """Scenario 77: accepted drops what the server will not take; the id is the request id."""
    client = harness.client()
    with client.listen({"toolsListChanged": True, "promptsListChanged": True}) as sub:
        assert sub.accepted == {"toolsListChanged": True}
        assert isinstance(sub.id, int)
        assert "toolsListChanged" in repr(sub)


def test_events_carry_the_subscription_id(harness: Harness) -> None:
    """Scenarios 78-80."""
    client = harness.client()
    with client.listen({"toolsListChanged": True}) as sub:
        add_tools(client, "a", "b")
        first = sub.next(10)
        second = sub.next(10)
        assert isinstance(first, mt.Notification) and isinstance(second, mt.Notification)
        assert first.method == second.method == "notifications/tools/list_changed"
        assert first.params["_meta"]["io.modelcontextprotocol/subscriptionId"] == sub.id
        with pytest.raises(TimeoutError):
            sub.next(0.05)
        add_tools(client, "c")
        assert isinstance(sub.next(10), mt.Notification)  # still usable after a timeout


def test_a_full_queue_drops_the_oldest(harness: Harness) -> None:
    """Scenario 81: max 2, five events: Dropped(3) comes before the two that remain."""
    client = harness.client()
    with client.listen({"toolsListChanged": True}, max_buffer=2) as sub:
        add_tools(client, "t1", "t2", "t3", "t4", "t5")
        eventually(lambda: sub.received == 5, message="five events received")
        assert sub.next(1) == mt.Dropped(3)
        assert isinstance(sub.next(1), mt.Notification)
        assert isinstance(sub.next(1), mt.Notification)
        with pytest.raises(TimeoutError):
            sub.next(0.05)


def test_drop_newest_keeps_the_oldest(harness: Harness) -> None:
    """Scenario 82: max 1, three events: Dropped(2), then the first."""
    client = harness.client()
    with client.listen({"toolsListChanged": True}, max_buffer=1, overflow="drop_newest") as sub:
        add_tools(client, "n1", "n2", "n3")
        eventually(lambda: sub.received == 3, message="three events received")
        assert sub.next(1) == mt.Dropped(2)
        assert isinstance(sub.next(1), mt.Notification)


def test_close_ends_the_stream_on_the_server_and_is_idempotent(harness: Harness) -> None:
    """Scenario 83 (and 57 on stdio: notifications/cancelled reaches the server)."""
    client = harness.client()
    sub = client.listen({"toolsListChanged": True})
    assert open_streams(client) == 1
    sub.close()
    sub.close()
    assert sub.next(0) == mt.Closed(None)
    assert list(sub) == [mt.Closed(None)]
    assert not [t for t in mcp_threads() if t.startswith("mcp_tasks-listen")]
    eventually(lambda: open_streams(client) == 0, timeout=STREAM_GONE, message="the server closed its side")


def test_the_server_ending_the_stream_is_a_normal_close_after_the_queued_events(harness: Harness) -> None:
    """Scenario 85: the server's closing response comes after the queued events."""
    client = harness.client()
    with client.listen({"toolsListChanged": True}) as sub:
        add_tools(client, "x", "y")
        client.call_tool("end_streams")
        events = list(sub)
    assert [type(e) for e in events] == [mt.Notification, mt.Notification, mt.Closed]
    assert events[-1] == mt.Closed(None)
    assert sub.closed


def test_a_failing_source_closes_with_its_error(harness: Harness) -> None:
    """Scenario 86."""
    client = harness.client()
    with client.listen({"toolsListChanged": True}) as sub:
        client.call_tool("end_streams", {"error": True})
        closed = list(sub)[-1]
    assert isinstance(closed, mt.Closed)
    assert closed.error is not None
    assert (closed.error.code, closed.error.kind) == (-32603, "execution")
    assert closed.error.message.startswith("Subscription source failed")


def test_refused_listens(harness: Harness) -> None:
    """Scenarios 55 and 87: taskIds need the extension; bad filters are -32602."""
    client = harness.client()
    with pytest.raises(mt.McpError) as undeclared:
        client.listen({"taskIds": ["x"]})
    assert undeclared.value.code == -32021
    assert undeclared.value.data == {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
    for bad in ("not-a-list", [""], [123], ["x" * 257], [f"id-{n}" for n in range(10_001)]):
        with pytest.raises(mt.McpError) as refused:
            client.listen({"taskIds": bad}, meta=DECLARED)
        assert refused.value.code == -32602
    with pytest.raises(mt.McpError) as no_source:
        harness.client(server={"listen": False}).listen({"toolsListChanged": True})
    assert no_source.value.code == -32601


def test_the_task_filter(harness: Harness) -> None:
    """Scenario 54: duplicates go, unknown ids are left out; task events carry no resultType;
    core events still flow."""
    client = harness.client()
    status = mt.call_tool(client, "slow_compute", {"block": True})
    assert isinstance(status, mt.Status)
    wanted = {"toolsListChanged": True, "taskIds": [status.task_id, "unknown-task", status.task_id]}
    with client.listen(wanted, meta=DECLARED) as sub:
        assert sub.accepted == {"toolsListChanged": True, "taskIds": [status.task_id]}
        mt.cancel_task(client, status)
        event = sub.next(10)
        assert isinstance(event, mt.Notification)
        assert event.method == "notifications/tasks"
        assert event.params["taskId"] == status.task_id
        assert event.params["status"] == "cancelled"
        assert "resultType" not in event.params
        assert event.params["_meta"] == {"io.modelcontextprotocol/subscriptionId": sub.id}
        add_tools(client, "still-flows")
        assert sub.next(10).method == "notifications/tools/list_changed"  # type: ignore[union-attr]


def test_another_principals_tasks_are_not_disclosed() -> None:
    """Scenario 56 (direct principals): the accepted filter is empty, and no events flow."""
    server = make_server()
    with (
        mt.Client.direct(server, principal="tenant-a") as tenant_a,
        mt.Client.direct(server, principal="tenant-b") as tenant_b,
    ):
        status = mt.call_tool(tenant_a, "slow_compute", {"block": True})
        assert isinstance(status, mt.Status)
        with tenant_b.listen({"taskIds": [status.task_id]}, meta=DECLARED) as sub:
            assert sub.accepted == {"taskIds": []}
            mt.cancel_task(tenant_a, status)
            with pytest.raises(TimeoutError):
                sub.next(0.2)
    server.close()


def test_options_are_checked(client: mt.Client) -> None:
    """Scenario 89."""
    with pytest.raises(ValueError):
        client.listen({"toolsListChanged": True}, max_buffer=0)
    with pytest.raises(ValueError):
        client.listen({"toolsListChanged": True}, overflow="block")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        client.listen(["toolsListChanged"])  # type: ignore[arg-type]


def test_a_cut_http_connection_closes_with_an_error() -> None:
    server = make_server()
    http = serve_http(server)
    client = mt.Client.http(http.url)
    sub = client.listen({"toolsListChanged": True})
    http._httpd.close_connections()  # cut the sockets under the stream
    closed = list(sub)[-1]
    assert isinstance(closed, mt.Closed)
    assert isinstance(closed.error, mt.TransportError)
    sub.close()
    client.close()
    http.close()
    server.close()


def test_a_stdio_server_killed_under_a_stream() -> None:
    harness = Harness("stdio")
    client = harness.client()
    with client.listen({"toolsListChanged": True}) as sub:
        with pytest.raises(mt.TransportError):
            client.call_tool("crash")
        closed = list(sub)[-1]
    assert isinstance(closed, mt.Closed)
    assert isinstance(closed.error, mt.TransportError)
    harness.close()


def test_a_direct_server_that_fails_while_streaming() -> None:
    class Broken:
        def handle(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
            if message.get("method") == "server/discover":
                return {"jsonrpc": "2.0", "id": message["id"], "result": {"supportedVersions": ["2026-07-28"]}}
            exchange.notify(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/subscriptions/acknowledged",
                    "params": {"notifications": {}},
                }
            )
            raise RuntimeError("source crashed")

    with mt.Client.direct(Broken()) as client, client.listen({}) as sub:
        closed = list(sub)[-1]
    assert isinstance(closed, mt.Closed)
    assert isinstance(closed.error, mt.TransportError)


def test_http_listen_is_an_event_stream() -> None:
    """Scenario 53: a 200 text/event-stream whose first event is the acknowledgement."""
    server = make_server()
    with serve_http(server) as http:
        body = {
            "jsonrpc": "2.0",
            "id": "listen-1",
            "method": "subscriptions/listen",
            "params": {
                "notifications": {"toolsListChanged": True},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", **DECLARED},
            },
        }
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "subscriptions/listen",
        }
        with requests.post(http.url, data=json.dumps(body), headers=headers, stream=True, timeout=10) as response:
            assert response.status_code == 200
            assert response.headers["Content-Type"] == "text/event-stream"
            first = next(response.iter_lines())
        ack = json.loads(first[len(b"data: ") :])
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"
    server.close()


def test_many_subscriptions_at_once(harness: Harness) -> None:
    client = harness.client()
    subs = [client.listen({"toolsListChanged": True}) for _ in range(5)]
    add_tools(client, "fan-out")
    for sub in subs:
        event = sub.next(10)
        assert isinstance(event, mt.Notification)
        assert event.params["_meta"]["io.modelcontextprotocol/subscriptionId"] == sub.id
    for sub in subs:
        sub.close()
    eventually(lambda: open_streams(client) == 0, timeout=STREAM_GONE, message="every stream closed on the server")


# -- next() and close() (issue 9) -----------------------------------------------------------------


def test_next_takes_zero_none_or_a_positive_timeout(harness: Harness) -> None:
    client = harness.client()
    with client.listen({"toolsListChanged": True}) as sub:
        with pytest.raises(TimeoutError):
            sub.next(0)
        for bad, kind in ((-1, ValueError), (float("nan"), ValueError), ("1", TypeError), (True, TypeError)):
            with pytest.raises(kind):
                sub.next(bad)  # type: ignore[arg-type]
    assert sub.next(None) == mt.Closed(None)


def test_close_wakes_a_reader_waiting_for_ever(harness: Harness) -> None:
    """A reader in another thread blocked in next() with no timeout gets Closed when the
    subscription closes: the wait wakes for close, not at a slice."""
    client = harness.client()
    sub = client.listen({"toolsListChanged": True})
    reader = Background(lambda: sub.next())
    sub.close()
    assert reader.result() == mt.Closed(None)


def test_close_during_the_acknowledgement_wait_ends_it() -> None:
    """A subscription closed while another thread waits for its acknowledgement: that wait ends
    with an error instead of sitting until its deadline."""

    class NoAck:
        def handle(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
            exchange.cancelled.wait(30)
            return None

    from mcp_tasks._clock import Deadline
    from mcp_tasks._session._subscription import Subscription
    from mcp_tasks.transports.direct import DirectTransport

    transport = DirectTransport(NoAck())
    try:
        message = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {"notifications": {}}}
        sub = Subscription(transport.open_stream(message, Deadline(5)), 1)
        waiter = Background(lambda: sub.wait_acknowledged(Deadline(None)))
        sub.close()
        with pytest.raises(mt.McpError):
            waiter.result()
    finally:
        transport.close()


def test_a_sink_takes_every_event_in_the_worker_and_nothing_is_queued(harness: Harness) -> None:
    """The library's own reader (the tasks watch) hands a sink to the stream: each event, and the
    end, goes to it in the stream's worker thread, past any queue bound; none waits in the queue."""
    client = harness.client()
    seen: list[tuple[Event, str]] = []
    ended = threading.Event()

    def sink(event: Event) -> None:
        seen.append((event, threading.current_thread().name))
        if isinstance(event, mt.Closed):
            ended.set()

    sub = client.channel.open_listen({"toolsListChanged": True}, Deadline(10), None, max_buffer=1, sink=sink)
    add_tools(client, "a", "b", "c")
    eventually(lambda: len(seen) == 3, timeout=10, message="three events")
    with pytest.raises(TimeoutError):
        sub.next(0)  # nothing queued
    sub.close()
    assert ended.wait(10)
    assert [type(e).__name__ for e, _ in seen] == ["Notification"] * 3 + ["Closed"]
    assert {name for _, name in seen} == {f"mcp_tasks-listen-{sub.id}"}
