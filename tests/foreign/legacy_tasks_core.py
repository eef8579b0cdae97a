"""The tools and tasks that the 2025-11-25 test servers (tests/foreign/legacy_stdio_tasks.py over
stdio, tests/foreign/legacy_http_tasks.py over Streamable HTTP) share. Standard library only; no
mcp_tasks code: these servers stand for the real ones of that era, mcp 1.30 above all.

What they do, as the real servers do (see the shared reference peers.md, Part C):

- ``initialize`` answers 2025-11-25 (or the older revision the client offered) with
  ``capabilities.tasks = {list, cancel, requests: {tools: {call}}}`` (left out with
  ``tasks_capability=False``, as fastmcp 4 does, though its tools still show ``taskSupport``);
  an unknown method (``server/discover``) is -32602, as mcp 1.30 answers it;
- a task-augmented ``tools/call`` (``params.task``) gives ``{"task": {...}}``, status ``working``;
  task ids are ``<32 hex of the session>:<uuid4>``, as mcp 1.30 mints them, so every task of a
  session shares a 33-character prefix;
- ``tasks/get`` gives the flat task (``ttl``, ``pollInterval`` 50 ms); ``tasks/result`` blocks
  until the task ends, and for a task that needs input sends ``elicitation/create`` (id
  ``task-<taskId>-<n>``, ``related-task`` meta) inside itself, as mcp 1.30 and server-everything
  do; ``tasks/cancel`` returns the cancelled task, -32602 for a finished one; ``tasks/list``;
- terminal statuses are pushed as ``notifications/tasks/status`` (completed and failed only).

Tools (``tools/call`` by name):
  echo            the arguments, as JSON text
  plain           "ran plain"
  slow_plain      sleeps ``seconds`` (default 0.6), then "slept"
  ask_plain       sends ``elicitation/create`` naming no task, waits for the answer: "answer: <action>"
  block           never answers unless cancelled (``notifications/cancelled``); reports both
  release         lets every ``hold`` task complete
  hold            (task) working until released, then "held done"
  quick           (task) completed at once: "quick done"
  must_task       (task required) completed at once
  forbidden_tool  (taskSupport forbidden)
  ask_task        (task) input_required at once; asks inside ``tasks/result``: "hello <name> (<action>)"
  fail_with_id    (task) failed at once, its statusMessage naming the whole task id
  stuck           (task) working for ever; ``tasks/cancel`` refused with -32603
  deaf            (task) working for ever; ``tasks/cancel`` never answered (until the server stops)
  hostile         (task) ``tasks/get`` answers badly: ``mode`` list | object | number | other_id
  wrong_id        answered with a response carrying another request's id (HTTP servers)

Everything the server sees goes into a `Journal` the tests read.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
RELATED = "io.modelcontextprotocol/related-task"
POLL_MS = 50
TTL_MS = 60_000
FAILSAFE = 30.0
"""How long anything the server holds waits at most (the tests never rely on it)."""

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def _tool(name: str, support: str | None = None) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": name, "inputSchema": {"type": "object"}}
    if support is not None:
        tool["execution"] = {"taskSupport": support}
    return tool


TOOLS = [
    _tool("echo"),
    _tool("plain"),
    _tool("slow_plain"),
    _tool("ask_plain"),
    _tool("block"),
    _tool("release"),
    _tool("wrong_id"),
    _tool("hold", "optional"),
    _tool("quick", "optional"),
    _tool("must_task", "required"),
    _tool("forbidden_tool", "forbidden"),
    _tool("ask_task", "optional"),
    _tool("fail_with_id", "optional"),
    _tool("stuck", "optional"),
    _tool("deaf", "optional"),
    _tool("hostile", "optional"),
]
TASK_SUPPORT = {t["name"]: t.get("execution", {}).get("taskSupport") for t in TOOLS}
TERMINAL = ("completed", "failed", "cancelled")


def obj(value: object) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (wire input is whatever the client sent)."""
    return value if isinstance(value, dict) else {}


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


class Journal:
    """What a server saw, in order; tests wait on it (no sleeping)."""

    def __init__(self) -> None:
        self._events: list[dict[str, Any]] = []
        self._changed = threading.Condition()

    def add(self, event: dict[str, Any]) -> None:
        with self._changed:
            self._events.append(event)
            self._changed.notify_all()

    def mark(self) -> int:
        """The number of events so far (pass it as `after` to look only at later ones)."""
        with self._changed:
            return len(self._events)

    def events(self, match: Callable[[dict[str, Any]], bool] | None = None, after: int = 0) -> list[dict[str, Any]]:
        with self._changed:
            return [e for e in self._events[after:] if match is None or match(e)]

    def wait_for(
        self, match: Callable[[dict[str, Any]], bool], *, after: int = 0, timeout: float = 15.0, what: str = "an event"
    ) -> dict[str, Any]:
        """The first event from `after` on that matches; AssertionError if none comes in `timeout`."""
        found: list[dict[str, Any]] = []

        def seen() -> bool:
            found[:] = [e for e in self._events[after:] if match(e)]
            return bool(found)

        with self._changed:
            if not self._changed.wait_for(seen, timeout):
                raise AssertionError(f"the server did not see {what} within {timeout} s")
        return found[0]


class Task:
    def __init__(self, task_id: str, tool: str, arguments: dict[str, Any], scope: str, ttl: Any) -> None:
        self.task_id = task_id
        self.tool = tool
        self.arguments = arguments
        self.scope = scope  # the session that created it
        self.status = "working"
        self.status_message: str | None = None
        self.created_at = now()
        self.updated_at = self.created_at
        self.ttl = ttl if isinstance(ttl, int) else TTL_MS
        self.result: dict[str, Any] | None = None
        self.asking = False

    def wire(self) -> dict[str, Any]:
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.updated_at,
            "ttl": self.ttl,
            "pollInterval": POLL_MS,
        }
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        return task


class Session:
    """One client's session: its scope (the 32 hex its task ids start with) and where the
    server's unsolicited messages go (stdout; the HTTP session's GET stream).
    """

    def __init__(self, scope: str, push: Callable[[dict[str, Any]], None]) -> None:
        self.scope = scope
        self.push = push
        self.initialized = False
        self.version = VERSIONS[0]


class Reply:
    """Where the messages that answer one request go: ``send`` writes one (stdout; the POST's
    SSE stream). A server request sent there is answered by the client in a message of its own.
    """

    def __init__(self, send: Callable[[dict[str, Any]], None]) -> None:
        self.send = send


class LegacyTasks:
    """The tools and the task store of one server (shared by its sessions)."""

    def __init__(
        self,
        journal: Journal,
        *,
        tasks_capability: bool = True,
        bind_tasks: bool = True,
        get_delay: float = 0.0,
        name: str = "legacy-tasks-fixture",
    ) -> None:
        self.journal = journal
        self.tasks_capability = tasks_capability
        self.bind_tasks = bind_tasks
        self.get_delay = get_delay
        self.name = name
        self.changed = threading.Condition()
        self.tasks: dict[str, Task] = {}
        self.sessions: dict[str, Session] = {}
        self.answers: dict[str, dict[str, Any]] = {}
        self.cancelled: set[str] = set()
        self.stopping = threading.Event()
        self._asks = itertools.count(1)
        # What an unknown task gets (-32602): "{id}" is the id asked for, "{scope}" the session's.
        self.not_found = "Failed to retrieve task: Task not found"

    # -- lifecycle ------------------------------------------------------------------------------

    def stop(self) -> None:
        self.stopping.set()
        with self.changed:
            self.changed.notify_all()

    def _wait(self, ready: Callable[[], bool], timeout: float = FAILSAFE) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: ready() or self.stopping.is_set(), timeout) and ready()

    def _pause(self, seconds: float) -> None:
        if seconds > 0:
            self.stopping.wait(seconds)

    def register(self, session: Session) -> None:
        """A session started (its unsolicited messages go to `session.push`)."""
        with self.changed:
            self.sessions[session.scope] = session

    def forget(self, scope: str) -> None:
        """A session ended (its tasks stay in the store)."""
        with self.changed:
            self.sessions.pop(scope, None)

    # -- what the client sends outside requests ---------------------------------------------------

    def take_answer(self, message: dict[str, Any]) -> None:
        """The client's response to one of the server's requests."""
        key = json.dumps(message.get("id"))
        self.journal.add({"event": "answer", "id": message.get("id"), "message": message})
        with self.changed:
            self.answers[key] = message
            self.changed.notify_all()

    def cancel_request(self, params: object) -> None:
        """``notifications/cancelled`` for one of the client's requests."""
        request_id = params.get("requestId") if isinstance(params, dict) else None
        self.journal.add({"event": "cancelled", "requestId": request_id})
        with self.changed:
            self.cancelled.add(json.dumps(request_id))
            self.changed.notify_all()

    def seed_completed(self, task_id: str, scope: str) -> None:
        """A task that finished before this process started (a server with a durable store)."""
        task = Task(task_id, "quick", {}, scope, TTL_MS)
        task.status = "completed"
        task.result = text_result("seeded done")
        with self.changed:
            self.tasks[task_id] = task

    # -- initialize -----------------------------------------------------------------------------

    def initialize_result(self, session: Session, params: dict[str, Any]) -> dict[str, Any]:
        offered = params.get("protocolVersion")
        session.version = offered if offered in VERSIONS else VERSIONS[0]
        capabilities: dict[str, Any] = {"tools": {"listChanged": False}}
        if self.tasks_capability and session.version == VERSIONS[0]:
            capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        return {
            "protocolVersion": session.version,
            "capabilities": capabilities,
            "serverInfo": {"name": self.name, "version": "1.30.0"},
        }

    # -- requests -------------------------------------------------------------------------------

    def handle(self, message: dict[str, Any], session: Session, reply: Reply) -> dict[str, Any] | None:
        """The response to one request of an initialized session (None: no response at all)."""
        request_id = message.get("id")
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        self.journal.add(
            {
                "event": "request",
                "method": method,
                "id": request_id,
                "scope": session.scope,
                "name": params.get("name"),
                "taskId": params.get("taskId"),
                "params": params,
            }
        )
        try:
            if method == "ping":
                result: dict[str, Any] | None = {}
            elif method == "tools/list":
                result = {"tools": TOOLS}
            elif method == "tools/call":
                result = self._call(request_id, params, session, reply)
            elif method == "tasks/get":
                self._pause(self.get_delay)
                task = self._find(params, session)
                result = self._hostile(task, task.wire())
            elif method == "tasks/result":
                result = self._result(self._find(params, session), reply)
            elif method == "tasks/cancel":
                result = self._cancel(self._find(params, session))
            elif method == "tasks/list":
                with self.changed:
                    mine = [t.wire() for t in self.tasks.values() if not self.bind_tasks or t.scope == session.scope]
                result = {"tasks": mine}
            else:
                raise Refusal(-32602, "Invalid request parameters")
        except Refusal as refusal:
            return {"jsonrpc": "2.0", "id": request_id, "error": {"code": refusal.code, "message": refusal.message}}
        if result is None:
            return None
        if method == "tools/call" and params.get("name") == "wrong_id":
            return {"jsonrpc": "2.0", "id": f"{request_id}-other", "result": result}
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def _call(self, request_id: Any, params: dict[str, Any], session: Session, reply: Reply) -> dict[str, Any] | None:
        name = str(params.get("name"))
        arguments = obj(params.get("arguments"))
        if name not in TASK_SUPPORT:
            raise Refusal(-32602, f"Unknown tool: {name}")
        support = TASK_SUPPORT[name]
        augmented = isinstance(params.get("task"), dict)
        if augmented and support in ("optional", "required"):
            return self._create(name, arguments, obj(params.get("task")), session)
        if support == "required":
            return {"content": [{"type": "text", "text": f"{name} requires a task"}], "isError": True}
        if name == "echo":
            return text_result(json.dumps(arguments))
        if name in ("plain", "forbidden_tool", "wrong_id"):
            return text_result(f"ran {name}")
        if name == "slow_plain":
            self._pause(float(arguments.get("seconds", 0.6)))
            return text_result("slept")
        if name == "ask_plain":
            ask = {"mode": "form", "message": "Plain question?", "requestedSchema": NAME_SCHEMA}
            answer = self._ask(f"plain-{next(self._asks)}", ask, reply)
            self.journal.add({"event": "ask_plain_answer", "answer": answer})
            return text_result(f"answer: {_action(answer)}")
        if name == "block":
            key = json.dumps(request_id)
            self.journal.add({"event": "block", "id": request_id})
            if self._wait(lambda: key in self.cancelled):
                self.journal.add({"event": "block_cancelled", "id": request_id})
                return None  # a cancelled request is not answered
            return text_result("not cancelled")
        if name == "release":
            with self.changed:
                held = [t for t in self.tasks.values() if t.tool == "hold" and t.status == "working"]
            for task in held:
                self._finish(task, "completed", result=text_result("held done"))
            return text_result(f"released {len(held)}")
        # A task tool called without params.task runs at once.
        return text_result(f"ran {name} without a task")

    # -- tasks ----------------------------------------------------------------------------------

    def _create(self, name: str, arguments: dict[str, Any], meta: dict[str, Any], session: Session) -> dict[str, Any]:
        task = Task(f"{session.scope}:{uuid.uuid4()}", name, arguments, session.scope, meta.get("ttl"))
        created = task.wire()
        with self.changed:
            self.tasks[task.task_id] = task
        self.journal.add({"event": "created", "taskId": task.task_id, "tool": name, "scope": session.scope})
        if name in ("quick", "must_task"):
            # Done before its creation result is out: no status notification ahead of it.
            self._finish(task, "completed", result=text_result(f"{name} done"), push=False)
        elif name == "fail_with_id":
            self._finish(task, "failed", message=f"Task {task.task_id} failed: boom", push=False)
        elif name == "ask_task":
            with self.changed:
                task.status = "input_required"
                task.updated_at = now()
                self.changed.notify_all()
        return {"task": created}

    def _finish(
        self,
        task: Task,
        status: str,
        *,
        result: dict[str, Any] | None = None,
        message: str | None = None,
        push: bool = True,
    ) -> None:
        with self.changed:
            if task.status in TERMINAL:
                return
            task.status = status
            task.status_message = message
            task.result = result
            task.updated_at = now()
            self.changed.notify_all()
        session = self.sessions.get(task.scope)
        if push and session is not None and status in ("completed", "failed"):
            try:
                session.push({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": task.wire()})
            except OSError:
                pass  # the session's stream is gone: the notification is optional anyway

    def _find(self, params: dict[str, Any], session: Session) -> Task:
        task_id = params.get("taskId")
        with self.changed:
            task = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None or (self.bind_tasks and task.scope != session.scope):
            raise Refusal(-32602, self.not_found.format(id=task_id, scope=session.scope))
        return task

    def _hostile(self, task: Task, wire: dict[str, Any]) -> dict[str, Any]:
        if task.tool != "hostile":
            return wire
        mode = task.arguments.get("mode")
        if mode == "list":
            return {**wire, "status": ["working"]}
        if mode == "object":
            return {**wire, "status": {"state": "completed"}}
        if mode == "number":
            return {**wire, "status": 3}
        if mode == "other_id":
            return {**wire, "taskId": f"{task.scope}:{uuid.uuid4()}", "status": "completed"}
        return wire

    def _result(self, task: Task, reply: Reply) -> dict[str, Any]:
        related = {"_meta": {RELATED: {"taskId": task.task_id}}}
        if task.tool == "ask_task":
            with self.changed:
                mine = task.status == "input_required" and not task.asking
                if mine:
                    task.asking = True
            if mine:
                ask = {
                    "mode": "form",
                    "message": "What is your name?",
                    "requestedSchema": NAME_SCHEMA,
                    "_meta": {RELATED: {"taskId": task.task_id}},
                }
                answer = self._ask(f"task-{task.task_id}-{next(self._asks)}", ask, reply)
                self.journal.add({"event": "ask_task_answer", "taskId": task.task_id, "answer": answer})
                action = _action(answer)
                if action == "error":
                    self._finish(task, "failed", message="the client refused to answer")
                else:
                    content = answer.get("result", {}).get("content") if isinstance(answer, dict) else None
                    who = content.get("name") if isinstance(content, dict) else None
                    self._finish(task, "completed", result=text_result(f"hello {who or 'nobody'} ({action})"))
        self._wait(lambda: task.status in TERMINAL)
        if task.status == "completed" and task.result is not None:
            return {**task.result, **related}
        return related  # failed or cancelled: mcp 1.30 answers with the meta alone

    def _cancel(self, task: Task) -> dict[str, Any]:
        if task.status in TERMINAL:
            raise Refusal(-32602, f"Cannot cancel task in terminal status: {task.status}")
        if task.tool == "stuck":
            raise Refusal(-32603, "cancel refused")
        if task.tool == "deaf":
            self._wait(lambda: False)  # a server that never gets round to it
            raise Refusal(-32603, "cancel never handled")
        self._finish(task, "cancelled", message="Task cancelled")
        return task.wire()

    # -- the server's own requests ----------------------------------------------------------------

    def _ask(self, ask_id: str, params: dict[str, Any], reply: Reply) -> dict[str, Any]:
        key = json.dumps(ask_id)
        self.journal.add({"event": "ask", "id": ask_id, "params": params})
        reply.send({"jsonrpc": "2.0", "id": ask_id, "method": "elicitation/create", "params": params})
        if not self._wait(lambda: key in self.answers):
            return {"error": {"code": -32001, "message": "no answer"}}
        with self.changed:
            return self.answers.pop(key)


class Refusal(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _action(answer: object) -> str:
    if not isinstance(answer, dict) or "result" not in answer:
        return "error"
    result = answer["result"]
    action = result.get("action") if isinstance(result, dict) else None
    return action if isinstance(action, str) else "invalid"
