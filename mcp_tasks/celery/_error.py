"""`TaskError`: how a failed MCP call reaches a Celery result. Celery's JSON serializer keeps an
exception as its class and ``args`` and rebuilds it as ``cls(*args)``, so the args are exactly
the fields (code, message, data, short task id), all JSON, never a full task id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_tasks._errors import INTERNAL_ERROR, McpError
from mcp_tasks._redact import redact_ids, short_id

__all__ = ["TaskError", "failure_of"]


class TaskError(McpError):
    """An MCP call run by `McpTasks` failed: the task failed, the tool reported an error
    (``raise_on_error=True``), the ``timeout`` keyword ran out, or the call's outcome is unknown.
    `code`, `message` and `data` are the error's; `short_task_id` names the MCP task in its short
    form (None when no task was made). ``result.get()`` raises it with these fields.
    """

    def __init__(self, code: int, message: str, data: Any = None, short_task_id: str | None = None) -> None:
        super().__init__(code, message, data)
        self.short_task_id = short_task_id
        self.args = (code, message, data, short_task_id)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self.args)


TaskError.__module__ = "mcp_tasks.celery"


def _without_ids(value: Any, task_id: str | None) -> Any:
    """`value` (JSON) with the full task id shortened in its strings and ``taskId`` dropped."""
    if isinstance(value, str):
        return redact_ids(value, task_id) if task_id else value
    if isinstance(value, Mapping):
        return {str(k): _without_ids(v, task_id) for k, v in value.items() if k != "taskId"}
    if isinstance(value, (list, tuple)):
        return [_without_ids(v, task_id) for v in value]
    return value if value is None or isinstance(value, (bool, int, float)) else repr(value)


def failure_of(error: BaseException, task_id: str | None) -> TaskError:
    """`error` (any failure of a call) as the `TaskError` a Celery result can carry."""
    code = error.code if isinstance(error, McpError) else INTERNAL_ERROR
    message = error.message if isinstance(error, McpError) else str(error)
    data = error.data if isinstance(error, McpError) else None
    short = short_id(task_id) if task_id else None
    return TaskError(code, _without_ids(message, task_id), _without_ids(data, task_id), short)
