"""MCP tool calls as Celery tasks (``pip install mcp_tasks[celery]``): see `McpTasks`.

    from celery import Celery
    from mcp_tasks.celery import McpTasks

    app = Celery("shop", broker=..., backend=...)
    mcp = McpTasks(app, store=os.environ["MCP_TASKS_STORE"])
    result = mcp.call.delay("https://reports.example/mcp", "export", {"id": 7}, timeout=600)
    result.get(timeout=3600)   # the CallToolResult, or raises TaskError

Why short checks rather than a follower thread in each worker: a check is a message the broker
already makes durable and gives back when a worker dies (acks_late), so nothing else has to
notice the death, and a revoke reaches it by Celery's own path; the price is one broker message
and one ``tasks/get`` per check (`CHECK_EVERY`). The guide (docs: Celery) measures both.
"""

from mcp_tasks.celery._app import CHECK_EVERY, McpTasks
from mcp_tasks.celery._error import TaskError

__all__ = ["CHECK_EVERY", "McpTasks", "TaskError"]
