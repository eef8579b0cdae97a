"""The listen hub: open ``subscriptions/listen`` streams and the notifications pushed to them.

Publishing only queues: each stream has an outbox, sent by the thread serving that stream's
``subscriptions/listen`` request (`Listener.pump`). So no lock is held while a notification is
sent, and one stream whose client stopped reading stalls nobody but itself.
"""

from __future__ import annotations

import logging
import queue
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
        self._outbox: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()

    def end(self, error: McpError | None = None) -> None:
        """End the stream: with its closing response, or with `error` as the response."""
        if not self.ended.is_set():
            self.error = error
            self.ended.set()
            self._outbox.put(None)  # wakes `pump`

    def send(self, method: str, params: dict[str, Any]) -> None:
        """Queue one notification tagged with this stream's subscriptionId (never blocks)."""
        meta = dict(params.get("_meta") or {})
        meta[META_SUBSCRIPTION_ID] = self.id
        if not self.ended.is_set():
            self._outbox.put(notification(method, {**params, "_meta": meta}))

    def pump(self) -> None:
        """Send the queued notifications, in order, until the stream ends (the serving thread).

        What was queued before the end is still sent, unless the client went away.
        """
        while True:
            message = self._outbox.get()
            if message is None:
                break
            if self.exchange.cancelled.is_set():
                continue
            try:
                self.exchange.notify(message)
            except Exception as exc:  # the client is gone: end the stream
                log.debug("listen stream ended while sending: %r", exc)
                self.end()
        while True:  # what arrived between the end and here goes too, before the closing response
            try:
                message = self._outbox.get_nowait()
            except queue.Empty:
                return
            if message is not None and not self.exchange.cancelled.is_set():
                try:
                    self.exchange.notify(message)
                except Exception:
                    return


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
