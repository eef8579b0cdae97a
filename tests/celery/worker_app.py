"""The Celery app of the celery tests' workers (and of the tests, as a client): its broker, result
backend and task store come from the environment the tests start the workers with.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery

import mcp_tasks as mt
from mcp_tasks.celery import McpTasks

REDIS = os.environ.get("MCP_CELERY_REDIS", "redis://127.0.0.1:1")

app = Celery("tests", broker=f"{REDIS}/0", backend=f"{REDIS}/1")
app.conf.update(
    # A dead worker's messages come back within seconds (Redis's default is an hour).
    broker_transport_options={
        "visibility_timeout": 5,
        "unacked_restore_interval": 1,
        "unacked_restore_throttle": 1,
        "unacked_mutex_expire": 5,  # a worker killed mid-sweep holds the sweep's lock only this long
    },
    result_backend_transport_options={"retry_policy": {"timeout": 5.0}},
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
)


def _answer(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "the worker"}}


handlers = mt.InputHandlers(form=_answer) if os.environ.get("MCP_CELERY_HANDLERS") else None
mcp = McpTasks(app, store=os.environ.get("MCP_CELERY_STORE", ":memory:"), input_handlers=handlers, check_every=0.3)
