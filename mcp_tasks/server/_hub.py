"""The listen hub: open ``subscriptions/listen`` streams and the notifications pushed to them."""

from __future__ import annotations

import logging
import threading
from typing import Any

from mcp_tasks._errors import McpError
from mcp_tasks._exchange import Exchange
from mcp_tasks._wire import META_SUBSCRIPTION_ID, notification

__all__ = ["Hub", "Listener"]

log = logging.getLogger("mcp_tasks.server")


class Listener:
    """One open listen stream: what it accepted, and where its notifications go."""

    def __init__(self, subscription_id: object, accepted: dict[str, Any], exchange: Exchange) -> None:
        self.id = subscription_id
        self.accepted = accepted
        self.exchange = exchange
        self.task_ids = frozenset(accepted.get("taskIds", ()))
        self.ended = threading.Event()
        self.error: McpError | None = None

    def end(self, error: McpError | None = None) -> None:
        """End the stream: with its closing response, or with `error` as the response."""
        if not self.ended.is_set():
            self.error = error
            self.ended.set()

    def send(self, method: str, params: dict[str, Any]) -> None:
        """Send one notification tagged with this stream's subscriptionId."""
        meta = dict(params.get("_meta") or {})
        meta[META_SUBSCRIPTION_ID] = self.id
        try:
            self.exchange.notify(notification(method, {**params, "_meta": meta}))
        except Exception as exc:  # the client is gone: end the stream
            log.debug("listen stream ended while sending: %r", exc)
            self.end()


class Hub:
    """Fans notifications out to the listen streams that asked for them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []

    def open(self, subscription_id: object, accepted: dict[str, Any], exchange: Exchange) -> Listener:
        """Register a stream and send its acknowledgement, before anything else can reach it."""
        listener = Listener(subscription_id, accepted, exchange)
        with self._lock:
            self._listeners.append(listener)
            listener.send("notifications/subscriptions/acknowledged", {"notifications": accepted})
        return listener

    def close(self, listener: Listener) -> None:
        """Forget a stream."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def publish_task(self, principal: str | None, task: dict[str, Any]) -> None:
        """Push a task's full status as ``notifications/tasks`` to the streams listening to it."""
        with self._lock:
            for listener in self._listeners:
                if task["taskId"] in listener.task_ids and listener.exchange.principal == principal:
                    listener.send("notifications/tasks", dict(task))

    def publish_tools_changed(self) -> None:
        """Push ``notifications/tools/list_changed`` to the streams that asked for it."""
        with self._lock:
            for listener in self._listeners:
                if listener.accepted.get("toolsListChanged"):
                    listener.send("notifications/tools/list_changed", {})

    def end_all(self, error: McpError | None = None) -> None:
        """End every open stream: gracefully (each gets its closing response), or with `error`."""
        with self._lock:
            for listener in self._listeners:
                listener.end(error)

    @property
    def count(self) -> int:
        """How many streams are open."""
        with self._lock:
            return len(self._listeners)
