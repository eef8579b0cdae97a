"""The 2025-era session's GET stream as `HttpTransport` keeps it: one at a time, a new session's
replacing the old one's, held back for by a session's first request, cut and joined at the end.

A module of its own because keeping that one stream (its worker, its watch, when it is replaced)
is a job apart from sending messages and reading their answers.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

from mcp_tasks._clock import Deadline, wait_sliced
from mcp_tasks.transports._session import Answer, Deliver, GetResponse, GetStream
from mcp_tasks.transports._watchdog import Watch, Watchdog

__all__ = ["GetStreamHolder"]

OpenWatched = Callable[[dict[str, str], Watch], GetResponse]


class GetStreamHolder:
    """Holds the session's one `GetStream`: `begin` opens it (GETs by `open_get`, each under the
    stream's own watch of `watchdog`; messages to `deliver`, responses to `answer`), `close` ends
    it for good.
    """

    def __init__(self, open_get: OpenWatched, deliver: Deliver, answer: Answer, watchdog: Watchdog, name: str) -> None:
        self._open_get = open_get
        self._deliver = deliver
        self._answer = answer
        self._watchdog = watchdog
        self._name = name
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._closed = False
        self._stream: GetStream | None = None
        self._watch: Watch | None = None

    def begin(self, headers: dict[str, str]) -> None:
        """Keep a GET stream open with the session's `headers`; one with other headers (a new
        session's) replaces the old one. Nothing once closed.
        """
        with self._lock:
            old, old_watch = self._stream, self._watch
            if self._closed or (old is not None and old.headers == headers):
                return
            self._watch = watch = self._watchdog.watch(None)
            self._stream = GetStream(
                lambda headers: self._open_get(headers, watch),
                self._deliver,
                self._answer,
                headers,
                f"{self._name}-{next(self._numbers)}",
            )
        if old is not None:
            _stop(old, old_watch)

    def wait_opened(self, deadline: Deadline, at_most: float) -> None:
        """Wait (`at_most` seconds, within `deadline`) until the stream has an answer, if there is
        a stream and it has none yet.
        """
        stream = self._stream
        if stream is not None and not stream.opened.is_set():
            wait_sliced(stream.opened, deadline.bound(at_most))

    def close(self) -> None:
        """End the stream, and refuse any other from now on."""
        with self._lock:
            self._closed = True
            stream, self._stream = self._stream, None
            watch, self._watch = self._watch, None
        if stream is not None:
            _stop(stream, watch)


def _stop(stream: GetStream, watch: Watch | None) -> None:
    """End a session's GET stream: cut its exchange (even one still waiting for its answer), then
    stop and join its worker.
    """
    if watch is not None:
        watch.fire()
    stream.close()
