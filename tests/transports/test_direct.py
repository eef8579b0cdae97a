"""What only the direct transport does: requests on long-lived workers, abandoned at their deadline."""

from __future__ import annotations

import functools
import threading
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._clock import Deadline
from mcp_tasks._exchange import Exchange
from mcp_tasks.transports.direct import DirectTransport
from tests.conftest import Background, eventually


class Recorder:
    """A server object (no mcp_tasks.server) that says which thread ran each request."""

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.cancelled = threading.Event()
        self.stalling = threading.Event()

    def handle(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        self.threads.append(threading.current_thread().name)
        method = message.get("method")
        if method == "stall":
            self.stalling.set()
            if exchange.cancelled.wait(60):
                self.cancelled.set()
            return None
        if method == "chatty":
            exchange.notify({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "hi"}})
        return {"jsonrpc": "2.0", "id": message["id"], "result": {"method": method}}


def call(transport: DirectTransport, method: str, timeout: float | None = 30.0, key: int = 1) -> dict[str, Any]:
    return transport.request({"jsonrpc": "2.0", "id": key, "method": method}, Deadline(timeout))


def test_requests_with_a_timeout_reuse_one_worker() -> None:
    server = Recorder()
    transport = DirectTransport(server)
    try:
        for n in range(200):
            assert call(transport, "tasks/get", key=n)["result"] == {"method": "tasks/get"}
        assert len(set(server.threads)) == 1
        assert transport.workers == 1
    finally:
        transport.close()


def test_a_request_without_a_timeout_runs_in_the_callers_thread() -> None:
    server = Recorder()
    transport = DirectTransport(server)
    try:
        call(transport, "ping", timeout=None)
        assert server.threads == [threading.current_thread().name]
    finally:
        transport.close()


def test_a_stalled_request_is_abandoned_at_its_deadline_and_the_server_sees_it_cancelled() -> None:
    server = Recorder()
    transport = DirectTransport(server)
    try:
        with pytest.raises(mt.RequestTimeout):
            call(transport, "stall", timeout=0.2)
        assert server.cancelled.wait(30)
        assert call(transport, "ping")["result"] == {"method": "ping"}
    finally:
        transport.close()


def test_a_stalled_request_does_not_hold_up_the_others() -> None:
    server = Recorder()
    transport = DirectTransport(server)
    stalled = Background(lambda: call(transport, "stall", timeout=60.0))
    try:
        assert server.stalling.wait(30)
        assert call(transport, "ping", key=2)["result"] == {"method": "ping"}
    finally:
        transport.close()  # cancels the stall
    with pytest.raises(mt.McpError):
        stalled.result()
    assert server.cancelled.is_set()


def test_a_notification_on_a_plain_request_reaches_the_client() -> None:
    server = Recorder()
    transport = DirectTransport(server)
    got: list[tuple[dict[str, Any], object]] = []
    transport.attach(receiver=lambda message, origin: got.append((message, origin)))
    try:
        call(transport, "chatty", key=4)
        assert got == [({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "hi"}}, 4)]
    finally:
        transport.close()


def test_close_joins_every_worker() -> None:
    server = Recorder()
    transport = DirectTransport(server)
    overlapping = [Background(functools.partial(call, transport, "stall", key=n)) for n in range(3)]
    eventually(lambda: len(server.threads) == 3)
    transport.close()
    for caller in overlapping:
        with pytest.raises(mt.McpError):
            caller.result()
    with pytest.raises(mt.TransportError, match="closed"):
        call(transport, "ping")
