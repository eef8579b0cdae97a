"""Which tool a task runs, for the questions its input handlers ask (`Asker`): remembered per
connection for the tasks this client created, taken from the kept record for a resumed one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from mcp_tasks._session._turns import asking_for
from mcp_tasks._tasks._records import RESUMING

if TYPE_CHECKING:
    from mcp_tasks._client import Client
    from mcp_tasks._session._channel import Channel

__all__ = ["ToolNames", "asking_about", "remember_tool"]

KEPT = 10_000
"""Tool names kept per connection (the oldest are forgotten first)."""


class ToolNames:
    """The tool of each task this connection created (the latest `KEPT`)."""

    def __init__(self, _channel: Channel) -> None:
        self._lock = threading.Lock()
        self._names: OrderedDict[str, str] = OrderedDict()

    def remember(self, task_id: str, tool: str) -> None:
        """`task_id` runs `tool`."""
        with self._lock:
            self._names[task_id] = tool
            if len(self._names) > KEPT:
                self._names.popitem(last=False)

    def get(self, task_id: str) -> str | None:
        """The tool of `task_id`, when this connection created it."""
        with self._lock:
            return self._names.get(task_id)


def remember_tool(client: Client, task_id: str, tool: str) -> None:
    """Remember that the task `task_id` (just created) runs `tool`."""
    client.channel.attachment(ToolNames, ToolNames).remember(task_id, tool)


def asking_about(client: Client, task_id: str) -> AbstractContextManager[None]:
    """While this block runs, input handlers answer for `task_id` (and its tool, when known)."""
    tool = client.channel.attachment(ToolNames, ToolNames).get(task_id)
    if tool is None:
        resuming = RESUMING.get()
        if resuming is not None and resuming.task_id == task_id:
            tool = resuming.tool
    return asking_for(task_id, tool)
