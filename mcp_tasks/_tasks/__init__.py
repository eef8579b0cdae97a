"""The tasks code: the public helpers, the waits, one protocol object per era, and the state it
keeps per connection (registered on the client's channel; the core knows nothing of tasks).
"""

from mcp_tasks._tasks._adopt import adopt
from mcp_tasks._tasks._failed import FailedWait
from mcp_tasks._tasks._future import SubmitOptions, TaskFuture, bind_future, submit
from mcp_tasks._tasks._helpers import (
    call_tool,
    cancel_task,
    get_task,
    list_tasks,
    may_create_task,
    outcome,
    server_supports,
    task_id_of,
    update_task,
)
from mcp_tasks._tasks._many import ManyOptions, as_completed, wait_all, wait_any
from mcp_tasks._tasks._options import CANCEL_BUDGET, DEFAULT_POLL_INTERVAL, WaitOptions
from mcp_tasks._tasks._protocol import capabilities, invalid_task
from mcp_tasks._tasks._resume import resume
from mcp_tasks._tasks._unknown import UNKNOWN_TASK_HINT, is_unknown_task, with_unknown_hint
from mcp_tasks._tasks._wait import CallOptions, await_task, call_and_await, wait_task

__all__ = [
    "CANCEL_BUDGET",
    "DEFAULT_POLL_INTERVAL",
    "UNKNOWN_TASK_HINT",
    "CallOptions",
    "FailedWait",
    "ManyOptions",
    "SubmitOptions",
    "TaskFuture",
    "WaitOptions",
    "adopt",
    "as_completed",
    "await_task",
    "bind_future",
    "call_and_await",
    "call_tool",
    "cancel_task",
    "capabilities",
    "get_task",
    "invalid_task",
    "is_unknown_task",
    "list_tasks",
    "may_create_task",
    "outcome",
    "resume",
    "server_supports",
    "submit",
    "task_id_of",
    "update_task",
    "wait_all",
    "wait_any",
    "wait_task",
    "with_unknown_hint",
]
