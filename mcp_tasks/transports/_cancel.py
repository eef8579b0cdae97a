"""Telling a server that a request was abandoned, off the caller's time.

A request that timed out has spent its caller's whole timeout; the ``notifications/cancelled``
that tells the server goes to the very server that made it time out, which may be just as slow to
take the notice. So the notice is handed to a `CancelSender`: one thread per transport
(``mcp_tasks-cancel-…``, a daemon, started with the first notice of a burst and ending when it
has none left), which sends the notices one after another, each within its own budget counted
from the moment it was handed over. At most `MAX_WAITING` notices wait; one more is dropped (best
effort, logged at debug), and so is one whose budget ran out while it waited. `close` takes no
more notices, lets the waiting ones go out within what is left of their budgets, and joins the
thread: it is bounded by the budget, whatever the server does.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable
from typing import Any, Final

from mcp_tasks._clock import Deadline
from mcp_tasks._threads import join_all, start_thread

__all__ = ["MAX_WAITING", "CancelSender"]

log = logging.getLogger("mcp_tasks")

MAX_WAITING: Final = 64
"""Notices that may wait for the sender; one more is dropped."""

Send = Callable[[dict[str, Any], Deadline], None]


class CancelSender:
    """Sends abandoned requests' notices with `send(message, deadline)` on a thread of its own.

    `budget()` is read as each notice is handed over: the time it may take, waiting included.
    """

    def __init__(self, name: str, send: Send, budget: Callable[[], float]) -> None:
        self._name = name
        self._send = send
        self._budget = budget
        self._lock = threading.Lock()
        self._waiting: collections.deque[tuple[dict[str, Any], Deadline]] = collections.deque()
        self._thread: threading.Thread | None = None  # the running sender, if any
        self._started: list[threading.Thread] = []  # every sender not yet known to have ended
        self._closed = False

    def post(self, message: dict[str, Any]) -> None:
        """Hand `message` over; returns at once (a notice that cannot wait is dropped)."""
        deadline = Deadline(self._budget())
        with self._lock:
            if self._closed:
                log.debug("dropped a notifications/cancelled: the client is closed")
                return
            if len(self._waiting) >= MAX_WAITING:
                log.debug("dropped a notifications/cancelled: %d notices wait already", MAX_WAITING)
                return
            self._waiting.append((message, deadline))
            if self._thread is None:
                self._started = [t for t in self._started if t.is_alive()]
                self._thread = start_thread(f"cancel-{self._name}", self._run)
                self._started.append(self._thread)

    def close(self) -> None:
        """Take no more notices; send those waiting (each within its budget); join the thread."""
        with self._lock:
            self._closed = True
            threads = list(self._started)
            left = [deadline for _, deadline in self._waiting]
        limit = max((d.remaining() or 0.0 for d in left), default=0.0)
        join_all(threads, limit + 1.0)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._waiting:
                    self._thread = None
                    return
                message, deadline = self._waiting.popleft()
            params = message.get("params") or {}
            if deadline.expired():
                log.debug("dropped the notifications/cancelled for %r: its budget ran out", params.get("requestId"))
                continue
            try:
                self._send(message, deadline)
            except Exception as failure:
                request_id = params.get("requestId")
                log.debug("could not tell the server that request %r was abandoned: %r", request_id, failure)
