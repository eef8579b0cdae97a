"""A timeout is a total (issue 25, item 5): against a stalled server (it accepts and never answers,
or trickles its headers or its body) a call's exception comes at its deadline, and the server is
still told with ``notifications/cancelled``, but on the transport's own time, never the caller's.

On main (9d8d99e) the notice went out in the caller's thread after the deadline, to the very
server that was the reason for the timeout: every such call raised about `CANCEL_TIMEOUT` (1 s)
late. Here each server holds its answer to the notice until the test has the caller's exception,
and the transport's budget for the notice is longer than any test (`BUDGET`): a caller that waits
for the notice cannot raise while it is held (the old code: ``the call did not return``), and over
HTTP the server also sees whether the client still waited on the notice when it was released.
No timing bound is asserted; bench/deadline_margin.py reports the overshoot.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._clock import Deadline
from mcp_tasks._exchange import Exchange
from mcp_tasks._wire import notification
from mcp_tasks.transports._cancel import MAX_WAITING, CancelSender
from tests.conftest import Background
from tests.foreign.http_servers import Conn, ForeignServer, Hangup, Request
from tests.foreign.stalled_http import MODES, StalledServer

PATIENT = 30.0  # a hang detector: what a test waits for comes long before, or the test fails
BUDGET = 120.0  # the transport's budget for a notice: longer than any test
HOLD = 4 * PATIENT  # how long a held notice lasts unless released: longer than any hang detector


def through_request(client: mt.Client) -> Any:
    return client.request("tools/list", timeout=0.5)


def through_await_task(client: mt.Client) -> Any:
    return mt.await_task(client, "task-stalled-0001", timeout=0.5)


CALLS: dict[str, tuple[Callable[[mt.Client], Any], type[TimeoutError]]] = {
    "request": (through_request, mt.RequestTimeout),
    "await_task": (through_await_task, mt.TaskTimeout),
}


@pytest.fixture(params=MODES)
def stalled(request: pytest.FixtureRequest) -> Iterator[StalledServer]:
    with StalledServer(request.param) as server:
        yield server


@pytest.mark.parametrize("name", sorted(CALLS))
def test_http_a_timeout_against_a_stalled_server_is_a_total(name: str, stalled: StalledServer) -> None:
    call, error = CALLS[name]
    with mt.Client.http(stalled.url, retries=0, protocol="2026-07-28") as client:
        client.transport.cancel_timeout = BUDGET
        caller = Background(lambda: call(client))
        try:
            with pytest.raises(error):
                caller.result(PATIENT)  # raised while the server holds the notice (if it came yet)
            assert stalled.stalled.is_set()  # the server had the request, and stalled it
            assert stalled.noticed.wait(PATIENT)  # still told, afterwards
        finally:
            stalled.release()
        assert stalled.answered.wait(PATIENT)
        assert stalled.client_waited is True  # the notice was sent on the transport's time
        [notice] = stalled.cancelled
        assert notice["reason"] == "the request timed out"
        assert isinstance(notice["requestId"], int)
        assert stalled.methods[-1] == "notifications/cancelled"


class StalledObject:
    """A direct server object (no mcp_tasks.server) that stalls every request until its exchange
    is cancelled, and holds each ``notifications/cancelled`` until `release`.
    """

    def __init__(self) -> None:
        self.stalled = threading.Event()
        self.noticed = threading.Event()
        self.done = threading.Event()
        self.cancelled: list[dict[str, Any]] = []
        self._release = threading.Event()

    def release(self) -> None:
        self._release.set()

    def handle(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        if message.get("method") == "notifications/cancelled":
            self.cancelled.append(message["params"])
            self.noticed.set()
            self._release.wait(HOLD)
            self.done.set()
            return None
        self.stalled.set()
        exchange.cancelled.wait(PATIENT)
        return None


@pytest.mark.parametrize("name", sorted(CALLS))
def test_direct_a_timeout_against_a_stalled_server_is_a_total(name: str) -> None:
    call, error = CALLS[name]
    server = StalledObject()
    with mt.Client.direct(server, retries=0, protocol="2026-07-28") as client:
        client.transport.cancel_timeout = BUDGET
        caller = Background(lambda: call(client))
        try:
            with pytest.raises(error):
                caller.result(PATIENT)
            assert server.stalled.is_set()
            assert server.noticed.wait(PATIENT)
            assert not server.done.is_set()  # the notice is still held: the caller did not wait for it
        finally:
            server.release()
        assert server.done.wait(PATIENT)
        [notice] = server.cancelled
        assert notice["reason"] == "the request timed out"


# -- the cancel sender --------------------------------------------------------------------------


def test_http_close_sends_the_notices_still_waiting() -> None:
    """`close()` right after a timeout: the notice still goes out before the transport closes."""

    def hold(request: Request, conn: Conn) -> None:
        conn.wait_hangup(PATIENT)
        raise Hangup

    with ForeignServer(hold) as server:
        client = mt.Client.http(server.url, retries=0, protocol="2026-07-28")
        client.transport.cancel_timeout = BUDGET
        try:
            with pytest.raises(mt.RequestTimeout):
                client.request("tools/list", timeout=0.2)
        finally:
            client.close()
        assert [c["reason"] for c in server.cancelled] == ["the request timed out"]  # no wait: close sent it


def test_the_notices_waiting_for_the_sender_are_bounded() -> None:
    """One notice being sent, `MAX_WAITING` waiting, and the next dropped; one thread for them all,
    named, a daemon, and joined by `close`."""
    release = threading.Event()
    sending = threading.Event()
    sent: list[dict[str, Any]] = []
    threads: set[str] = set()

    def send(message: dict[str, Any], deadline: Deadline) -> None:
        threads.add(threading.current_thread().name)
        assert threading.current_thread().daemon
        sending.set()
        release.wait(PATIENT)
        sent.append(message)

    sender = CancelSender("test", send, lambda: BUDGET)
    first = notification("notifications/cancelled", {"requestId": 0})
    sender.post(first)
    try:
        assert sending.wait(PATIENT)  # the first is being sent: it waits no more
        for key in range(1, MAX_WAITING + 2):
            sender.post(notification("notifications/cancelled", {"requestId": key}))
    finally:
        release.set()
        sender.close()
    assert [m["params"]["requestId"] for m in sent] == list(range(MAX_WAITING + 1))  # the last one dropped
    assert threads == {"mcp_tasks-cancel-test"}
    sender.post(first)  # closed: dropped, no thread started
    assert len(sent) == MAX_WAITING + 1
