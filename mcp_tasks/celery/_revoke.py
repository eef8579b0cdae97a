"""A revoked call's MCP task cancelled on its server: shared by the signal of a discarded message
(`McpTasks.on_revoked`) and by the sweeper, which sees a revoke at once where the call's only
message is a fallback check due much later (`_waker`).
"""

from __future__ import annotations

import logging

from mcp_tasks._errors import McpError
from mcp_tasks._redact import short_id
from mcp_tasks._store import StoreError
from mcp_tasks._tasks import cancel_task
from mcp_tasks.celery._clients import Clients

__all__ = ["CANCEL_TIMEOUT", "cancel_call"]

log = logging.getLogger("mcp_tasks")

CANCEL_TIMEOUT = 5.0
"""Seconds for the ``tasks/cancel`` of a revoke or of ``cancel_on_timeout``."""


def cancel_call(clients: Clients, endpoint: object, key: object) -> bool:
    """Send ``tasks/cancel`` for the MCP task the call keyed `key` on `endpoint` started, if it
    started one; whether it was sent (a failure is logged: the revoke itself stands).
    """
    if not isinstance(endpoint, str) or not isinstance(key, str):
        return False
    try:
        intent = clients.store().get_intent(endpoint, key)  # type: ignore[attr-defined]
        if intent is None or intent.task_id is None:
            return False
        cancel_task(clients.client(endpoint), intent.task_id, timeout=CANCEL_TIMEOUT)
    except (McpError, StoreError) as exc:
        log.warning("a revoked call: could not cancel its MCP task: %s", exc)
        return False
    log.info("task %s: cancelled (its Celery task was revoked)", short_id(intent.task_id))
    return True
