"""MCP tool calls as Celery tasks (``pip install mcp_tasks[celery]``): see `McpTasks`.

    from celery import Celery
    from mcp_tasks.celery import McpTasks

    app = Celery("shop", broker=..., backend=...)
    mcp = McpTasks(app, store=os.environ["MCP_TASKS_STORE"])
    result = mcp.call.delay("https://reports.example/mcp", "export", {"id": 7}, timeout=600)
    result.get(timeout=3600)   # the CallToolResult, or raises TaskError

How a call is followed: where the server listens (2026-07-28), the worker process hears its
task end on its client's shared listen stream and stores the result itself, with one fallback
check a call for a process that dies (``mcp_tasks.celery._waker``); elsewhere with short checks,
each a message the broker already makes durable and gives back when a worker dies, so nothing
else has to notice the death, and a revoke reaches it by Celery's own path. A check costs one
broker message and one ``tasks/get`` (`CHECK_EVERY` apart at least, more as the task grows old).
The guide (docs: Celery) measures both.

What the broker loses (a check Redis hands to a worker dying in that instant, a countdown check a
dead worker had reserved) a sweeper in each worker's main process sends again: each call's
checks hold a lease in the task store under a token they carry, renewed at every check; a chain
whose lease lapses (no check renewed it ``quiet`` seconds past its due time) gets a check with a
new token, and a late check of the old token finds the lease taken and ends. So no result is
lost, no two chains of checks go on, and no check calls the tool again (the Celery id keys the
call). The exact rule is in ``mcp_tasks.celery._chain``.
"""

from mcp_tasks.celery._app import CHECK_EVERY, McpTasks
from mcp_tasks.celery._error import TaskError

__all__ = ["CHECK_EVERY", "McpTasks", "TaskError"]
