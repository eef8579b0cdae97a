"""The tasks code: the public helpers, the waits, one protocol object per era, and the state it
keeps per connection (registered on the client's channel; the core knows nothing of tasks).
Each name loads on first use (`mcp_tasks._lazy`), with only the modules it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_tasks._lazy import load_on_first_use

if TYPE_CHECKING:  # loaded on first use (below); type checkers see them here
    from mcp_tasks._tasks._adopt import adopt
    from mcp_tasks._tasks._defaults import CANCEL_BUDGET, DEFAULT_POLL_INTERVAL
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
    from mcp_tasks._tasks._options import WaitOptions
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

if not TYPE_CHECKING:  # (type checkers see the imports above)
    __getattr__ = load_on_first_use(
        globals(),
        {
            "mcp_tasks._tasks._adopt": ("adopt",),
            "mcp_tasks._tasks._failed": ("FailedWait",),
            "mcp_tasks._tasks._future": ("SubmitOptions", "TaskFuture", "bind_future", "submit"),
            "mcp_tasks._tasks._helpers": (
                "call_tool",
                "cancel_task",
                "get_task",
                "list_tasks",
                "may_create_task",
                "outcome",
                "server_supports",
                "task_id_of",
                "update_task",
            ),
            "mcp_tasks._tasks._many": ("ManyOptions", "as_completed", "wait_all", "wait_any"),
            "mcp_tasks._tasks._defaults": ("CANCEL_BUDGET", "DEFAULT_POLL_INTERVAL"),
            "mcp_tasks._tasks._options": ("WaitOptions",),
            "mcp_tasks._tasks._protocol": ("capabilities", "invalid_task"),
            "mcp_tasks._tasks._resume": ("resume",),
            "mcp_tasks._tasks._unknown": ("UNKNOWN_TASK_HINT", "is_unknown_task", "with_unknown_hint"),
            "mcp_tasks._tasks._wait": ("CallOptions", "await_task", "call_and_await", "wait_task"),
        },
    )
