"""The errors that are a task's outcome: it failed (`TaskFailed`), a wait on it ran out of time
(`TaskTimeout`), its tool reported an error (`ToolError`), it was cancelled (`TaskCancelled`), or it
needs input the wait did not answer (`InputRequired`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp_tasks._call_text import arguments_text
from mcp_tasks._errors._codes import INTERNAL_ERROR, REQUEST_TIMEOUT
from mcp_tasks._errors._display import Displayed
from mcp_tasks._errors._mcp_error import McpError, millis, seconds
from mcp_tasks._printable import printable
from mcp_tasks._redact import redact_ids, short_id

if TYPE_CHECKING:
    from mcp_tasks._status import Status

__all__ = ["MAX_TOOL_TEXT", "InputRequired", "TaskCancelled", "TaskFailed", "TaskTimeout", "ToolError"]


class TaskFailed(McpError):
    """The task failed: `code`, `message` and `data` are those of its error; `.status` is the task.

    ``str(error)`` names the task as well: ``Task abcd…wxyz failed: <message>``, or by its call
    when the client knows it (``Task export {"report": "q3"} abcd…wxyz failed: …``: `label`).
    Where the server's message embeds the task id, `message` shows its short form
    (``status.error`` keeps the text as sent).
    """

    def __init__(self, status: Status, *, label: str | None = None) -> None:
        error = status.error or {}
        code = error.get("code", INTERNAL_ERROR)
        message = redact_ids(str(error.get("message", "The task failed")), status.task_id)
        super().__init__(code, message, error.get("data"), None, ("task_failed", status))
        self.status = status
        self.label = label

    def __str__(self) -> str:
        named = _named(self.status.task_id, self.label)
        text = f"Task {named} failed: {self.message} (error {self.code}){_undeclared(self)}"
        return printable(text)


def _named(task_id: str, label: str | None) -> str:
    """The task as an error names it: its call and short id (`label`, from
    `mcp_tasks._call_text.task_label`) when the client knows its call, else its short id.
    """
    return printable(label) if label else short_id(task_id)


_UNDECLARED = re.compile(r"does not support (elicitation|sampling|roots) capability", re.IGNORECASE)
_KINDS_OF = {"elicitation": '["form", "url"]', "sampling": '["sampling"]', "roots": '["roots"]'}


def _undeclared(failed: TaskFailed) -> str:
    """Why a 2025-era server could not ask, when it says so: the session declared no such input."""
    found = _UNDECLARED.search(failed.message)
    if found is None:
        return ""
    capability = found.group(1).lower()
    return (
        f". The session that started the task did not declare {capability}, and a 2025-11-25 server "
        "asks only what the session declared: start such tasks from a client with input handlers, "
        f"or with declare_input={_KINDS_OF[capability]} (a client with a store= and no input handlers "
        "declares form and url), "
        "and answer later with resume()"
    )


class TaskTimeout(McpError, TimeoutError):
    """A wait ran out of time. The task keeps running on the server: wait again, or cancel it.

    Kind ``extension``: the Tasks wait's own deadline, not the connection's (it is not a
    `TransportError`, and is never retried).

    `data` holds ``taskId`` and ``timeoutMs`` (the configured timeout); `.status` is the last status
    the wait read, or None when it read none; `.cancelled` is True when the wait cancelled the task
    (``cancel_on_timeout=True``); `.pending` lists the last Status of each unfinished task.
    `label` names the task by its call when the client knows it (``Task export {"report": "q3"}
    abcd…wxyz did not finish …``).
    """

    def __init__(
        self,
        task_id: str,
        timeout: float,
        status: Status | None,
        *,
        cancelled: bool = False,
        pending: list[Status] | None = None,
        label: str | None = None,
    ) -> None:
        last = f" (last seen {redact_ids(status.wire_status, task_id, status.task_id)})" if status is not None else ""
        then = (
            "it was cancelled (cancel_on_timeout)"
            if cancelled
            else "it is still running on the server: wait for it again by its id "
            "(timeout=None waits as long as it takes), or cancel it"
        )
        what = f"Task {_named(task_id, label)}"
        if pending is not None and len(pending) > 1:  # a wait on many tasks (wait_all, ...)
            what, last = f"{len(pending)} tasks (the first {short_id(task_id)})", ""
            then = (
                "they were cancelled (cancel_on_timeout)"
                if cancelled
                else "they are still running on the server: wait for them again, or cancel them"
            )
        super().__init__(
            REQUEST_TIMEOUT,
            f"{what} did not finish within {seconds(timeout)}{last}; {then}",
            {"taskId": task_id, "timeoutMs": millis(timeout)},
            "extension",
            ("timeout", status),
        )
        self.status = status
        self.cancelled = cancelled
        self.label = label
        # The last Status of each unfinished task (a wait on many tasks lists them all).
        self.pending: list[Status] = list(pending) if pending is not None else [status] if status is not None else []


MAX_TOOL_TEXT = 2000
"""The most of a tool's error text a `ToolError` message carries (its `.result` has all of it)."""


class ToolError(McpError):
    """The tool ran and reported an error of its own: a result with ``isError: true``.

    Returning such a result is how MCP reports a tool's failure, so the waits return it; given
    ``raise_on_error=True``, `call_and_await`, `await_task` and `resume` raise this instead (as
    requests' ``raise_for_status()`` does). `.result` is the CallToolResult as the server sent it,
    `.status` the task's last Status (None for a tool that ran without a task), `.tool` the tool's
    name and `.arguments` its arguments when the caller gave them (the message shows them in
    short, values under secret-looking keys hidden). `message` is the tool's own text. Code `INTERNAL_ERROR`, kind
    ``execution``. (On the server's side, a tool raises `mcp_tasks.server.ToolError` to return
    such a result.)
    """

    def __init__(
        self,
        result: dict[str, Any],
        status: Status | None = None,
        tool: str | None = None,
        arguments: Mapping[str, Any] | None = None,
    ) -> None:
        texts = [
            item["text"].strip()
            for item in result.get("content") or ()
            if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str)
        ]
        text = "; ".join(t for t in texts if t) or "(its result has no text)"
        if len(text) > MAX_TOOL_TEXT:
            text = text[:MAX_TOOL_TEXT] + "…"
        if status is not None:
            text = redact_ids(text, status.task_id)
        who = f"Tool {tool!r}" if tool else "The tool"
        shown = arguments_text(arguments)
        if tool and shown:
            who += f" {shown}"
        if status is not None:
            who += f" (task {short_id(status.task_id)})"
        super().__init__(INTERNAL_ERROR, f"{who} reported an error: {text}", None, "execution", ("tool_error", result))
        self.result = result
        self.status = status
        self.tool = tool
        self.arguments = arguments


class TaskCancelled(Displayed, Exception):
    """The task was cancelled: an outcome, not a protocol error. `.status` is the task; `label`
    names it by its call when the client knows it.
    """

    def __init__(self, status: Status, *, label: str | None = None) -> None:
        why = f": {redact_ids(status.status_message, status.task_id)}" if status.status_message else ""
        super().__init__(f"Task {_named(status.task_id, label)} was cancelled{why}")
        self.status = status
        self.label = label


class InputRequired(Displayed, Exception):
    """The task needs input this wait did not answer. `.status` lists it in `input_requests`;
    `label` names the task by its call when the client knows it.
    """

    def __init__(self, status: Status, *, label: str | None = None) -> None:
        keys = ", ".join(repr(redact_ids(k, status.task_id)) for k in sorted(status.input_requests)) or "none listed"
        super().__init__(
            f"Task {_named(status.task_id, label)} needs input this wait did not answer ({keys}): answer it with "
            "update_task, or wait with input handlers that can"
        )
        self.status = status
        self.label = label
