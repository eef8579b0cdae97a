"""Abandoned requests, on every transport: a request whose deadline passed, or that something
interrupted (a KeyboardInterrupt while it waits, one out of the receiver), leaves no pending state
behind and the server is told with ``notifications/cancelled`` (unless the caller said it must not
be); and where a server's message came from (`Transport.deliver`'s origin).

The servers are the tests' own: the foreign stdio server, a socket-level HTTP server, and a small
object with ``handle(message, exchange)`` for direct; none is the reference server.
"""

from __future__ import annotations

import _thread
import json
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._clock import Deadline
from mcp_tasks._exchange import Exchange
from mcp_tasks.transports._base import RequestId, Transport
from mcp_tasks.transports.direct import DirectTransport
from mcp_tasks.transports.http import HttpTransport
from mcp_tasks.transports.stdio import StdioTransport
from tests.conftest import ROOT, Background
from tests.foreign.http_servers import Conn, ForeignServer, Hangup, Request, result

SERVER = str(ROOT / "tests" / "foreign_stdio" / "server.py")
PATIENT = 60.0  # a deadline no test reaches: what it waits for comes first, or the test fails


def call(name: str, key: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": key, "method": "tools/call", "params": {"name": name, "arguments": {}}}


def started(message: dict[str, Any]) -> bool:
    """Whether `message` is the notification a slow tool sends once it has the request."""
    params = message.get("params")
    return message.get("method") == "notifications/message" and str((params or {}).get("data", "")).startswith(
        "started"
    )


# -- stdio: the foreign server reports the cancellations it received -----------------------------


@pytest.fixture
def stdio() -> Iterator[StdioTransport]:
    transport = StdioTransport(sys.executable, [SERVER])
    yield transport
    transport.close()


def cancellations(transport: StdioTransport, key: int = 99) -> list[dict[str, Any]]:
    """What the foreign stdio server received as notifications/cancelled so far (it reads its input
    in order, so a cancellation queued before this request is among them)."""
    answer = transport.request(call("cancellations", key), Deadline(PATIENT))
    found: list[dict[str, Any]] = json.loads(answer["result"]["content"][0]["text"])
    return found


def interrupt_when_started(transport: Transport) -> list[tuple[dict[str, Any], RequestId | None]]:
    """Attach a receiver that interrupts the main thread (as Ctrl-C does) once the server has the
    slow request; returns the list where it records what it got, with its origin."""
    got: list[tuple[dict[str, Any], RequestId | None]] = []

    def receiver(message: dict[str, Any], origin: RequestId | None) -> None:
        got.append((message, origin))
        if started(message):
            _thread.interrupt_main()

    transport.attach(receiver=receiver)
    return got


def test_stdio_a_request_interrupted_by_ctrl_c_is_forgotten_and_cancelled(stdio: StdioTransport) -> None:
    got = interrupt_when_started(stdio)
    with pytest.raises(KeyboardInterrupt):
        stdio.request(call("slow", 7), Deadline(PATIENT))
    assert stdio.in_flight == frozenset()
    [cancelled] = cancellations(stdio)
    assert cancelled["requestId"] == 7
    assert "KeyboardInterrupt" in cancelled["reason"]
    assert [origin for _, origin in got] == [None]  # stdio cannot tell which request a message is about


def test_stdio_a_request_that_must_not_be_cancelled_is_forgotten_without_a_cancellation(
    stdio: StdioTransport,
) -> None:
    interrupt_when_started(stdio)
    with pytest.raises(KeyboardInterrupt):
        stdio.request(call("slow", 7), Deadline(PATIENT), cancellable=False)
    assert stdio.in_flight == frozenset()
    assert cancellations(stdio) == []


def test_stdio_a_request_past_its_deadline_is_forgotten_and_cancelled(stdio: StdioTransport) -> None:
    with pytest.raises(mt.RequestTimeout):
        stdio.request(call("slow", 7), Deadline(0.5))
    assert stdio.in_flight == frozenset()
    assert cancellations(stdio) == [{"requestId": 7, "reason": "the request timed out"}]


# -- direct: a small server object --------------------------------------------------------------


class Slow:
    """A server object that records each notifications/cancelled; its "slow" method interrupts
    the caller (blocked waiting for it) and holds until the exchange is cancelled; "chatty" sends
    a notification on its request; "interrupted" raises KeyboardInterrupt itself (a request with
    no timeout runs in the caller's thread, where Ctrl-C lands in the server's code)."""

    def __init__(self) -> None:
        self.cancelled: list[dict[str, Any]] = []
        self.arrived = threading.Condition()
        self.released = threading.Event()

    def handle(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        method = message.get("method")
        if method == "notifications/cancelled":
            with self.arrived:
                self.cancelled.append(message["params"])
                self.arrived.notify_all()
            return None
        if method == "slow":
            _thread.interrupt_main()
            if exchange.cancelled.wait(PATIENT):
                self.released.set()
            return None
        if method == "interrupted":
            raise KeyboardInterrupt
        if method == "chatty":
            exchange.notify({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "hi"}})
        return {"jsonrpc": "2.0", "id": message["id"], "result": {}}

    def wait_cancelled(self) -> list[dict[str, Any]]:
        with self.arrived:
            self.arrived.wait_for(lambda: bool(self.cancelled), PATIENT)
            return list(self.cancelled)


@pytest.fixture
def direct() -> Iterator[tuple[Slow, DirectTransport]]:
    server = Slow()
    transport = DirectTransport(server)
    transport.cancel_timeout = PATIENT  # the notice must arrive, however loaded the machine
    yield server, transport
    transport.close()


def test_direct_a_request_interrupted_by_ctrl_c_is_forgotten_and_cancelled(
    direct: tuple[Slow, DirectTransport],
) -> None:
    server, transport = direct
    with pytest.raises(KeyboardInterrupt):
        transport.request({"jsonrpc": "2.0", "id": 7, "method": "slow"}, Deadline(PATIENT))
    assert transport.in_flight == frozenset()
    assert server.released.wait(PATIENT)  # its exchange was cancelled, as a closed wire shows
    [cancelled] = server.wait_cancelled()
    assert cancelled["requestId"] == 7
    assert "KeyboardInterrupt" in cancelled["reason"]


def test_direct_a_request_without_a_timeout_interrupted_in_the_callers_thread_is_cancelled(
    direct: tuple[Slow, DirectTransport],
) -> None:
    server, transport = direct
    with pytest.raises(KeyboardInterrupt):
        transport.request({"jsonrpc": "2.0", "id": 8, "method": "interrupted"}, Deadline.never())
    assert transport.in_flight == frozenset()
    assert [c["requestId"] for c in server.wait_cancelled()] == [8]


def test_direct_a_request_that_must_not_be_cancelled_is_forgotten_without_a_cancellation(
    direct: tuple[Slow, DirectTransport],
) -> None:
    server, transport = direct
    with pytest.raises(KeyboardInterrupt):
        transport.request({"jsonrpc": "2.0", "id": 7, "method": "slow"}, Deadline(PATIENT), cancellable=False)
    assert transport.in_flight == frozenset()
    assert server.released.wait(PATIENT)
    transport.close()  # sends the notices still waiting, within their budget (PATIENT)
    assert server.cancelled == []  # none was


def test_direct_a_notification_on_a_request_names_that_request(direct: tuple[Slow, DirectTransport]) -> None:
    _, transport = direct
    got: list[tuple[dict[str, Any], RequestId | None]] = []
    transport.attach(receiver=lambda message, origin: got.append((message, origin)))
    transport.request({"jsonrpc": "2.0", "id": 5, "method": "chatty"}, Deadline(PATIENT))
    assert got == [({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "hi"}}, 5)]


# -- HTTP: a socket-level server -----------------------------------------------------------------


def hold_with_a_notification(request: Request, conn: Conn) -> None:
    """Answer a POST with an SSE stream that carries a notification and then nothing, until the
    client hangs up; take the other requests plainly."""
    if request.rpc_method != "tools/call":
        conn.json(result(request, {}))
        return
    conn.sse_head()
    conn.event({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": f"started {request.id}"}})
    conn.wait_hangup(PATIENT)
    raise Hangup


def test_http_a_request_interrupted_from_the_receiver_is_forgotten_and_cancelled() -> None:
    with ForeignServer(hold_with_a_notification) as server:
        transport = HttpTransport(server.url)
        transport.cancel_timeout = PATIENT  # the notice must arrive, however loaded the machine
        got: list[tuple[dict[str, Any], RequestId | None]] = []

        def receiver(message: dict[str, Any], origin: RequestId | None) -> None:
            got.append((message, origin))
            raise KeyboardInterrupt

        transport.attach(receiver=receiver)
        try:
            with pytest.raises(KeyboardInterrupt):
                transport.request(call("slow", 7), Deadline(PATIENT))
            assert transport.in_flight == frozenset()
            [cancelled] = server.wait_cancelled(PATIENT)
            assert cancelled["requestId"] == 7
            assert "KeyboardInterrupt" in cancelled["reason"]
            assert [origin for _, origin in got] == [7]  # the POST's own SSE answer carried it
        finally:
            transport.close()


def test_http_a_request_that_must_not_be_cancelled_is_forgotten_without_a_cancellation() -> None:
    with ForeignServer(hold_with_a_notification) as server:
        transport = HttpTransport(server.url)
        transport.cancel_timeout = PATIENT

        def receiver(message: dict[str, Any], origin: RequestId | None) -> None:
            raise KeyboardInterrupt

        transport.attach(receiver=receiver)
        try:
            with pytest.raises(KeyboardInterrupt):
                transport.request(call("slow", 7), Deadline(PATIENT), cancellable=False)
            assert transport.in_flight == frozenset()
            transport.close()  # sends the notices still waiting, within their budget (PATIENT)
            assert server.cancelled == []  # none was
        finally:
            transport.close()


def test_http_a_request_past_its_deadline_is_cancelled() -> None:
    with ForeignServer(hold_with_a_notification) as server:
        transport = HttpTransport(server.url)
        transport.cancel_timeout = PATIENT
        try:
            with pytest.raises(mt.RequestTimeout):
                transport.request(call("slow", 7), Deadline(0.5))
            assert transport.in_flight == frozenset()
            assert server.wait_cancelled(PATIENT) == [{"requestId": 7, "reason": "the request timed out"}]
        finally:
            transport.close()


def test_http_close_fails_a_request_still_waiting() -> None:
    holding = threading.Event()

    def handler(request: Request, conn: Conn) -> None:
        conn.sse_head()
        holding.set()
        conn.wait_hangup(PATIENT)
        raise Hangup

    with ForeignServer(handler) as server:
        transport = HttpTransport(server.url)
        waiting = Background(lambda: transport.request(call("slow", 7), Deadline(PATIENT)))
        assert holding.wait(PATIENT)
        transport.close()
        with pytest.raises(mt.TransportError, match="closed"):
            waiting.result()
        assert transport.in_flight == frozenset()
