"""Records only move forward: whether a status read may replace the one a store keeps. Two waits
on one task read it at different times and their writes may land in any order (a slow link, a busy
store); a store asks `moves_forward` inside the transaction that writes, so a late `working` never
reopens a task another wait recorded as completed, and the first end recorded is the one kept.
"""

from __future__ import annotations

from datetime import datetime, timezone

from mcp_tasks._status import Status
from mcp_tasks._store._ref import TaskRef

__all__ = ["moves_forward", "updated_at"]


def updated_at(status: Status) -> datetime | None:
    """The status's ``lastUpdatedAt`` as an aware time (UTC when it names no zone), or None when
    it has none or one that does not read as an ISO 8601 time.
    """
    text = status.last_updated_at
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def moves_forward(kept: TaskRef, status: Status) -> bool:
    """Whether `status` may become `kept`'s last status: never once the ref is finished (its first
    end is kept; a task never leaves a terminal state), always when `status` ends an unfinished
    task, and otherwise unless both name a ``lastUpdatedAt`` and `status`'s is the earlier (with
    none to compare, the later write wins).
    """
    if kept.finished:
        return False
    last = kept.last_status
    if last is None or status.terminal:
        return True
    before, now = updated_at(last), updated_at(status)
    return before is None or now is None or now >= before
