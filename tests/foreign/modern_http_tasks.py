"""A 2026-07-28 Streamable HTTP server with the Tasks extension, at the socket level (standard
library only, no mcp_tasks code): ``server/discover`` (advertising the extension unless
``advertise=False``), ``tools/list``, ``tools/call`` (a task, flat with ``resultType: "task"``, when
the request declares the extension and the server advertises it; the tool's result otherwise),
``tasks/get`` (and ``tasks/cancel`` of an unknown task: -32602, as ``tasks/get``). JSON answers; no
sessions, no GET stream (405).

Tools: ``plain``; ``hold`` (a task that stays working); ``hostile`` (a task whose ``tasks/get``
answers badly: ``mode`` list | object | number | other_id); ``wrong_id`` (answered with another
request's id); ``ask`` (a task that needs input ``q`` until a ``tasks/update`` answers it, then
completes with the answer; every ``tasks/update`` is kept in ``updates``).
"""

from __future__ import annotations

import uuid
from typing import Any

from tests.foreign.legacy_http_tasks import HttpConn, HttpRequest, SocketHttpServer
from tests.foreign.legacy_tasks_core import Journal, obj

VERSION = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
TOOLS = [{"name": name, "inputSchema": {"type": "object"}} for name in ("plain", "hold", "hostile", "wrong_id", "ask")]
QUESTION = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {"type": "object"}}}
STAMP = "2026-12-01T10:00:00Z"


class ModernHttpTasksServer(SocketHttpServer):
    def __init__(self, *, advertise: bool = True, id_prefix: str = "") -> None:
        super().__init__("modern-http-tasks")
        self.advertise = advertise
        self.id_prefix = id_prefix  # e.g. "-h": an id a command line could take for an option
        self.journal = Journal()
        self.tasks: dict[str, dict[str, Any]] = {}  # task id -> {"tool", "mode"}
        self.updates: list[tuple[str, dict[str, Any]]] = []  # (task id, inputResponses) of each tasks/update
        self.not_found = "Unknown or inaccessible taskId"  # for an unknown task; "{id}" is the id asked for

    def handle(self, request: HttpRequest, conn: HttpConn) -> bool:
        message = obj(request.json)
        self.journal.add(
            {"event": "http", "verb": request.verb, "rpc": message.get("method"), "headers": request.headers}
        )
        if request.verb != "POST":
            conn.respond("405 Method Not Allowed")
            return True
        method = message.get("method")
        if "id" not in message:
            conn.respond("202 Accepted")
            return True
        params = obj(message.get("params"))
        request_id = message["id"]
        if method == "server/discover":
            capabilities: dict[str, Any] = {"tools": {}}
            if self.advertise:
                capabilities["extensions"] = {TASKS: {}}
            result: dict[str, Any] = {
                "resultType": "complete",
                "supportedVersions": [VERSION],
                "capabilities": capabilities,
                "serverInfo": {"name": "modern-http-tasks", "version": "1"},
            }
        elif method == "tools/list":
            result = {"resultType": "complete", "tools": TOOLS}
        elif method == "tools/call":
            result = self._call(params)
            if params.get("name") == "wrong_id":
                request_id = f"{request_id}-other"
        elif method == "tasks/get" or (method == "tasks/cancel" and str(params.get("taskId")) not in self.tasks):
            task_id = str(params.get("taskId"))
            task = self.tasks.get(task_id)
            if task is None:
                error = {"code": -32602, "message": self.not_found.format(id=task_id)}
                conn.json("200 OK", {"jsonrpc": "2.0", "id": request_id, "error": error})
                return True
            result = {"resultType": "complete", **self._hostile(task_id, task)}
        elif method == "tasks/update" and str(params.get("taskId")) in self.tasks:
            task = self.tasks[str(params.get("taskId"))]
            responses = obj(params.get("inputResponses"))
            self.updates.append((str(params.get("taskId")), responses))
            if task["tool"] == "ask" and "answer" not in task and "q" in responses:
                task["answer"] = responses["q"]
            result = {"resultType": "complete"}
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            conn.json("200 OK", {"jsonrpc": "2.0", "id": request_id, "error": error})
            return True
        conn.json("200 OK", {"jsonrpc": "2.0", "id": request_id, "result": result})
        return True

    def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        meta = obj(params.get("_meta"))
        declared = obj(meta.get(CLIENT_CAPABILITIES))
        extensions = obj(declared.get("extensions"))
        arguments = obj(params.get("arguments"))
        if name in ("hold", "hostile", "ask") and self.advertise and TASKS in extensions:
            task_id = f"{self.id_prefix}{uuid.uuid4()}"
            self.tasks[task_id] = {"tool": name, "mode": arguments.get("mode")}
            return {"resultType": "task", **_task(task_id, "working")}
        if name == "refuse":  # a tool's own error, as servers answer a misspelt tool name too
            return {"resultType": "complete", "content": [{"type": "text", "text": "no such report"}], "isError": True}
        return {"resultType": "complete", "content": [{"type": "text", "text": f"ran {name}"}], "isError": False}

    def _hostile(self, task_id: str, task: dict[str, Any]) -> dict[str, Any]:
        wire = _task(task_id, "working")
        mode = task["mode"] if task["tool"] == "hostile" else None
        if task["tool"] == "ask":
            if "answer" in task:
                done = {"content": [{"type": "text", "text": "answered"}], "structuredContent": {"q": task["answer"]}}
                return {**_task(task_id, "completed"), "result": done}
            return {**_task(task_id, "input_required"), "inputRequests": {"q": QUESTION}}
        if mode == "list":
            wire["status"] = ["working"]
        elif mode == "object":
            wire["status"] = {"state": "completed"}
        elif mode == "number":
            wire["status"] = 3
        elif mode == "other_id":
            wire = _task(str(uuid.uuid4()), "working")
        return wire


def _task(task_id: str, status: str) -> dict[str, Any]:
    return {
        "taskId": task_id,
        "status": status,
        "createdAt": STAMP,
        "lastUpdatedAt": STAMP,
        "ttlMs": 60000,
        "pollIntervalMs": 50,
    }
