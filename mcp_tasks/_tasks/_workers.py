"""A small bounded pool of library threads for work that may block on a person: a 2025-era
task's input, answered while other futures go on resolving (see `Futures` in _future.py).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from mcp_tasks._threads import join_all, start_thread
from mcp_tasks.transports._base import closed_error

__all__ = ["Workers"]


class Workers:
    """Up to `limit` daemon threads ``mcp_tasks-<name>-<n>``, started as jobs need them (none
    until the first job) and kept until `close()`; jobs beyond them wait their turn, in order.
    """

    def __init__(self, name: str, limit: int) -> None:
        self.name = name
        self.limit = limit
        self._jobs: deque[Callable[[], None]] = deque()
        self._changed = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._stop = False

    def run(self, job: Callable[[], None]) -> None:
        """Run `job` on a worker (it must not raise); a TransportError once closed."""
        with self._changed:
            if self._stop:
                raise closed_error()
            self._jobs.append(job)
            if len(self._jobs) > self._idle and len(self._threads) < self.limit:
                self._threads.append(start_thread(f"{self.name}-{len(self._threads) + 1}", self._work))
            self._changed.notify()

    def _work(self) -> None:
        while True:
            with self._changed:
                while not self._jobs and not self._stop:
                    self._idle += 1
                    self._changed.wait()
                    self._idle -= 1
                if self._stop:
                    return  # jobs not started are dropped: their owner fails what they were for
                job = self._jobs.popleft()
            job()

    def close(self) -> None:
        """Start no more jobs (one running ends when its work does)."""
        with self._changed:
            self._stop = True
            self._jobs.clear()
            self._changed.notify_all()

    def join(self, timeout: float) -> None:
        """Join the workers within `timeout`."""
        join_all(self._threads, timeout)
