"""A 2026-07-28 server that answers ``tools/call`` with a task in the 2025-11-25 nested shape
(``{"task": {...}}``, its ``ttl`` and ``pollInterval`` keys, no ``resultType: "task"``), as a
server half-moved from the old era might: the socket-level `ModernHttpTasksServer` (the tests'
own, standard library only) with that one habit. Its ``tasks/get`` answers as 2026-07-28 has it.

Tool ``quick``: a task that is completed when read (``ran quick``); ``stamp``: whether the
nested answer says ``resultType: "complete"`` (a tool result's marker) or nothing.
"""

from __future__ import annotations

import uuid
from typing import Any

from tests.foreign.legacy_tasks_core import obj
from tests.foreign.modern_http_tasks import STAMP, ModernHttpTasksServer

NAME = "modern-http-tasks"  # its serverInfo name


class NestedModernServer(ModernHttpTasksServer):
    def __init__(self, *, stamp: bool = False) -> None:
        super().__init__()
        self.stamp = stamp

    def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("name") != "quick":
            return super()._call(params)
        task_id = str(uuid.uuid4())
        self.tasks[task_id] = {"tool": "quick", "mode": None, "arguments": obj(params.get("arguments"))}
        task = {
            "taskId": task_id,
            "status": "working",
            "createdAt": STAMP,
            "lastUpdatedAt": STAMP,
            "ttl": 60000,
            "pollInterval": 20,
        }
        return {"resultType": "complete", "task": task} if self.stamp else {"task": task}

    def _hostile(self, task_id: str, task: dict[str, Any]) -> dict[str, Any]:
        if task["tool"] != "quick":
            return super()._hostile(task_id, task)
        done = {"content": [{"type": "text", "text": "ran quick"}], "isError": False}
        return {
            "taskId": task_id,
            "status": "completed",
            "createdAt": STAMP,
            "lastUpdatedAt": STAMP,
            "ttlMs": 60000,
            "result": done,
        }
