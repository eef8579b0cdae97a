"""Where a server meets what carries its messages: one request as the server sees it (`Exchange`:
who sent it, where its notifications go, whether it was cancelled) and what a server must offer to
be served (`ServesMessages`). Neutral ground: the reference server and the direct transport both
use it, and neither imports the other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["Exchange", "ServesMessages"]


class Exchange:
    """A request in flight on the server.

    `notify` sends a notification on this request's stream (the listen stream for
    ``subscriptions/listen``); `cancel` is called by the transport when the client cancels the
    request or goes away; `principal` names who sent it (tasks are visible only to the principal
    that created them).
    """

    __slots__ = ("_callbacks", "_lock", "_notify", "cancelled", "principal")

    def __init__(
        self,
        notify: Callable[[dict[str, Any]], None] | None = None,
        principal: str | None = None,
    ) -> None:
        self._notify = notify
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.cancelled = threading.Event()
        self.principal = principal

    def notify(self, message: dict[str, Any]) -> None:
        """Send a notification on this request's stream (dropped when it has none)."""
        if self._notify is not None:
            self._notify(message)

    def cancel(self) -> None:
        """The client cancelled the request or went away."""
        with self._lock:
            if self.cancelled.is_set():
                return
            self.cancelled.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Call `callback` when the request is cancelled (at once if it already is)."""
        with self._lock:
            if not self.cancelled.is_set():
                self._callbacks.append(callback)
                return
        callback()


class ServesMessages(Protocol):
    """What a transport needs of a server object: one decoded message in, its response out."""

    def handle(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        """Handle one message; the response for a request, None for a notification."""
