"""What a `Status` shows a person, as (label, value) rows for the renderer (`_render_hook`): task
and session ids in their short forms, even inside a server's text, and a server's text shown
through `printable`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_tasks._printable import printable
from mcp_tasks._redact import redact_ids, short_id

if TYPE_CHECKING:
    from mcp_tasks._render_hook import Rows
    from mcp_tasks._status import Status

__all__ = ["shown", "status_rows"]


def shown(status: Status, text: str) -> str:
    """`text` (about `status`) as a person may see it: the task's ids short, escapes shown."""
    return printable(redact_ids(text, status.task_id, status.session_id))


def _payload(status: Status) -> str | None:
    if status.input_requests:
        keys = sorted(status.input_requests)
        return "input requests: " + ", ".join(repr(redact_ids(k, status.task_id, status.session_id)) for k in keys)
    if status.result is not None:
        blocks = status.result.get("content")
        count = len(blocks) if isinstance(blocks, list) else 0
        parts = [f"{count} content block{'s' if count != 1 else ''}"]
        if "structuredContent" in status.result:
            parts.append("structuredContent")
        if status.result.get("isError"):
            parts.append("isError")
        return "result: " + ", ".join(parts)
    if status.error is not None:
        return shown(status, f"error {status.error.get('code')}: {status.error.get('message')}")
    return None


def status_rows(status: Status) -> Rows:
    """What a display shows of a status, as (label, value) rows; empty fields are left out."""
    rows = [("status", shown(status, status.wire_status)), ("task", short_id(status.task_id))]
    if status.status_message:
        rows.append(("message", shown(status, status.status_message)))
    if status.created_at:
        rows.append(("created", status.created_at))
    if status.last_updated_at:
        rows.append(("updated", status.last_updated_at))
    payload = _payload(status)
    if payload:
        rows.append(("payload", payload))
    if status.era != "modern":
        rows.append(("era", status.era))
    if status.session_id is not None:
        rows.append(("session", short_id(status.session_id)))
    return rows
