"""What a replay server answers: the lines the test put in a ``replay`` tool call.

``tools/call`` of ``replay`` with ``{"answers": [[line, ...], ...]}`` (each line hex-encoded
bytes, so that any bytes at all can be asked for): the first list of lines answers this call, the
others answer the requests that follow, one list each. Any ``"__ID__"`` in a line becomes the
request's id. ``reset`` clears what is queued. With nothing queued, a request gets a plain good
answer.
"""

from __future__ import annotations

import json
import threading
from typing import Any

Lines = list[bytes]


class Script:
    """The queue of answers shared by every connection of one replay server."""

    def __init__(self) -> None:
        self._queue: list[Lines] = []
        self._lock = threading.Lock()

    def answer(self, request: dict[str, Any]) -> Lines:
        """The lines that answer `request` (ids filled in); [] for a notification."""
        if "id" not in request:
            return []
        request_id = json.dumps(request["id"])
        params = request.get("params") or {}
        with self._lock:
            if request.get("method") == "tools/call" and params.get("name") == "replay":
                answers = [[bytes.fromhex(h) for h in lines] for lines in params["arguments"]["answers"]]
                self._queue = answers[1:]
                lines = answers[0] if answers else []
            elif request.get("method") == "tools/call" and params.get("name") == "reset":
                self._queue = []
                lines = [good(request)]
            elif self._queue:
                lines = self._queue.pop(0)
            else:
                lines = [good(request)]
        return [line.replace(b'"__ID__"', request_id.encode()) for line in lines]


def good(request: dict[str, Any]) -> bytes:
    """A well-formed answer: a completed task for tasks/get, -32601 for a listen, else a result."""
    method = request.get("method")
    if method == "server/discover":  # a 2026-07-28 server: the era probe finds it modern
        found = {"supportedVersions": ["2026-07-28"], "capabilities": {}}
        return json.dumps({"jsonrpc": "2.0", "id": "__ID__", "result": found}).encode()
    if method == "tasks/get":
        task_id = (request.get("params") or {}).get("taskId")
        result: dict[str, Any] = {
            "resultType": "complete",
            "taskId": task_id,
            "status": "completed",
            "result": {"content": []},
        }
        return json.dumps({"jsonrpc": "2.0", "id": "__ID__", "result": result}).encode()
    if method == "subscriptions/listen":
        error = {"code": -32601, "message": "Method not found"}
        return json.dumps({"jsonrpc": "2.0", "id": "__ID__", "error": error}).encode()
    return json.dumps({"jsonrpc": "2.0", "id": "__ID__", "result": {"content": [], "fine": True}}).encode()


def encode(line: str) -> str:
    """A line as the replay tool's argument: its bytes in hex (lone surrogates as the invalid
    UTF-8 they would be)."""
    return line.encode("utf-8", "surrogatepass").hex()
