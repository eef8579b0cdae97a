"""One authorization flow at a time per key, and nobody waiting on it longer than their own deadline.

A flow may take a person's whole sign-in. The thread that starts it runs it; a thread that needs
the same key meanwhile joins it: it waits for the flow to end (at most until its own deadline,
then `RequestTimeout`) and then looks again, usually finding the new token. Flows for other keys
(other servers, other clients) never wait on each other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from typing import TypeVar

from mcp_tasks._clock import Deadline, wait_sliced
from mcp_tasks._errors import OAuthError, RequestTimeout

__all__ = ["Flights"]

T = TypeVar("T")
Y = TypeVar("Y")
S = TypeVar("S")


class _Flight:
    __slots__ = ("done", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None


class Flights:
    """The flows running now, one per key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, _Flight] = {}

    def run(self, key: str, deadline: Deadline, work: Callable[[], Generator[Y, S, T]]) -> Generator[Y, S, T]:
        """`work()` (a generator: the flow's exchanges, see `mcp_tasks._oauth.http`) as the one flow
        for `key`; when another thread runs one, wait for it (within `deadline`) and then try
        again. An `OAuthError` of the flow waited for is raised here too (a refused sign-in is not
        asked again by every waiting thread). A flow its driver abandons (closed) ends as failed.
        """
        while True:
            with self._lock:
                flight = self._running.get(key)
                leader = flight is None
                if flight is None:
                    flight = self._running[key] = _Flight()
            if leader:
                try:
                    return (yield from work())
                except BaseException as exc:
                    flight.error = exc
                    raise
                finally:
                    with self._lock:
                        del self._running[key]
                    flight.done.set()
            self._wait(flight, deadline)
            error = flight.error
            if isinstance(error, OAuthError):
                raise OAuthError(f"the authorization another thread ran failed: {error.message}", data=error.data)

    def join(self, key: str, deadline: Deadline) -> None:
        """Wait (within `deadline`) for the flow running for `key`, if one is."""
        with self._lock:
            flight = self._running.get(key)
        if flight is not None:
            self._wait(flight, deadline)

    @staticmethod
    def _wait(flight: _Flight, deadline: Deadline) -> None:
        if not wait_sliced(flight.done, deadline.remaining()):
            raise RequestTimeout(
                deadline.timeout or 0.0, "Request timed out waiting for the authorization another thread runs"
            )
