"""The server the benchmarks run against."""

from __future__ import annotations

import threading
import time
from typing import Any

from mcp_tasks.server import Server, ToolContext


def make(poll_interval: float = 0.25) -> Server:
    """A reference server with the tools the benchmarks use."""
    server = Server("bench", poll_interval=poll_interval, task_ttl=600)
    gates: dict[str, threading.Event] = {}
    lock = threading.Lock()

    def gate(name: str) -> threading.Event:
        with lock:
            return gates.setdefault(name, threading.Event())

    @server.tool(task="optional")
    def hold(ctx: ToolContext) -> dict[str, Any]:
        """A task that stays working until cancelled."""
        ctx.sleep(3600)
        return {}

    @server.tool(task="optional")
    def gated(ctx: ToolContext, name: str) -> dict[str, Any]:
        """A task that completes the moment its gate opens, and says when (monotonic clock)."""
        opened = gate(name)
        while not opened.wait(0.05):
            ctx.check_cancelled()
        return {"done_at": time.monotonic()}

    @server.tool()
    def release(ctx: ToolContext, name: str) -> dict[str, Any]:
        """Open a gate."""
        gate(name).set()
        return {}

    return server


def make_fast() -> Server:
    """The same, suggesting a 100 ms poll interval (for the listen latency benchmark)."""
    return make(0.1)
