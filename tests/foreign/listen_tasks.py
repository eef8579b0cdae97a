"""A 2026-07-28 Streamable HTTP server with tasks and ``subscriptions/listen``, at the socket level
(standard library only, no mcp_tasks code), that makes a shared listen stream work hard:

- its acknowledgement leaves out every other task id asked for (``ack_every=2``), so those ids
  must be polled;
- it drops the first ``drop`` streams right after acknowledging them (the connection closes);
- when ``complete_on_listen`` streams have been asked for, every task completes, and the streams
  open then hear ``notifications/tasks`` without the result (a cue: the client must read it);
- ``forget`` (a tool) makes it forget every task: ``tasks/get`` answers -32602 from then on;
- a stream asking for more than ``cap`` ids is refused with -32602 (its message names the limit,
  unless ``cap_unsaid``); ``refuse`` ids (a set) make any stream asking for one refused with a
  bare "Unknown or inaccessible taskId";
- ``burst``: statuses pushed (full, with their results) for every acknowledged id right after the
  acknowledgement, in one write;
- ``get_gate``: while it is not set, ``tasks/get`` blocks (each is journalled first);
- ``complete_on_get``: at the first ``tasks/get``, every working task completes and its status
  (full, with its result) is pushed on the open streams that carry it, before that read waits
  for ``get_gate`` (tasks that end while a client catches up after its stream opened);
- ``late_push``: a stream that takes over ids of an open one (a client merging its streams) is
  acknowledged, and when a ``tasks/get`` for one of its new ids comes, the ids it took over complete
  and their statuses (full, with results) are pushed on the old stream only, as if they had been
  published before the new stream was registered and sent late.

Tools: ``job`` (a task, working until the completion above or ``finish``), ``forget``, ``finish``
(every working job completes), ``ask`` (a task that needs input ``q`` until ``tasks/update``
answers it, then completes). ``tasks/cancel`` cancels a working task, and refuses a finished one
with -32602.
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

from tests.foreign.legacy_http_tasks import HttpConn, HttpRequest, SocketHttpServer
from tests.foreign.legacy_tasks_core import Journal, obj

VERSION = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
STAMP = "2026-12-01T10:00:00Z"
TOOLS = [{"name": name, "inputSchema": {"type": "object"}} for name in ("job", "forget", "finish", "ask")]
QUESTION = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {"type": "object"}}}


class ListenTasksServer(SocketHttpServer):
    def __init__(
        self,
        *,
        ack_every: int = 1,
        drop: int = 0,
        complete_on_listen: int = 1,
        poll_ms: int = 50,
        cap: int = 10_000,
        cap_unsaid: bool = False,
        refuse: frozenset[str] = frozenset(),
        burst: tuple[tuple[str, str | None], ...] = (),
        get_gate: threading.Event | None = None,
        late_push: bool = False,
        complete_on_get: bool = False,
    ) -> None:
        super().__init__("listen-tasks")
        self.cap = cap
        self.cap_unsaid = cap_unsaid
        self.refuse = set(refuse)
        self.refusal = "Unknown or inaccessible taskId"  # a refused listen's text: "{ids}" names the refused ids
        self.burst = burst
        self.get_gate = get_gate
        self.late_push = late_push
        self.complete_on_get = complete_on_get
        self.completed_on_get = False
        self.open_streams: list[tuple[HttpConn, list[str], dict[str, Any]]] = []
        self.late: tuple[HttpConn, list[str], dict[str, Any], set[str]] | None = None
        self.results: dict[str, str] = {}  # task id -> the text of its result
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
        elif method == "tools/call" and params.get("name") in ("job", "ask"):
            task_id = str(uuid.uuid4())
            created = "working" if params.get("name") == "job" else "input_required"
            with self.lock:
                self.tasks[task_id] = created
            result = {"resultType": "task", **self._task(task_id, created)}
        elif method == "tools/call" and params.get("name") == "finish":
            with self.lock:
                for task_id, status in self.tasks.items():
                    if status == "working":
                        self.tasks[task_id] = "completed"
            result = {"content": [{"type": "text", "text": "finished"}], "isError": False}
        elif method in ("tasks/cancel", "tasks/update"):
            task_id = str(params.get("taskId"))
            with self.lock:
                found = self.tasks.get(task_id)
                done = found in ("completed", "cancelled", "failed")
                if found is not None and not done:
                    answered = "q" in obj(params.get("inputResponses"))
                    if method == "tasks/cancel":
                        self.tasks[task_id] = "cancelled"
                    elif found == "input_required" and answered:
                        self.tasks[task_id] = "completed"
            if found is None or (done and method == "tasks/cancel"):
                error = {"code": -32602, "message": f"Cannot {method[6:]} task {task_id[:4]}: {found or 'unknown'}"}
                conn.json("200 OK", {"jsonrpc": "2.0", "id": request_id, "error": error})
                return True
            result = {}
        elif method == "tools/call":
            with self.lock:
                self.tasks.clear()
            result = {"content": [{"type": "text", "text": "forgotten"}], "isError": False}
        elif method == "tasks/get":
            self._complete_on_get()
            if self.get_gate is not None:
                while not self.get_gate.wait(0.05) and not self.stopping.is_set():
                    pass
            task_id = str(params.get("taskId"))
            self._push_late(task_id)
            with self.lock:
                known = self.tasks.get(task_id)
            if known is None:
                error = {"code": -32602, "message": "Unknown or inaccessible taskId"}
                conn.json("200 OK", {"jsonrpc": "2.0", "id": request_id, "error": error})
                return True
            result = self._task(task_id, known, full=True)
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
            text = self.results.get(task_id, f"done {task_id[:4]}")
            wire["result"] = {"content": [{"type": "text", "text": text}], "isError": False}
        if full and status == "input_required":
            wire["inputRequests"] = {"q": QUESTION}
        return wire

    def _listen(self, request_id: Any, params: dict[str, Any], conn: HttpConn) -> bool:
        asked = obj(params.get("notifications")).get("taskIds")
        ids = [i for i in asked if isinstance(i, str)] if isinstance(asked, list) else []
        if len(ids) > self.cap or self.refuse.intersection(ids):
            said = f"taskIds must contain at most {self.cap} entries"
            bare = len(ids) <= self.cap or self.cap_unsaid
            refused = ", ".join(i for i in ids if i in self.refuse)
            error = {"code": -32602, "message": self.refusal.format(ids=refused) if bare else said}
            conn.json("200 OK", {"jsonrpc": "2.0", "id": request_id, "error": error})
            return True
        acknowledged = ids[:: self.ack_every]
        meta = {"io.modelcontextprotocol/subscriptionId": request_id}
        conn.open_sse(priming=False)
        ack = {"notifications": {"taskIds": acknowledged}, "_meta": meta}
        events = [{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": ack}]
        for task_id in acknowledged:
            for status, text in self.burst:  # a server that says one thing, then another
                pushed = {**self._task(task_id, status), "_meta": meta}
                if text is not None:
                    pushed["result"] = {"content": [{"type": "text", "text": text}], "isError": False}
                events.append({"jsonrpc": "2.0", "method": "notifications/tasks", "params": pushed})
        if self.late_push or self.complete_on_get:
            with self.lock:
                for old, old_ids, old_meta in self.open_streams if self.late_push else ():
                    if set(old_ids) & set(acknowledged):
                        self.late = (old, old_ids, old_meta, set(acknowledged) - set(old_ids))
                self.open_streams.append((conn, acknowledged, meta))
        conn.send(b"".join(_event_bytes(event) for event in events))
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

    def _push_late(self, task_id: str) -> None:
        """See ``late_push``: when `task_id` is a new id of the stream that took over others."""
        with self.lock:
            late = self.late
            if late is None or task_id not in late[3]:
                return
            self.late = None
            for taken in late[1]:
                self.tasks[taken] = "completed"
        old, taken_over, meta, _ = late
        for taken in taken_over:
            pushed = {**self._task(taken, "completed", full=True), "_meta": meta}
            old.event({"jsonrpc": "2.0", "method": "notifications/tasks", "params": pushed})

    def _complete_on_get(self) -> None:
        """See ``complete_on_get``."""
        with self.lock:
            if not self.complete_on_get or self.completed_on_get:
                return
            self.completed_on_get = True
            ended = [task_id for task_id, status in self.tasks.items() if status == "working"]
            for task_id in ended:
                self.tasks[task_id] = "completed"
            streams = list(self.open_streams)
        for stream, ids, meta in streams:
            for task_id in ended:
                if task_id in ids:
                    pushed = {**self._task(task_id, "completed", full=True), "_meta": meta}
                    stream.event({"jsonrpc": "2.0", "method": "notifications/tasks", "params": pushed})


def _event_bytes(message: dict[str, Any]) -> bytes:
    """One SSE event carrying `message`, as `HttpConn.event` writes it."""
    return b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n"
