"""A task nobody asked for: a 2025-era server that answers a ``tools/call`` the client did not
task-augment (the tool's ``execution.taskSupport`` allows none, or the server advertises no tasks)
with a creation result all the same, as ``mcp-celery`` 0.2.0 does for every call. Handing that
``{"task": {...}}`` back as the tool's result would report a call that has not run yet as done;
the call is followed as the task it is, with one warning per connection naming the server.

Both shapes are taken: the era's nested ``{"task": {...}}`` and the 2026-07-28 flat
``resultType: "task"`` (which the channel refuses as an unknown resultType, the extension not
being declared on such a session: the refusal carries the result).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp_tasks._errors import ProtocolError
from mcp_tasks._printable import printable

if TYPE_CHECKING:
    from mcp_tasks._session._agreement import Agreement
    from mcp_tasks._session._channel import Channel

__all__ = ["flat_task", "task_in", "warn_unasked"]

log = logging.getLogger("mcp_tasks")


def task_in(result: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The task map a ``tools/call`` result carries instead of the tool's result, or None: the
    nested creation result of 2025-11-25 (without ``content``: a tool result with a field of
    that name is the tool's), or the flat one of 2026-07-28.
    """
    if result.get("resultType") == "task":
        return result
    task = result.get("task")
    if isinstance(task, Mapping) and "content" not in result:
        return task
    return None


def flat_task(refusal: ProtocolError) -> dict[str, Any] | None:
    """The flat creation result (``resultType: "task"``) that the channel refused as an unknown
    resultType on a session that did not declare the extension, or None for any other refusal.
    """
    cause = refusal.cause
    if isinstance(cause, dict) and cause.get("resultType") == "task":
        return cause
    return None


class _Warned:
    """Whether this connection has warned of a task it did not ask for."""

    def __init__(self, _channel: Channel) -> None:
        self._lock = threading.Lock()
        self._done = False

    def first(self) -> bool:
        """True the first time only."""
        with self._lock:
            first, self._done = not self._done, True
            return first


def warn_unasked(channel: Channel, agreed: Agreement, tool: str) -> None:
    """Warn, once per connection, that the server made a call a task though it was not asked to."""
    if not channel.attachment(_Warned, _Warned).first():
        return
    name = agreed.server_info.get("name")
    server = printable(name) if isinstance(name, str) and name else "the server"
    log.warning(
        "server %s answered tools/call of %s with a task though the call did not ask for one (the "
        "tool's taskSupport, or the server's capabilities, allow none): following it as a task (said "
        "once per connection)",
        server,
        printable(tool),
    )
