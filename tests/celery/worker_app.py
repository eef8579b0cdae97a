"""The Celery app of the celery tests' workers (and of the tests, as a client): its broker, result
backend and task store come from the environment the tests start the workers with.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery
from celery.backends.redis import RedisBackend
from kombu.exceptions import OperationalError

import mcp_tasks as mt
from mcp_tasks.celery import McpTasks

REDIS = os.environ.get("MCP_CELERY_REDIS", "redis://127.0.0.1:1")


def configure(app: Celery) -> None:
    """The settings of the tests' apps."""
    app.conf.update(
        # A dead worker's messages come back within seconds (Redis's default is an hour).
        broker_transport_options={
            "visibility_timeout": 5,
            "unacked_restore_interval": 1,
            "unacked_restore_throttle": 1,
            "unacked_mutex_expire": 5,  # a worker killed mid-sweep holds the sweep's lock only this long
        },
        result_backend_transport_options={"retry_policy": {"timeout": 5.0}},
        worker_hijack_root_logger=False,
        broker_connection_retry_on_startup=True,
    )


class FlakyBackend(RedisBackend):  # type: ignore[misc]
    """The Redis backend, failing once where MCP_CELERY_FLAKY_AT says: ``started`` (a check
    showing the call STARTED), ``revoked`` (a check storing the revoke of a task cancelled on the
    server), ``answers`` (a check reading the answers `McpTasks.answer` left),
    ``record`` (the first run describing its chain). The first process of any worker to get
    there creates the file MCP_CELERY_FLAKY names, and fails that one call.
    """

    def _fails(self, at: str) -> None:
        marker = os.environ.get("MCP_CELERY_FLAKY")
        if marker and os.environ.get("MCP_CELERY_FLAKY_AT", "started") == at:
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return
            raise OperationalError(f"the result backend failed on purpose ({at})")

    def store_result(self, task_id: str, result: Any, state: str, *args: Any, **kwargs: Any) -> Any:
        if state == "STARTED":
            self._fails("started")
        if state == "REVOKED":
            self._fails("revoked")
        return super().store_result(task_id, result, state, *args, **kwargs)

    def get(self, key: Any) -> Any:
        value = super().get(key)
        if value is not None and str(key).startswith("mcp-tasks-answers-"):
            self._fails("answers")  # as answers wait there
        return value

    def set(self, key: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        if str(key).startswith("mcp-tasks-chain-"):
            self._fails("record")
        return super().set(key, value, *args, **kwargs)


# MCP_CELERY_FLAKY: a worker whose result backend fails once (`FlakyBackend`).
BACKEND = f"tests.celery.worker_app:FlakyBackend+{REDIS}/1" if os.environ.get("MCP_CELERY_FLAKY") else f"{REDIS}/1"
app = Celery("tests", broker=f"{REDIS}/0", backend=BACKEND)
configure(app)
logging.getLogger("mcp_tasks").setLevel(logging.INFO)  # the library's own lines in the workers' logs


def _answer(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "the worker"}}


handlers = mt.InputHandlers(form=_answer) if os.environ.get("MCP_CELERY_HANDLERS") else None
# MCP_CELERY_PEER: an endpoint that gets its own auth and headers, given as mappings or as
# functions of the endpoint (MCP_CELERY_OPTIONS "mapping" or "callable").
PEER = os.environ.get("MCP_CELERY_PEER", "")
TEAM = {"X-Team": "shop"}
SECRET = ("svc", "pw-of-the-worker")


def _headers_of(endpoint: str) -> dict[str, str] | None:
    return TEAM if endpoint == PEER else None


def _auth_of(endpoint: str) -> tuple[str, str] | None:
    return SECRET if endpoint == PEER else None


options: dict[str, Any] = {}
if PEER and os.environ.get("MCP_CELERY_OPTIONS") == "callable":
    options = {"headers": _headers_of, "auth": _auth_of}
elif PEER:
    options = {"headers": {PEER: TEAM}, "auth": {PEER: SECRET}}
mcp = McpTasks(
    app,
    store=os.environ.get("MCP_CELERY_STORE", ":memory:"),
    input_handlers=handlers,
    check_every=0.3,
    check_queue=os.environ.get("MCP_CELERY_CHECKS") or None,  # the checks' queue of their own
    fallback=3.0,  # below the visibility timeout: Redis gives back a message held longer
    **options,
)
