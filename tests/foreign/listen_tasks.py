"""A 2026-07-28 Streamable HTTP server with tasks and ``subscriptions/listen``, at the socket level
(standard library only, no mcp_tasks code), that makes a shared listen stream work hard:

- its acknowledgement leaves out every other task id asked for (``ack_every=2``), so those ids
  must be polled;
- it drops the first ``drop`` streams right after acknowledging them (the connection closes);
- when ``complete_on_listen`` streams have been asked for, every task completes, and the streams
  open then hear ``notifications/tasks`` without the result (a cue: the client must read it);
- ``forget`` (a tool) makes it forget every task: ``tasks/get`` answers -32602 from then on;
- a stream asking for more than ``cap`` ids is refused with -32602.

Tools: ``job`` (a task, working until the completion above), ``forget``.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from tests.foreign.legacy_http_tasks import HttpConn, HttpRequest, SocketHttpServer
from tests.foreign.legacy_tasks_core import Journal, obj

VERSION = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
STAMP = "2026-12-01T10:00:00Z"
TOOLS = [{"name": name, "inputSchema": {"type": "object"}} for name in ("job", "forget")]


class ListenTasksServer(SocketHttpServer):
    def __init__(
        self, *, ack_every: int = 1, drop: int = 0, complete_on_listen: int = 1, poll_ms: int = 50, cap: int = 10_000
    ) -> None:
        super().__init__("listen-tasks")
        self.cap = cap
        self.ack_every = ack_every
        self.drop = drop
        self.complete_on_listen = complete_on_listen
        self.poll_ms = poll_ms
        self.journal = Journal()
        self.lock = threading.Lock()
        self.tasks: dict[str, str] = {}  # task id -> status
        self.listens = 0

    def handle(self, request: HttpRequest, conn: HttpConn) -> bool:
        message = obj(request.json)
        method = message.get("method")
        params = obj(message.get("params"))
        self.journal.add({"event": "http", "rpc": method, "params": params})
        if request.verb != "POST":
            conn.respond("405 Method Not Allowed")
            return True
        if "id" not in message:
            conn.respond("202 Accepted")
            return True
        request_id = message["id"]
        if method == "subscriptions/listen":
            return self._listen(request_id, params, conn)
        if method == "server/discover":
            result: dict[str, Any] = {
                "supportedVersions": [VERSION],
                "capabilities": {"tools": {}, "extensions": {TASKS: {}}},
                "serverInfo": {"name": "listen-tasks", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call" and params.get("name") == "job":
            task_id = str(uuid.uuid4())
            with self.lock:
                self.tasks[task_id] = "working"
            result = {"resultType": "task", **self._task(task_id, "working")}
        elif method == "tools/call":
            with self.lock:
                self.tasks.clear()
            result = {"content": [{"type": "text", "text": "forgotten"}], "isError": False}
        elif method == "tasks/get":
            task_id = str(params.get("taskId"))
            with self.lock:
                status = self.tasks.get(task_id)
            if status is None:
                error = {"code": -32602, "message": "Unknown or inaccessible taskId"}
                conn.json("200 OK", {"jsonrpc": "2.0", "id": request_id, "error": error})
                return True
            result = self._task(task_id, status, full=True)
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            conn.json("200 OK", {"jsonrpc": "2.0", "id": request_id, "error": error})
            return True
        conn.json("200 OK", {"jsonrpc": "2.0", "id": request_id, "result": {"resultType": "complete", **result}})
        return True

    def _task(self, task_id: str, status: str, *, full: bool = False) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "taskId": task_id,
            "status": status,
            "createdAt": STAMP,
            "lastUpdatedAt": STAMP,
            "pollIntervalMs": self.poll_ms,
        }
        if full and status == "completed":
            wire["result"] = {"content": [{"type": "text", "text": f"done {task_id[:4]}"}], "isError": False}
        return wire

    def _listen(self, request_id: Any, params: dict[str, Any], conn: HttpConn) -> bool:
        asked = obj(params.get("notifications")).get("taskIds")
        ids = [i for i in asked if isinstance(i, str)] if isinstance(asked, list) else []
        if len(ids) > self.cap:
            error = {"code": -32602, "message": f"taskIds must contain at most {self.cap} entries"}
            conn.json("200 OK", {"jsonrpc": "2.0", "id": request_id, "error": error})
            return True
        acknowledged = ids[:: self.ack_every]
        meta = {"io.modelcontextprotocol/subscriptionId": request_id}
        conn.open_sse(priming=False)
        ack = {"notifications": {"taskIds": acknowledged}, "_meta": meta}
        conn.event({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": ack})
        with self.lock:
            self.listens += 1
            number = self.listens
            completing = number == self.complete_on_listen
            if completing:
                for task_id in self.tasks:
                    self.tasks[task_id] = "completed"
        streams = [conn] if completing and number > self.drop else []
        for stream in streams:  # a cue only: the status without its result
            for task_id in acknowledged:
                cue = {**self._task(task_id, "completed"), "_meta": meta}
                try:
                    stream.event({"jsonrpc": "2.0", "method": "notifications/tasks", "params": cue})
                except OSError:
                    pass
        if number <= self.drop:
            return False  # dropped: the connection closes
        self.stopping.wait()
        return False
