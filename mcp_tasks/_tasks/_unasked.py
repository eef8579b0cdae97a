"""A task nobody asked for: a 2025-era server that answers a ``tools/call`` the client did not
task-augment (the tool's ``execution.taskSupport`` allows none, or the server advertises no tasks)
with a creation result all the same, as ``mcp-celery`` 0.2.0 does for every call. Handing that
``{"task": {...}}`` back as the tool's result would report a call that has not run yet as done;
the call is followed as the task it is, with one warning per connection naming the server.

Both shapes are taken: the era's nested ``{"task": {...}}`` and the 2026-07-28 flat
``resultType: "task"`` (which the channel refuses as an unknown resultType, the extension not
being declared on such a session: the refusal carries the result).

The other way round, a 2026-07-28 connection answered in the 2025 nested shape (`nested_task`)
is followed too, with a warning of its own once per connection (`warn_nested`).
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

__all__ = ["flat_task", "nested_task", "task_in", "warn_nested", "warn_unasked"]

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


def nested_task(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The task of a 2025-11-25 nested creation result (``{"task": {...}}``, no ``content``) that
    a 2026-07-28 ``tools/call`` got instead of ``resultType: "task"``, in this era's keys
    (``ttl`` and ``pollInterval`` as ``ttlMs`` and ``pollIntervalMs``); None for anything else.
    """
    if result.get("resultType", "complete") != "complete":
        return None
    task = result.get("task")
    if not isinstance(task, Mapping) or "content" in result:
        return None
    modern = dict(task)
    for old, new in (("ttl", "ttlMs"), ("pollInterval", "pollIntervalMs")):
        if old in modern and new not in modern:
            modern[new] = modern.pop(old)
    return modern


def flat_task(refusal: ProtocolError) -> dict[str, Any] | None:
    """The flat creation result (``resultType: "task"``) that the channel refused as an unknown
    resultType on a session that did not declare the extension, or None for any other refusal.
    """
    cause = refusal.cause
    if isinstance(cause, dict) and cause.get("resultType") == "task":
        return cause
    return None


class _Warned:
    """Which warnings of this kind this connection has given (each once)."""

    def __init__(self, _channel: Channel) -> None:
        self._lock = threading.Lock()
        self._done: set[str] = set()

    def first(self, kind: str) -> bool:
        """True the first time for `kind` only."""
        with self._lock:
            first = kind not in self._done
            self._done.add(kind)
            return first


def _server(agreed: Agreement) -> str:
    name = agreed.server_info.get("name")
    return printable(name) if isinstance(name, str) and name else "the server"


def warn_unasked(channel: Channel, agreed: Agreement, tool: str) -> None:
    """Warn, once per connection, that the server made a call a task though it was not asked to."""
    if not channel.attachment(_Warned, _Warned).first("unasked"):
        return
    server = _server(agreed)
    log.warning(
        "server %s answered tools/call of %s with a task though the call did not ask for one (the "
        "tool's taskSupport, or the server's capabilities, allow none): following it as a task (said "
        "once per connection)",
        server,
        printable(tool),
    )


def warn_nested(channel: Channel, agreed: Agreement, tool: str) -> None:
    """Warn, once per connection, that a 2026-07-28 server made a task in the 2025 nested shape."""
    if not channel.attachment(_Warned, _Warned).first("nested"):
        return
    log.warning(
        'server %s answered tools/call of %s with a task in the 2025-11-25 shape ({"task": {...}}) '
        'where %s has resultType "task": following it as a task (said once per connection)',
        _server(agreed),
        printable(tool),
        agreed.version,
    )
