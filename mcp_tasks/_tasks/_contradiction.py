"""A server that contradicts itself: it said the task completed (or failed) without its result
(or error), as a creation result may, and the read that was to bring it said another state (a read
that says the same carries the payload: a tasks/get without it is refused as invalid). The first
terminal status stays the outcome (a task does not end twice); the wait ends with a
`ProtocolError` saying what the server said, never with a status `outcome()` cannot read.
"""

from __future__ import annotations

from mcp_tasks._errors import ProtocolError
from mcp_tasks._redact import short_id
from mcp_tasks._status import Status, TaskState

__all__ = ["unsettled"]

_PAYLOAD = {TaskState.COMPLETED: "its result", TaskState.FAILED: "its error"}


def unsettled(first: Status, later: Status) -> ProtocolError:
    """The error that ends a wait whose first terminal status `first` lacks its payload, when the
    status read after it, `later`, says another state.
    """
    said = f"The server said task {short_id(first.task_id)} {first.wire_status} (without {_PAYLOAD[first.status]})"
    return ProtocolError(
        f"{said}, then {later.wire_status} when read: it contradicts itself; the first status it gave stays "
        f"the task's outcome ({first.wire_status})",
        cause=later.raw,
    )
