"""The Celery app of bench/celery_fleet.py's workers: `McpTasks` (checks every second, as by
default) and the naive task it is measured against (a worker held for the whole MCP task).
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery

import mcp_tasks as mt
from mcp_tasks.celery import McpTasks

REDIS = os.environ.get("MCP_CELERY_REDIS", "redis://127.0.0.1:1")

app = Celery("bench", broker=f"{REDIS}/0", backend=f"{REDIS}/1")
app.conf.update(
    broker_transport_options={"visibility_timeout": 60, "unacked_restore_interval": 5, "unacked_restore_throttle": 1},
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
    worker_prefetch_multiplier=1,
)
# MCP_CELERY_CHECKS: the checks' queue of their own (the workers consume it too); empty: the call's.
mcp = McpTasks(
    app,
    store=os.environ.get("MCP_CELERY_STORE", ":memory:"),
    check_queue=os.environ.get("MCP_CELERY_CHECKS") or None,
)


@app.task(name="bench.naive", acks_late=True)
def naive(url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """What a team writes today: the worker waits for the MCP task's end."""
    with mt.Client.http(url) as client:
        return mt.call_and_await(client, tool, arguments, timeout=3600)
