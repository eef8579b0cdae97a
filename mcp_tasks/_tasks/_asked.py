"""Which call a task runs (its tool and its arguments' short form), for the questions its input
handlers ask (`Asker`) and a set's display: remembered per connection for the tasks this client
created, taken from the kept record for a resumed one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from mcp_tasks._call_text import arguments_text, task_label
from mcp_tasks._session._turns import asking_for
from mcp_tasks._tasks._records import RESUMING

if TYPE_CHECKING:
    from mcp_tasks._client import Client
    from mcp_tasks._session._channel import Channel

__all__ = ["ToolNames", "asking_about", "label_of", "labels_of", "remember_tool"]

KEPT = 10_000
"""Tool names kept per connection (the oldest are forgotten first)."""


class ToolNames:
    """The call of each task this connection created (the latest `KEPT`): its tool and its
    arguments' short form (never the arguments themselves).
    """

    def __init__(self, _channel: Channel) -> None:
        self._lock = threading.Lock()
        self._names: OrderedDict[str, tuple[str, str]] = OrderedDict()

    def remember(self, task_id: str, tool: str, arguments: str = "") -> None:
        """`task_id` runs `tool` with `arguments` (as `arguments_text` shows them)."""
        with self._lock:
            self._names[task_id] = (tool, arguments)
            if len(self._names) > KEPT:
                self._names.popitem(last=False)

    def get(self, task_id: str) -> tuple[str, str] | None:
        """The tool of `task_id` and its arguments' short form, when this connection created it."""
        with self._lock:
            return self._names.get(task_id)


def remember_tool(client: Client, task_id: str, tool: str, arguments: Mapping[str, Any] | None = None) -> None:
    """Remember that the task `task_id` (just created) runs `tool` with `arguments`."""
    client.channel.attachment(ToolNames, ToolNames).remember(task_id, tool, arguments_text(arguments))


def _call_of(client: Client, task_id: str) -> tuple[str | None, str]:
    """The tool and arguments' short form of `task_id`: this connection's memory, else the
    record being resumed; None and "" when neither knows it.
    """
    known = client.channel.attachment(ToolNames, ToolNames).get(task_id)
    if known is not None:
        return known
    resuming = RESUMING.get()
    if resuming is not None and resuming.task_id == task_id:
        return resuming.tool, arguments_text(resuming.arguments)
    return None, ""


def asking_about(client: Client, task_id: str) -> AbstractContextManager[None]:
    """While this block runs, input handlers answer for `task_id` (and its call, when known)."""
    tool, arguments = _call_of(client, task_id)
    return asking_for(task_id, tool, arguments)


def label_of(client: Client, task_id: str) -> str | None:
    """``export {"report": "q3"} e294…b175`` when the call of `task_id` is known, else None."""
    tool, arguments = _call_of(client, task_id)
    return task_label(task_id, tool, arguments) if tool else None


def labels_of(client: Client, task_ids: Iterable[str]) -> dict[str, str]:
    """``export {"report": "q3"} e294…b175`` for each of `task_ids` whose call is known."""
    labels = {}
    for task_id in task_ids:
        label = label_of(client, task_id)
        if label is not None:
            labels[task_id] = label
    return labels
