"""One deadline per call (issue 9, item 1): every input round, every protocol retry and the
header-learning round trip take their time from the call's one timeout; a deadline that passes
between two clock reads is a timeout, never a ValueError; Ctrl-C reaches a waiting caller.

The servers here are small direct servers of their own (``handle(message, exchange)``) that are
slow the way real servers are; none is tuned to the client's internal timings. Outcomes and counts
are asserted, never an upper bound on time (the margin is measured in bench/deadline_margin.py).
"""

from __future__ import annotations

import _thread
import threading
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

import mcp_tasks as mt
from mcp_tasks.server import Exchange
from tests.conftest import Harness

SLOW = 0.4  # how long each of these servers takes to answer one request
MODERN = "2026-07-28"  # pinned: these scripted servers answer only what each test is about


class SlowServer:
    """Answers every request after SLOW seconds with what `answer` makes of it; counts them."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._lock = threading.Lock()

    def handle(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        if "id" not in message:
            return None
        with self._lock:
            self.seen.append(message["method"])
        exchange.cancelled.wait(SLOW)
        reply = self.answer(message)
        return {"jsonrpc": "2.0", "id": message["id"], **reply}

    def answer(self, message: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError


class EndlessInput(SlowServer):
    """Asks for a form on every round of a tools/call, and completes after five rounds."""

    def answer(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.seen.count("tools/call") > 5:
            return {"result": {"resultType": "complete", "content": []}}
        ask = {"method": "elicitation/create", "params": {"message": "Go?", "requestedSchema": {"type": "object"}}}
        return {"result": {"resultType": "input_required", "inputRequests": {"go": ask}}}


def test_input_rounds_share_the_calls_timeout() -> None:
    """Five rounds of 0.4 s each do not fit in a 1 s timeout (on 816a4a3 each round got 1 s)."""
    server = EndlessInput()
    handlers = mt.InputHandlers(form=lambda params: {"action": "accept", "content": {}})
    with mt.Client.direct(server, input_handlers=handlers, protocol=MODERN) as client, pytest.raises(mt.RequestTimeout):
        client.call_tool("go", timeout=1.0)
    assert 1 <= server.seen.count("tools/call") < 5


class StateOnly:
    """Answers at once with only a requestState to echo, for ever."""

    def __init__(self) -> None:
        self.rounds = 0

    def handle(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        if "id" not in message:
            return None
        self.rounds += 1
        result = {"resultType": "input_required", "requestState": f"round-{self.rounds}"}
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def test_the_pace_between_state_only_rounds_is_cut_to_the_deadline() -> None:
    """The pause between rounds that echo only requestState counts against the timeout: a 0.1 s
    call times out, where 816a4a3 slept 0.25 s per round and failed after ten rounds instead."""
    server = StateOnly()
    with mt.Client.direct(server, protocol=MODERN) as client, pytest.raises(mt.RequestTimeout):
        client.request("tools/call", {"name": "x"}, timeout=0.1)
    assert server.rounds < 10


class WantsHeaders(SlowServer):
    """-32020 for a tools/call until it has been listed; lists a tool with an x-mcp-header."""

    TOOL: ClassVar[dict[str, Any]] = {
        "name": "regional",
        "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}},
    }

    def answer(self, message: dict[str, Any]) -> dict[str, Any]:
        if message["method"] == "tools/list":
            return {"result": {"tools": [self.TOOL]}}
        if "tools/list" not in self.seen:
            return {"error": {"code": -32020, "message": "Header mismatch: Mcp-Param-Region"}}
        return {"result": {"content": []}}


def test_header_learning_is_bounded_by_the_calls_timeout() -> None:
    """tools/call, tools/list and the second tools/call at 0.4 s each: over a 1 s timeout (on
    816a4a3 each of the three got the whole timeout and the call succeeded after 1.2 s)."""
    server = WantsHeaders()
    with mt.Client.direct(server, protocol=MODERN) as client, pytest.raises(mt.RequestTimeout):
        client.call_tool("regional", {"region": "eu"}, timeout=1.0)
    assert server.seen[:2] == ["tools/call", "tools/list"]


class RefusesVersion(SlowServer):
    """-32022 listing the very version the client sent (a flaky check): worth one retry."""

    def answer(self, message: dict[str, Any]) -> dict[str, Any]:
        data = {"supported": ["2026-07-28"], "requested": "2026-07-28"}
        return {"error": {"code": -32022, "message": "Unsupported protocol version", "data": data}}


def test_the_version_retry_is_bounded_by_the_calls_timeout() -> None:
    """Two 0.4 s answers do not fit in 0.7 s: RequestTimeout, not the server's -32022 after 0.8 s."""
    server = RefusesVersion()
    with mt.Client.direct(server, protocol=MODERN) as client, pytest.raises(mt.RequestTimeout):
        client.request("tools/list", timeout=0.7)
    assert server.seen == ["tools/list", "tools/list"]


# -- a deadline that passes between two clock reads ---------------------------------------------


@pytest.fixture
def hasty_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """time.monotonic that moves `step[0]` seconds further on every read: the deadline passes
    between any two reads the client makes (a mock: a real clock cannot be made to do this)."""
    real = time.monotonic
    step = [0.0]
    drift = [0.0]

    def monotonic() -> float:
        drift[0] += step[0]
        return real() + drift[0]

    monkeypatch.setattr(time, "monotonic", monotonic)
    yield step


@pytest.mark.parametrize("transport", ["direct", "http"])
@pytest.mark.parametrize("step", [0.0005, 0.002, 0.009, 0.031])
def test_a_deadline_passing_between_clock_reads_is_a_timeout(
    hasty_clock: list[float], transport: str, step: float
) -> None:
    """Each clock read moves time on by `step`: whichever read first finds the time up, the wait
    ends with TaskTimeout (or its request with RequestTimeout), never a ValueError."""
    harness = Harness(transport)
    try:
        client = harness.client(server={"poll_interval": 0.001})
        status = mt.call_tool(client, "slow_compute", {"block": True})
        assert isinstance(status, mt.Status)
        hasty_clock[0] = step
        for listen in (False, True):
            with pytest.raises(TimeoutError) as timed_out:
                mt.wait_task(client, status, timeout=0.05, listen=listen, poll_interval=0.001)
            assert isinstance(timed_out.value, (mt.TaskTimeout, mt.RequestTimeout))
            try:  # in time or not, but never a ValueError
                assert mt.get_task(client, status, timeout=0.003).task_id == status.task_id
            except mt.RequestTimeout:
                pass
        hasty_clock[0] = 0.0
        client.call_tool("release", {"gate": "slow"})
    finally:
        harness.close()


# -- Ctrl-C in a waiting caller -------------------------------------------------------------------


class NeverDone:
    """A task that stays working; its stream acknowledges and never pushes. Sets `polled` on
    each tasks/get."""

    def __init__(self) -> None:
        self.polled = threading.Event()

    def handle(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        if "id" not in message:
            return None
        if message["method"] == "subscriptions/listen":
            meta = {"io.modelcontextprotocol/subscriptionId": message["id"]}
            ack = {"notifications": {"taskIds": ["t-1"]}, "_meta": meta}
            exchange.notify({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": ack})
            exchange.cancelled.wait(60)
            return None
        self.polled.set()
        task = {"resultType": "complete", "taskId": "t-1", "status": "working", "pollIntervalMs": 600000}
        return {"jsonrpc": "2.0", "id": message["id"], "result": task}


@pytest.mark.parametrize("listen", [False, True])
def test_interrupt_main_reaches_a_waiting_caller(listen: bool) -> None:
    """`_thread.interrupt_main()` from another thread, while the wait blocks (polling: between
    polls 600 s apart; listening: on a stream that never pushes): KeyboardInterrupt, with the
    note that the task goes on, and the stream closed behind it."""
    assert threading.current_thread() is threading.main_thread()
    server = NeverDone()
    interrupted = threading.Event()

    def interrupt() -> None:
        server.polled.wait(30)
        _thread.interrupt_main()
        interrupted.set()

    helper = threading.Thread(target=interrupt, daemon=True)
    with mt.Client.direct(server, timeout=None, protocol=MODERN) as client:
        helper.start()
        with pytest.raises(KeyboardInterrupt) as caught:
            mt.wait_task(client, "t-1", timeout=None, listen=listen)
        assert interrupted.is_set()  # ordering: it came from the helper, after the first poll
        notes = getattr(caught.value, "__notes__", None)
        if notes is not None:
            assert "still running" in notes[0]
    helper.join(30)
