"""A 2025-11-25 MCP server (the handshake era, experimental tasks) with the same ``export`` tool as
export_server.py, written with the standard library only (no mcp_tasks code), over stdio.

It behaves like the servers people run today: ``initialize`` first, ``server/discover`` unknown
(-32601), ``export`` task-augmentable (``execution.taskSupport: "optional"``), and the confirmation
asked with ``elicitation/create`` inside a pending ``tasks/result``, as the official SDK 1.x does.

python -m mcp_tasks.examples.legacy_export_server
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from typing import Any

VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
EXPORT = {
    "name": "export",
    "description": "Export a report row by row, after asking the user to confirm.",
    "inputSchema": {
        "type": "object",
        "properties": {"report": {"type": "string"}, "rows": {"type": "integer", "default": 3}},
        "required": ["report"],
    },
    "execution": {"taskSupport": "optional"},
}

write_lock = threading.Lock()
answers: dict[Any, dict[str, Any]] = {}
answered = threading.Condition()
tasks: dict[str, dict[str, Any]] = {}
ids = itertools.count(1)


def send(message: dict[str, Any]) -> None:
    """Write one message to stdout (one line; answers and requests may come from two threads)."""
    with write_lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def ask(params: dict[str, Any]) -> dict[str, Any]:
    """Send the client a request and wait for its answer (read by the main loop)."""
    request_id = f"ask-{next(ids)}"
    send({"jsonrpc": "2.0", "id": request_id, "method": "elicitation/create", "params": params})
    with answered:
        answered.wait_for(lambda: request_id in answers)
        result: dict[str, Any] = answers.pop(request_id).get("result", {})
        return result


def export(report: str, rows: int) -> dict[str, Any]:
    """The tool: ask the client to confirm, then export `rows` rows of `report`."""
    answer = ask(
        {
            "message": f"Export {rows} rows of {report}?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        }
    )
    accepted = answer.get("action") == "accept" and answer.get("content", {}).get("ok")
    time.sleep(0.05 * rows)
    done = {"report": report, "exported": rows if accepted else 0}
    return {"content": [{"type": "text", "text": json.dumps(done)}], "structuredContent": done}


def task_map(task: dict[str, Any]) -> dict[str, Any]:
    """A task as the 2025-11-25 wire shows it."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "taskId": task["id"],
        "status": task["status"],
        "ttl": 60000,
        "pollInterval": 100,
        "createdAt": now,
        "lastUpdatedAt": now,
    }


def result_of(task: dict[str, Any]) -> dict[str, Any]:
    """tasks/result: runs the export (asking inside this pending request), then answers."""
    with task["lock"]:
        if task["result"] is None:
            task["result"] = export(task["report"], task["rows"])
            task["status"] = "completed"
    result: dict[str, Any] = task["result"]
    return result


def handle(message: dict[str, Any]) -> dict[str, Any]:
    """The result of one request (raises LookupError for a method this server does not have)."""
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        offered = params.get("protocolVersion")
        capabilities: dict[str, Any] = {
            "tools": {},
            "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
        }
        return {
            "protocolVersion": offered if offered in VERSIONS else VERSIONS[0],
            "capabilities": capabilities,
            "serverInfo": {"name": "legacy-export-example", "version": "1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [EXPORT]}
    if method == "tools/call" and params.get("name") == "export":
        arguments = params.get("arguments") or {}
        report, rows = str(arguments.get("report")), int(arguments.get("rows", 3))
        if "task" not in params:
            return export(report, rows)
        task_id = f"task-{next(ids)}"
        task: dict[str, Any] = {"id": task_id, "status": "input_required", "report": report, "rows": rows}
        task.update(result=None, lock=threading.Lock())
        tasks[task_id] = task
        return {"task": task_map(task)}
    if method in ("tasks/get", "tasks/result") and params.get("taskId") in tasks:
        task = tasks[params["taskId"]]
        return task_map(task) if method == "tasks/get" else result_of(task)
    raise LookupError(f"Method not found: {method}")


def serve(message: dict[str, Any]) -> None:
    """Answer one request, with its result or its error."""
    try:
        send({"jsonrpc": "2.0", "id": message["id"], "result": handle(message)})
    except LookupError as exc:
        send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": str(exc)}})


def main() -> None:
    """Serve stdin until it ends."""
    for line in sys.stdin:
        message = json.loads(line)
        if "method" not in message:  # the client's answer to one of our requests
            with answered:
                answers[message.get("id")] = message
                answered.notify_all()
        elif "id" in message:  # requests run in threads: tasks/result blocks while it asks
            threading.Thread(target=serve, args=(message,), daemon=True).start()


if __name__ == "__main__":
    main()
