"""A task is picked up again by id: from another thread of a web app sharing one client, and
after its Status was saved as JSON (another process: tests/cli/test_commands.py)."""

from __future__ import annotations

import json
import threading
from typing import Any

import mcp_tasks as mt
from mcp_tasks.server import Server, serve_http
from tests.conftest import Background


def test_another_request_thread_awaits_the_task_by_its_saved_id() -> None:
    server = Server(poll_interval=0.02)
    gate = threading.Event()

    @server.tool(task="required")
    def report(ctx: Any, name: str) -> dict[str, Any]:
        while not gate.is_set() and not ctx.cancelled:
            ctx.sleep(0.01)
        return {"report": name}

    saved: dict[str, str] = {}
    with serve_http(server) as http, mt.Client.http(http.url) as client:  # one client for the app

        def start_request() -> None:  # POST /reports
            task = mt.call_tool(client, "report", {"name": "q3"})
            assert isinstance(task, mt.Status)
            saved["q3"] = json.dumps(task.to_map())  # kept in a session store

        def result_request() -> dict[str, Any]:  # GET /reports/q3, in another thread
            task_id = mt.Status.from_map(json.loads(saved["q3"])).task_id
            return mt.await_task(client, task_id, timeout=30)

        Background(start_request).result()
        waiting = Background(result_request)
        gate.set()
        assert waiting.result()["structuredContent"] == {"report": "q3"}
    server.close()
