"""Input nobody in the workers answers: the requests shown in the Celery result's meta under
opaque keys (a legacy request key is ``<taskId>:<hex>``: a full task id must not reach the
backend), and the answers `McpTasks.answer` leaves for the worker that checks the task next.

The answers wait in the result backend (a key-value one: Redis, Memcached…), each under a key of
its own (the Celery id and the opaque key): the check that moves them reads, and then drops, only
the keys of the requests still asked, so an answer left meanwhile to another request, by another
process, is never dropped with them. The worker moves them into the task store's ledger of
answers, from which the wait holding the task's lease sends them, once.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from mcp_tasks._redact import redact_ids, short_id
from mcp_tasks._status import Status

__all__ = ["answers_key", "input_meta", "opaque_key", "pending_answers"]


def opaque_key(celery_id: str, key: str) -> str:
    """The key a request is shown under: a digest of the Celery id and the request's own key."""
    return hashlib.sha256(f"{celery_id}\0{key}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _shown(value: Any, task_id: str) -> Any:
    return json.loads(redact_ids(json.dumps(value, ensure_ascii=False), task_id))


def input_meta(celery_id: str, status: Status) -> dict[str, Any]:
    """The INPUT_REQUIRED meta: each request under its opaque key, and the task's short id."""
    requests = {
        opaque_key(celery_id, key): _shown(request, status.task_id) for key, request in status.input_requests.items()
    }
    return {"inputRequests": requests, "task": short_id(status.task_id)}


def answers_key(celery_id: str, opaque: str) -> str:
    """Where the answer to the request shown under `opaque` waits in the result backend."""
    return f"mcp-tasks-answers-{celery_id}-{opaque}"


def pending_answers(celery_id: str, status: Status) -> dict[str, str]:
    """The backend key an answer to each request `status` asks for waits under, mapped to the
    request's own key (as the server asked it).
    """
    return {answers_key(celery_id, opaque_key(celery_id, key)): key for key in status.input_requests}
