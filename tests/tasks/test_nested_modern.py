"""A 2026-07-28 connection answered in the 2025-11-25 nested shape (``{"task": {...}}`` where
the era has ``resultType: "task"``): the task is followed, never handed back as the tool's
result, with one warning per connection that names the server, not the task. Against a
socket-level server of the tests' own (tests/foreign/nested_modern.py).
"""

from __future__ import annotations

import pytest

import mcp_tasks as mt
from tests.foreign.nested_modern import NAME, NestedModernServer


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "2025-11-25 shape" in r.getMessage()]


@pytest.mark.parametrize("stamp", [False, True])
def test_a_task_in_the_nested_shape_is_followed_not_returned(stamp: bool, caplog: pytest.LogCaptureFixture) -> None:
    server = NestedModernServer(stamp=stamp)
    server.start()
    try:
        with caplog.at_level("WARNING", logger="mcp_tasks"), mt.Client.http(server.url) as client:
            assert client.era == "modern"
            called = mt.call_tool(client, "quick", {"report": "q3"})
            assert isinstance(called, mt.Status), called  # not {"task": {...}} as if it were the result
            assert called.status is mt.TaskState.WORKING and called.poll_interval_ms == 20
            assert mt.await_task(client, called, timeout=30)["content"][0]["text"] == "ran quick"
            result = mt.call_and_await(client, "quick", raise_on_error=True, timeout=30)
            assert result["content"][0]["text"] == "ran quick"
            plain = mt.call_tool(client, "plain")
            assert isinstance(plain, dict) and plain["content"][0]["text"] == "ran plain"  # a result stays one
            said = _warnings(caplog)
    finally:
        server.close()
    assert len(said) == 1, said  # once for the connection, not once per call
    assert NAME in said[0] and "quick" in said[0]
    assert called.task_id not in said[0] and called.task_id[-8:] not in said[0]
