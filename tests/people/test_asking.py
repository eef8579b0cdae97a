"""A question waiting its turn to ask a person (several tasks asking on one terminal) keeps to its
wait's deadline and leaves the queue when the client closes: never an overshoot, a hang or a
thread left behind.
"""

from __future__ import annotations

import concurrent.futures
import io
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._clock import Deadline
from mcp_tasks._people._asking import turn
from mcp_tasks._people._prompt import TextPrompter
from mcp_tasks._session._turns import TURNS, Turns, Until
from mcp_tasks.server import Server
from tests.conftest import Background, mcp_threads
from tests.foreign.legacy_http_tasks import LegacyHttpTasksServer

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def ask(ctx: Any) -> dict[str, Any]:
    return {"name": ctx.elicit("form", "What is your name?", NAME)["content"]["name"]}


def hello(ctx: Any) -> dict[str, Any]:
    return {"hello": ctx.elicit("form", "What is your name?", NAME)["content"]["name"]}


@pytest.fixture
def server() -> Iterator[Server]:
    made = Server(poll_interval=0.02)
    made.add_tool(ask, name="ask", task="required")
    made.add_tool(hello, name="hello", task="forbidden")
    try:
        yield made
    finally:
        made.close()


class Prompts(TextPrompter):
    """Answers "Ada"; records what it was asked."""

    def __init__(self) -> None:
        super().__init__(stdin=io.StringIO("Ada\n" * 10), out=io.StringIO())
        self.asked: list[str] = []

    def ask(self, prompt: str, field: str) -> str:
        self.asked.append(field)
        return super().ask(prompt, field)


def interactive(server: Server, prompts: Prompts) -> mt.Client:
    return mt.Client.direct(server, input_handlers=mt.InputHandlers.interactive(prompts))


def started(client: mt.Client) -> mt.Status:
    status = mt.call_tool(client, "ask")
    assert isinstance(status, mt.Status)
    return status


def test_a_wait_queued_for_its_turn_times_out_at_its_deadline(server: Server) -> None:
    prompts = Prompts()
    with interactive(server, prompts) as client:
        task = started(client)
        with turn():  # another question is on the screen, and stays there
            waiting = Background(lambda: mt.wait_task(client, task, timeout=2.0))
            assert TURNS.queued(1, 30)
            with pytest.raises(mt.TaskTimeout) as timed_out:
                waiting.result(30)  # it ends while the other question is still being asked
        assert timed_out.value.status is not None and timed_out.value.status.status is mt.TaskState.INPUT_REQUIRED
        assert prompts.asked == []  # the person was never asked for it
        assert not TURNS.queued(1, 0.01)  # it left the queue
        # The question comes when the wait is made again and its turn comes.
        assert mt.await_task(client, task, timeout=30)["structuredContent"] == {"name": "Ada"}


def test_closing_the_client_releases_a_wait_queued_for_its_turn(server: Server) -> None:
    prompts = Prompts()
    client = interactive(server, prompts)
    try:
        task = started(client)
        with turn():
            waiting = Background(lambda: mt.wait_task(client, task, timeout=None))
            assert TURNS.queued(1, 30)
            client.close()
            with pytest.raises(mt.TransportError, match="the client was closed"):
                waiting.result(30)  # released at once, though the other question goes on
        assert prompts.asked == []
    finally:
        client.close()


def test_closing_the_client_releases_futures_queued_for_their_turn(server: Server) -> None:
    prompts = Prompts()
    client = interactive(server, prompts)
    try:
        with turn():
            futures = [mt.submit(client, "ask") for _ in range(2)]
            assert TURNS.queued(2, 30)  # both on the input workers, waiting their turn
            client.close()
            for future in futures:
                with pytest.raises(mt.TransportError, match="the client was closed"):
                    future.result(timeout=30)
            left = [name for name in mcp_threads() if not name.startswith("mcp_tasks-server")]
            assert left == []  # the input workers ended with the close, none left behind
        assert prompts.asked == []
    finally:
        client.close()


def test_cancelling_a_future_releases_its_question_queued_for_its_turn(server: Server) -> None:
    prompts = Prompts()
    with interactive(server, prompts) as client:
        with turn():
            first, second = (mt.submit(client, "ask") for _ in range(2))
            assert TURNS.queued(2, 30)
            assert first.cancel()
            with pytest.raises(concurrent.futures.CancelledError):
                first.result(timeout=30)
            assert TURNS.queued_at_most(1, 30)  # its question left the queue, not to be asked
        assert second.result(timeout=30)["structuredContent"] == {"name": "Ada"}
        assert prompts.asked == ["name"]  # the second task's question only


def test_a_tool_calls_question_queued_for_its_turn_keeps_to_the_calls_timeout(server: Server) -> None:
    prompts = Prompts()
    with interactive(server, prompts) as client:
        with turn():
            calling = Background(lambda: client.call_tool("hello", timeout=2.0))
            assert TURNS.queued(1, 30)
            with pytest.raises(mt.RequestTimeout, match="waiting for a turn to ask a person"):
                calling.result(30)
        assert prompts.asked == []


def test_a_question_that_may_wait_no_longer_leaves_the_queue_and_the_next_comes() -> None:
    turns = Turns()
    closing = threading.Event()
    until = Until(
        Deadline(None), lambda: TimeoutError("late"), lambda: RuntimeError("closed") if closing.is_set() else None
    )
    served: list[str] = []
    outcome: list[BaseException] = []

    def wait_turn(name: str, bounds: Until | None) -> None:
        try:
            with turns.turn(bounds):
                served.append(name)
        except BaseException as exc:
            outcome.append(exc)

    with turns.turn():
        b = threading.Thread(target=wait_turn, args=("b", until), name="b")
        b.start()
        assert turns.queued(1, 30)
        c = threading.Thread(target=wait_turn, args=("c", None), name="c")
        c.start()
        assert turns.queued(2, 30)
        closing.set()
        turns.wake()  # (as `wake_turns()` does for the one queue)
        b.join(30)
        assert not b.is_alive() and [str(e) for e in outcome] == ["closed"]
    c.join(30)
    assert served == ["c"]
    late = Until(Deadline(0.001), lambda: TimeoutError("late"), lambda: None)
    with turns.turn():
        b = threading.Thread(target=wait_turn, args=("b", late), name="b")
        b.start()
        b.join(30)
    assert [str(e) for e in outcome] == ["closed", "late"] and not turns.held()


def test_closing_the_client_releases_a_servers_own_request_queued_for_its_turn() -> None:
    prompts = Prompts()
    with LegacyHttpTasksServer() as server:
        client = mt.Client.http(server.url, input_handlers=mt.InputHandlers.interactive(prompts))
        try:
            with turn():
                # A 2025-era server's request naming no task: the client's handlers answer it.
                calling = Background(lambda: client.call_tool("ask_plain", timeout=None))
                assert TURNS.queued(1, 30)
                client.close()
                with pytest.raises(mt.McpError):
                    calling.result(30)
            assert prompts.asked == []
        finally:
            client.close()
