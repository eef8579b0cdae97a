"""The Celery app of tests/celery/test_wake.py's workers: `McpTasks` whose fallback check is due
long after every call of the tests (so a result that arrives was heard on a listen stream, or
acted on by a sweeper), and a visibility timeout longer still (Redis gives back a message a
worker holds longer than that, a countdown check too).
"""

from __future__ import annotations

import logging
import os

from celery import Celery

from mcp_tasks.celery import McpTasks

REDIS = os.environ.get("MCP_CELERY_REDIS", "redis://127.0.0.1:1")
FALLBACK = 300.0

app = Celery("wake", broker=f"{REDIS}/0", backend=f"{REDIS}/1")
app.conf.update(
    broker_transport_options={"visibility_timeout": 3600},
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
)
logging.getLogger("mcp_tasks").setLevel(logging.INFO)
mcp = McpTasks(app, store=os.environ.get("MCP_CELERY_STORE", ":memory:"), check_every=0.3, fallback=FALLBACK)
