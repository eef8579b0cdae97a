"""A task the server does not know: which of its errors say so, and the hint they carry to the
caller (the library's and the command's one wording).
"""

from __future__ import annotations

import re

from mcp_tasks._errors import INVALID_PARAMS, McpError

__all__ = ["UNKNOWN_TASK_HINT", "is_unknown_task", "with_unknown_hint"]

UNKNOWN_TASK_HINT = "no such task on this server: expired, mistyped, or another session's"
"""What a server's bare "not found" for a task id means to the person who gave the id."""

# What servers say for a task they do not know (-32602): "Unknown or inaccessible taskId" (the
# reference server), "Task nope not found" (fastmcp-tasks), "Failed to retrieve task: Task not
# found" (mcp 1.30, server-everything). Other -32602 answers ("Cannot cancel task in terminal
# status") are about a task that exists.
_NOT_FOUND = re.compile(r"not found|unknown|inaccessible|no such|does not exist|expired", re.I)


def is_unknown_task(error: BaseException) -> bool:
    """Whether a server's error about a task says the task is not there (expired, mistyped, or
    kept by another session).
    """
    return isinstance(error, McpError) and error.code == INVALID_PARAMS and bool(_NOT_FOUND.search(error.message))


def with_unknown_hint(error: McpError) -> McpError:
    """`error` with `UNKNOWN_TASK_HINT` after the server's text when it says the task is not
    there (raise it ``from error``); any other error as it is.
    """
    if not is_unknown_task(error) or UNKNOWN_TASK_HINT in error.message:
        return error
    message = f"{error.message} ({UNKNOWN_TASK_HINT})"
    return McpError(error.code, message, error.data, error.kind, error.cause)
