"""What the mcp-tasks command says, where it takes knowing the protocol: help for its arguments,
each tool's task support as its server declares it, which errors mean "no such task", and what
becomes of a task whose server lives and dies with the command.
"""

from __future__ import annotations

from typing import Any

from mcp_tasks._errors import McpError
from mcp_tasks._redact import redact_ids, short_id
from mcp_tasks._tasks import is_unknown_task, with_unknown_hint

__all__ = [
    "TARGET_FORMS",
    "TARGET_HELP",
    "TASK_ID_HELP",
    "TOOL_HELP",
    "no_such_task",
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


def no_such_task(error: McpError, task_id: str) -> str | None:
    """The command's line for a server's error that says the task `task_id` is not there (with
    the library's hint on what that means; the id never whole), None for any other error.
    """
    if not is_unknown_task(error):
        return None
    said = redact_ids(with_unknown_hint(error).message, task_id)
    return f"task {short_id(task_id)}: {said} (error {error.code})"


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
