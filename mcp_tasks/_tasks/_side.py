"""What the tasks code keeps per channel, and the owners it registers on the channel's dispatcher.

- `notifications/tasks/status` (2025-era sessions push them unasked) wakes the waits of the task
  it names (`StatusBoard`);
- a server request that names a task (``io.modelcontextprotocol/related-task``) goes to a running
  wait for that task; with none running it goes on to the client's handlers. Nothing is guessed:
  a request that names no task reaches a wait only on the wait's own pending request (the channel
  routes those by the request's stream).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from mcp_tasks._session._dispatch import RequestOwner, related_task

if TYPE_CHECKING:
    from mcp_tasks._session._channel import Channel, Envelope

__all__ = ["StatusBoard", "TaskSide", "side_of"]

STATUS_NOTIFICATION = "notifications/tasks/status"


class StatusBoard:
    """Wakes waits when a status notification names their task (a wait still polls, so a lost
    notification costs only time).
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._versions: dict[str, int] = {}
        self._closed = False

    def publish(self, task_id: str) -> None:
        """A notification named `task_id`."""
        with self._changed:
            self._versions[task_id] = self._versions.get(task_id, 0) + 1
            if len(self._versions) > 10_000:  # old tasks: forget them rather than grow for ever
                self._versions.clear()
            self._changed.notify_all()

    def version(self, task_id: str) -> int:
        """How many notifications have named `task_id` (the mark `wait` compares against)."""
        with self._changed:
            return self._versions.get(task_id, 0)

    def wait(self, task_id: str, seen: int, timeout: float) -> bool:
        """Block until a notification after mark `seen` names `task_id`, `timeout` passes or the
        board closes.
        """
        with self._changed:
            return self._changed.wait_for(lambda: self._closed or self._versions.get(task_id, 0) != seen, timeout)

    def close(self) -> None:
        """Wake every wait (the client is closing)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()


class TaskSide:
    """The tasks code's state on one channel: the status board, the waits that answer requests
    naming their task, and what the 2025-era tools say of task support.
    """

    def __init__(self, channel: Channel) -> None:
        self.board = StatusBoard()
        self.task_support: dict[str, str] = {}
        self.declared: Envelope | None = None  # the modern requests' _meta, merged once
        self._lock = threading.Lock()
        self._waits: dict[str, list[RequestOwner]] = {}
        self.listeners: list[Callable[[str, dict[str, Any]], object]] = []  # also told of status notifications
        channel.dispatcher.own_notifications(STATUS_NOTIFICATION, self._status_notification)
        channel.dispatcher.own_related_requests(self._related_request)

    @contextmanager
    def answering(self, task_id: str, owner: RequestOwner) -> Iterator[None]:
        """While this block runs, requests that name `task_id` go to `owner`."""
        with self._lock:
            self._waits.setdefault(task_id, []).append(owner)
        try:
            yield
        finally:
            with self._lock:
                waits = self._waits.get(task_id, [])
                if owner in waits:
                    waits.remove(owner)
                if not waits:
                    self._waits.pop(task_id, None)

    def close(self) -> None:
        """The channel is closing: wake the waits sleeping on the board."""
        self.board.close()

    def learn_tools(self, tools: list[dict[str, Any]]) -> None:
        """Remember each listed tool's ``execution.taskSupport`` (2025-era task augmentation)."""
        for tool in tools:
            name = tool.get("name")
            if isinstance(name, str):
                execution = tool.get("execution")
                mode = execution.get("taskSupport") if isinstance(execution, dict) else None
                self.task_support[name] = mode if mode in ("optional", "required") else "forbidden"

    def _status_notification(self, method: str, params: dict[str, Any]) -> None:
        task_id = params.get("taskId")
        if isinstance(task_id, str) and task_id:
            self.board.publish(task_id)
            for listener in list(self.listeners):
                listener(method, params)

    def _related_request(self, message: dict[str, Any]) -> dict[str, Any] | None:
        task_id = related_task(message)
        with self._lock:
            waits = self._waits.get(task_id or "")
            owner = waits[-1] if waits else None
        return owner(message) if owner is not None else None


def side_of(channel: Channel) -> TaskSide:
    """The channel's `TaskSide` (made, and its owners registered, on first use)."""
    return channel.attachment(TaskSide, TaskSide)
