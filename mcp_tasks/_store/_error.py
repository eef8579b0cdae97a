"""`StoreError`: what every task store raises when it cannot do what was asked."""

from __future__ import annotations

from mcp_tasks._redact import short_id

__all__ = ["StoreError", "lease_lost"]


class StoreError(OSError):
    """A task store that cannot be used as it is: a file that is not a store, one that cannot be
    written, one a newer mcp_tasks made, a database server that cannot be reached; or a fenced
    write refused because its holder no longer holds the task's lease. The message names the store
    (never a password); nothing in it was changed.
    """


def lease_lost(task_id: str, store: str, what: str) -> StoreError:
    """The refusal of a fenced write: the holder named no longer holds the task's lease."""
    return StoreError(
        f"task {short_id(task_id)}: the holder named does not hold its lease in {store} (it expired or "
        f"another took it over): {what}"
    )
