"""A server that contradicts itself about how a task ended, at the socket level: it says
``failed`` at creation without the error (as a creation result may) and ``completed`` when read,
or the other way round, or never sends the payload. The first terminal status stays the outcome
and the wait ends with an `McpError` (kind protocol) that says what the server said: never the
bare ``ValueError`` that `outcome()` keeps for a status given to it without its payload.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._redact import short_id
from tests.foreign.modern_http_tasks import ModernHttpTasksServer, _task

RESULT = {"content": [{"type": "text", "text": "done"}], "isError": False}


class Contradicting(ModernHttpTasksServer):
    """``hold`` with ``{"mode": "FIRST>THEN"}``: a task whose creation result says FIRST (without
    its payload) and whose every ``tasks/get`` says THEN.
    """

    def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        result = super()._call(params)
        if result.get("resultType") == "task":
            result["status"] = str(self.tasks[result["taskId"]]["mode"]).split(">")[0]
        return result

    def _hostile(self, task_id: str, task: dict[str, Any]) -> dict[str, Any]:
        then = str(task["mode"]).split(">")[1]
        wire = _task(task_id, then)
        if then == "completed":
            wire["result"] = RESULT
        elif then == "failed":
            wire["error"] = {"code": -32603, "message": "disk full"}
        return wire


@pytest.fixture
def server() -> Iterator[Contradicting]:
    with Contradicting() as started:
        yield started


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("failed>completed", "failed (without its error), then completed when read: it contradicts itself"),
        ("completed>failed", "completed (without its result), then failed when read: it contradicts itself"),
        ("completed>working", "completed (without its result), then working when read: it contradicts itself"),
    ],
)
def test_a_server_contradicting_itself_is_an_mcp_error_that_says_so(
    server: Contradicting, mode: str, said: str
) -> None:
    first = mode.split(">")[0]
    with mt.Client.http(server.url) as client:
        with pytest.raises(mt.McpError) as raised:
            mt.call_and_await(client, "hold", {"mode": mode}, timeout=30)
        assert not isinstance(raised.value, ValueError) and raised.value.kind == "protocol"
        (task_id,) = server.tasks
        assert str(raised.value).startswith(f"The server said task {short_id(task_id)} {first} ")
        assert said in str(raised.value) and task_id not in str(raised.value)
        assert str(raised.value).endswith(f"the first status it gave stays the task's outcome ({first})")
        created = mt.call_tool(client, "hold", {"mode": mode})
        assert isinstance(created, mt.Status) and created.wire_status == first and not created.detailed
        seen: list[str] = []
        with pytest.raises(mt.McpError, match="The server said task"):  # the waits, too
            mt.wait_task(client, created, timeout=30, on_status=lambda s: seen.append(s.wire_status))
        assert seen == [first]  # the outcome it gave first; nothing after it is taken for another
        with pytest.raises(ValueError, match="read it again with get_task"):  # outcome() keeps its ValueError
            mt.outcome(created)
