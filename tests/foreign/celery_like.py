"""A 2025-11-25 server with ``mcp-celery`` 0.2.0's habits (an independent server on mcp 1.30,
Celery-backed), at the socket level: the tests' own, standard library only, no mcp_tasks code.
Pinning mcp-celery itself would cost Redis and a Celery worker.

- its ``tools/list`` gives no tool an ``execution.taskSupport``, and yet it answers every
  ``tools/call`` of a task tool (``quick``, ``hold``: tests/foreign/legacy_tasks_core.py) with
  a creation result, asked or not: nested ``{"task": {...}}`` (``shape="nested"``, as it does),
  or flat ``resultType: "task"`` of 2026-07-28 (``shape="flat"``, a server mixing the eras);
- with ``advertise`` its tools list as they should (to test one habit at a time);
- with ``refuse_results`` its ``tasks/result`` is refused (-32602) though ``tasks/get`` says
  completed;
- `restart` ends every session, as a restarted process has none (its tasks stay: Celery keeps
  them; with ``bind_tasks`` they are another session's from then on).
"""

from __future__ import annotations

import socket
from typing import Any

from tests.foreign.legacy_http_tasks import LegacyHttpTasksServer
from tests.foreign.legacy_tasks_core import TOOLS, Journal, LegacyTasks, Reply, Session, obj

NAME = "celery-like"
REFUSAL = "Invalid request parameters"


class CeleryLikeTasks(LegacyTasks):
    """The tools and tasks of `LegacyTasks`, answered as mcp-celery answers them."""

    def __init__(
        self, journal: Journal, *, shape: str = "nested", refuse_results: bool = False, advertise: bool = False
    ) -> None:
        super().__init__(journal, name=NAME)
        self.shape = shape
        self.refuse_results = refuse_results
        self.advertise = advertise

    def handle(self, message: dict[str, Any], session: Session, reply: Reply) -> dict[str, Any] | None:
        method = message.get("method")
        params = obj(message.get("params"))
        if method == "tools/list" and not self.advertise:
            self.journal.add({"event": "request", "method": method, "id": message.get("id"), "params": params})
            listed = [{"name": t["name"], "inputSchema": t["inputSchema"]} for t in TOOLS]  # no taskSupport
            return {"jsonrpc": "2.0", "id": message.get("id"), "result": {"tools": listed}}
        if method == "tasks/result" and self.refuse_results:
            self.journal.add({"event": "request", "method": method, "id": message.get("id"), "params": params})
            return {"jsonrpc": "2.0", "id": message.get("id"), "error": {"code": -32602, "message": REFUSAL}}
        if method == "tools/call" and params.get("name") in ("quick", "hold"):
            asked = "task" in params
            message = {**message, "params": {**params, "task": obj(params.get("task"))}}  # a task, asked or not
            response = super().handle(message, session, reply)
            self.journal.add({"event": "task_unasked" if not asked else "task_asked"})
            if response is not None and self.shape == "flat" and "result" in response:
                response = {**response, "result": _flat(response["result"]["task"])}
            return response
        return super().handle(message, session, reply)


def _flat(task: dict[str, Any]) -> dict[str, Any]:
    """A nested creation result's task in the 2026-07-28 shape (``resultType: "task"``, ms keys)."""
    flat = {key: value for key, value in task.items() if key not in ("ttl", "pollInterval")}
    return {"resultType": "task", **flat, "ttlMs": task["ttl"], "pollIntervalMs": task["pollInterval"]}


def celery_like_server(
    *, shape: str = "nested", refuse_results: bool = False, advertise: bool = False
) -> LegacyHttpTasksServer:
    """A Streamable HTTP server (not started: use it as a context manager) with those habits;
    `advertise`: its tools/list gives ``taskSupport`` as it should (the calls are asked).
    """
    server = LegacyHttpTasksServer()
    server.core = CeleryLikeTasks(server.journal, shape=shape, refuse_results=refuse_results, advertise=advertise)
    return server


def restart(server: LegacyHttpTasksServer) -> None:
    """End every session at once, as a server process that restarted knows none (each answers 404
    from now on); the tasks stay.
    """
    with server._state:
        sessions = list(server.sessions.values())
        server.sessions.clear()
    for session in sessions:
        server.core.forget(session.scope)
        if session.get_conn is not None:
            try:
                session.get_conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
