"""Input nobody in the workers answers: the requests shown in the Celery result's meta under
opaque keys (a legacy request key is ``<taskId>:<hex>``: a full task id must not reach the
backend), and the answers `McpTasks.answer` leaves for the worker that checks the task next.
The answers wait in the result backend (a key-value one: Redis, Memcached…) under the Celery id;
the worker moves them into the task store's ledger of answers, from which the wait holding the
task's lease sends them, once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from mcp_tasks._redact import redact_ids, short_id
from mcp_tasks._status import Status

__all__ = ["answers_key", "input_meta", "opaque_key", "real_keys"]


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


def real_keys(celery_id: str, status: Status, answers: Mapping[str, Any]) -> dict[str, Any]:
    """`answers` by opaque key, keyed as the server asked (answers to no pending request dropped)."""
    by_opaque = {opaque_key(celery_id, key): key for key in status.input_requests}
    return {by_opaque[opaque]: value for opaque, value in answers.items() if opaque in by_opaque}


def answers_key(celery_id: str) -> str:
    """Where the answers to a Celery task's input wait in the result backend."""
    return f"mcp-tasks-answers-{celery_id}"
