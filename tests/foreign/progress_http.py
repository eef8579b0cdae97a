"""Streamable HTTP servers that report progress (standard library only, no mcp_tasks code).
None of the pinned independent peers (peers.md: mcp 1.30.0, fastmcp 3.4.11, server-everything
2026.8.31) sends ``notifications/progress`` during a task's life (server-everything reports
progress only for its plain ``trigger-long-running-operation``), so these stand for the servers
that do.

`LegacyProgressServer`, 2025-11-25 (the server of tests/foreign/legacy_http_tasks.py with one more
tool). What that revision says: a request's ``_meta.progressToken`` stays valid for the whole life
of the task it creates, and the server may send ``notifications/progress`` with it, on the
request's own stream before the answer or on the session's stream after it.

- ``report`` (``taskSupport: optional``; task-augmented or not; ``report_plain`` never a task):
  sends ``before`` (a list of ``[progress, total, message]``) on the ``tools/call`` stream before
  its answer, with the call's token; as a task it then stays working until the test calls `finish`.
- `step` sends a progress notification for a ``report`` task on its session's GET stream with the
  token its call carried; `push` sends any params at all there (tokens nobody sent, bad values).

`ModernProgressServer`, 2026-07-28: progress only on the ``tools/call`` stream, before the task.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from tests.foreign.legacy_http_tasks import HttpConn, HttpRequest, LegacyHttpTasksServer
from tests.foreign.legacy_tasks_core import TOOLS, Journal, LegacyTasks, Reply, Session, obj, text_result
from tests.foreign.modern_http_tasks import STAMP, ModernHttpTasksServer

PROGRESS = "notifications/progress"
REPORT_TOOL = {"name": "report", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}
REPORT_PLAIN = {"name": "report_plain", "inputSchema": {"type": "object"}}


def _params(token: object, item: object) -> dict[str, Any]:
    progress, total, message = [*item, None, None, None][:3] if isinstance(item, list) else (item, None, None)
    params: dict[str, Any] = {"progressToken": token, "progress": progress}
    if total is not None:
        params["total"] = total
    if message is not None:
        params["message"] = message
    return params


def modern_task(task_id: str, status: str) -> dict[str, Any]:
    return {"taskId": task_id, "status": status, "createdAt": STAMP, "lastUpdatedAt": STAMP, "ttlMs": 60000}


class ProgressTasks(LegacyTasks):
    """The legacy tasks, with ``report`` and the tokens its calls carried."""

    def __init__(self, journal: Journal) -> None:
        super().__init__(journal, name="legacy-progress-fixture")
        self.tokens: dict[str, object] = {}  # task id -> the token of the call that made it

    def handle(self, message: dict[str, Any], session: Session, reply: Reply) -> dict[str, Any] | None:
        method = message.get("method")
        params = obj(message.get("params"))
        if method == "tools/list":
            return {"jsonrpc": "2.0", "id": message.get("id"), "result": {"tools": [*TOOLS, REPORT_TOOL, REPORT_PLAIN]}}
        if method == "tools/call" and params.get("name") in ("report", "report_plain"):
            return {"jsonrpc": "2.0", "id": message.get("id"), "result": self._report(params, session, reply)}
        return super().handle(message, session, reply)

    def _report(self, params: dict[str, Any], session: Session, reply: Reply) -> dict[str, Any]:
        arguments = obj(params.get("arguments"))
        token = obj(params.get("_meta")).get("progressToken")
        name = str(params.get("name"))
        self.journal.add({"event": "request", "method": "tools/call", "name": name, "token": token, "params": params})
        for item in arguments.get("before") or []:
            reply.send({"jsonrpc": "2.0", "method": PROGRESS, "params": _params(token, item)})
        if name == "report_plain" or not isinstance(params.get("task"), dict):
            return text_result("reported")
        created = self._create("report", arguments, obj(params.get("task")), session)
        task_id = created["task"]["taskId"]
        self.tokens[task_id] = token
        self.journal.add({"event": "report_task", "taskId": task_id, "token": token})
        return created

    def finish(self, task_id: str) -> None:
        """Complete a ``report`` task."""
        self._finish(self.tasks[task_id], "completed", result=text_result("report done"))

    def session_of(self, task_id: str) -> Any:
        with self.changed:
            return self.sessions[self.tasks[task_id].scope]  # an HTTP session: its GET stream is `get_conn`


class LegacyProgressServer(LegacyHttpTasksServer):
    """The server (see the module docstring); the test drives its tasks with `step` and `finish`."""

    def __init__(self) -> None:
        super().__init__()
        self.progress = ProgressTasks(self.journal)
        self.core = self.progress
        self._pushed = threading.Lock()

    def step(self, task_id: str | None, progress: object, total: object = None, message: object = None) -> None:
        """Report progress for `task_id` with its call's token."""
        assert task_id is not None
        self.push(task_id, _params(self.progress.tokens[task_id], [progress, total, message]))

    def push(self, task_id: str | None, params: dict[str, Any]) -> None:
        """Send a progress notification with `params` on the GET stream of `task_id`'s session."""
        assert task_id is not None
        session = self.progress.session_of(task_id)
        self.journal.wait_for(
            lambda e: e["event"] == "get_stream" and e["session"] == session.scope, what="the session's GET stream"
        )
        opened = threading.Event()
        while not (session.get_conn is not None and session.get_conn.sse_open):  # its headers are out
            opened.wait(0.01)
        with self._pushed:
            session.push({"jsonrpc": "2.0", "method": PROGRESS, "params": params})

    def finish(self, task_id: str | None) -> None:
        """Complete a ``report`` task."""
        assert task_id is not None
        self.progress.finish(task_id)

    def task_ids(self, *, wait: bool = False) -> list[str]:
        """The ``report`` tasks made so far, oldest first; with `wait`, once one is made (progress
        sent before a task's answer can reach the client before the server has made the task).
        """
        made = lambda e: e["event"] == "report_task"  # noqa: E731
        if wait:
            self.journal.wait_for(made, timeout=60.0, what="a report task made")
        return [e["taskId"] for e in self.journal.events(made)]


class ModernProgressServer(ModernHttpTasksServer):
    """The 2026-07-28 server of tests/foreign/modern_http_tasks.py with ``report``: its
    ``tools/call`` answer is an SSE stream with ``before`` as progress notifications (the call's
    token) and then the task (the extension allows progress on that stream only), which is
    completed when read. `tokens` keeps the ``_meta.progressToken`` of every ``tools/call``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.tokens: list[object] = []

    def handle(self, request: HttpRequest, conn: HttpConn) -> bool:
        message = obj(request.json)
        params = obj(message.get("params"))
        if message.get("method") == "tools/call":
            self.tokens.append(obj(params.get("_meta")).get("progressToken"))
        if message.get("method") == "tools/call" and params.get("name") == "report":
            token = obj(params.get("_meta")).get("progressToken")
            task_id = str(uuid.uuid4())
            self.tasks[task_id] = {"tool": "report", "mode": None}
            conn.open_sse(priming=False)
            for item in obj(params.get("arguments")).get("before") or []:
                conn.event({"jsonrpc": "2.0", "method": PROGRESS, "params": _params(token, item)})
            task = {"resultType": "task", **modern_task(task_id, "working")}
            conn.event({"jsonrpc": "2.0", "id": message["id"], "result": task})
            return False
        task_id = str(params.get("taskId"))
        if message.get("method") == "tasks/get" and self.tasks.get(task_id, {}).get("tool") == "report":
            done = {"content": [{"type": "text", "text": "report done"}], "isError": False}
            result = {"resultType": "complete", **modern_task(task_id, "completed"), "result": done}
            conn.json("200 OK", {"jsonrpc": "2.0", "id": message["id"], "result": result})
            return True
        return super().handle(request, conn)
