"""What the mcp-tasks command says, where it takes knowing the protocol: help for its arguments,
each tool's task support as its server declares it, which errors mean "no such task", and what
becomes of a task whose server lives and dies with the command.
"""

from __future__ import annotations

import re
from typing import Any

from mcp_tasks._errors import INVALID_PARAMS, McpError

__all__ = [
    "TARGET_FORMS",
    "TARGET_HELP",
    "TASK_ID_HELP",
    "TOOL_HELP",
    "is_no_such_task",
    "task_support",
    "tied_to_command",
]

TARGET_FORMS = """\
TARGET is one of:
  http://host:port/mcp   a Streamable HTTP server
  module:attr            a mcp_tasks.server.Server in this process (imported from the current
                         directory), or a function returning one
  "command args..."      a command line that starts a stdio server (quote it)
"""

TARGET_HELP = "the server: an http(s) URL, module:attr, or a quoted command line (see TARGET above)"
TOOL_HELP = "the tool's name (mcp-tasks tools TARGET lists them)"
TASK_ID_HELP = (
    'the task\'s id, as printed by "mcp-tasks call" (Task created: ...), or as "mcp-tasks tasks" lists it '
    "(e294…b175), or a prefix of one task there"
)

# What servers say for a task they do not know (-32602): "Unknown or inaccessible taskId" (the
# reference server), "Task nope not found" (fastmcp-tasks), "Failed to retrieve task: Task not
# found" (mcp 1.30, server-everything). Other -32602 answers ("Cannot cancel task in terminal
# status") are about a task that exists.
_NOT_FOUND = re.compile(r"not found|unknown|inaccessible|no such|does not exist|expired", re.I)


def is_no_such_task(error: BaseException) -> bool:
    """Whether a server's error about a task says the task is not there (expired, mistyped, or
    kept by another session).
    """
    return isinstance(error, McpError) and error.code == INVALID_PARAMS and bool(_NOT_FOUND.search(error.message))


def task_support(era: str, server_supports: bool, tool: dict[str, Any]) -> str:
    """A tool's task support as its server declares it. 2026-07-28 has no per-tool field: a server
    with the Tasks extension decides per call. A 2025-11-25 server declares it per tool
    (``execution.taskSupport``, absent meaning forbidden) under its ``tasks.requests.tools.call``.
    """
    execution = tool.get("execution")
    declared = execution.get("taskSupport") if isinstance(execution, dict) else None
    if era == "modern":
        if not server_supports:
            return "no (the server does not offer the Tasks extension)"
        return "decided by the server per call"
    if not server_supports:
        return "no (the server does not offer task-augmented tools/call)"
    if declared in ("forbidden", "optional", "required"):
        return str(declared)
    return "forbidden (not declared)"


def tied_to_command(kind: str) -> str:
    """Why a task on a stdio or in-process target ends with the command."""
    how = "in this process" if kind == "module" else "over stdio by this command"
    return f"its server was started {how} and stops when the command exits, and the task with it"
