"""Name lookups under the call's deadline.

``getaddrinfo`` cannot be interrupted or given a timeout: a resolver that hangs (an unreachable
DNS server, a stuck NSS module) holds its caller as long as it likes. So a host name is looked up
on a helper thread (``mcp_tasks-resolve-…``, a daemon, one per lookup in flight, ending with its
lookup) while the caller waits for the answer until its deadline, or until its exchange is cut
(`close`). The same name asked for while its lookup runs waits for that lookup (one thread per
name, however many connections want it), and at most `MAX_LOOKUPS` names are looked up at once:
one more waits for a free slot, within its own deadline. A lookup that outlives its callers ends
on its own; `Resolver.close` ends the waits and joins the helpers (bounded). An IP address needs
no lookup: it is taken in the caller's thread, without a helper.

The helpers call `socket.getaddrinfo` as it is when they run, so a test's resolver stand-in (a
hanging one, say) put there is the one they use.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from mcp_tasks._clock import SLICE, block_for
from mcp_tasks._threads import join_all, start_thread

__all__ = ["MAX_LOOKUPS", "Resolver"]

MAX_LOOKUPS: Final = 8
"""Names looked up at once per transport; one more waits for a slot."""

JOIN_TIMEOUT: Final = 1.0

Addresses = list[tuple[Any, ...]]


class _Lookup:
    __slots__ = ("done", "error", "found")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.found: Addresses = []
        self.error: BaseException | None = None


class Resolver:
    """Looks names up for one transport's connections (see the module's docstring)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        self._running: dict[tuple[str, int], _Lookup] = {}
        self._threads: list[threading.Thread] = []
        self._numbers = 0
        self._closed = False

    def resolve(self, host: str, port: int, end: float | None, cut: Callable[[], bool]) -> Addresses:
        """The addresses of `host` (``SOCK_STREAM``), by `end` on the monotonic clock (None: no
        end). Raises `TimeoutError` when `end` passes first, `ConnectionAbortedError` once `cut()`
        says the exchange was cut, and what the lookup raised (`socket.gaierror`).
        """
        numeric = _numeric(host, port)
        if numeric is not None:
            return numeric
        key = (host, port)
        with self._lock:
            lookup = self._running.get(key)
            while lookup is None:
                if self._closed:
                    raise ConnectionAbortedError("the transport is closed")
                if len(self._running) < MAX_LOOKUPS:
                    lookup = self._start(key)
                    break
                left = _left(end, host)
                self._freed.wait(min(block_for(left) or SLICE, SLICE))
                if cut():
                    raise ConnectionAbortedError("the exchange was cut during a name lookup")
                lookup = self._running.get(key)
        while not lookup.done.is_set():
            if cut() or self._closed:
                raise ConnectionAbortedError("the exchange was cut during a name lookup")
            left = _left(end, host)
            lookup.done.wait(min(block_for(left) or SLICE, SLICE))
        error = lookup.error
        if error is not None:
            raise _copy(error) from None
        return list(lookup.found)

    def close(self) -> None:
        """Take no more lookups and join the helpers (those stuck in a lookup are left, daemons)."""
        with self._lock:
            self._closed = True
            threads = [t for t in self._threads if t.is_alive()]
            self._threads = []
            self._freed.notify_all()
        if threads:
            join_all(threads, JOIN_TIMEOUT)

    def _start(self, key: tuple[str, int]) -> _Lookup:
        # the lock held
        lookup = _Lookup()
        self._running[key] = lookup
        self._numbers += 1
        self._threads = [t for t in self._threads if t.is_alive()]
        self._threads.append(start_thread(f"resolve-{self._name}-{self._numbers}", lambda: self._look_up(key, lookup)))
        return lookup

    def _look_up(self, key: tuple[str, int], lookup: _Lookup) -> None:
        try:
            lookup.found = socket.getaddrinfo(key[0], key[1], 0, socket.SOCK_STREAM)
        except BaseException as exc:  # handed to the callers
            lookup.error = exc
        finally:
            with self._lock:
                if self._running.get(key) is lookup:
                    del self._running[key]
                self._freed.notify_all()
            lookup.done.set()


def _left(end: float | None, host: str) -> float | None:
    if end is None:
        return None
    left = end - time.monotonic()
    if left <= 0:
        raise TimeoutError(f"the name lookup of {host} timed out")
    return left


def _numeric(host: str, port: int) -> Addresses | None:
    """The addresses of an IP address (no lookup: it never blocks), or None for a name."""
    try:
        ipaddress.ip_address(host.partition("%")[0])  # an IPv6 address may carry a scope
    except ValueError:
        return None
    try:
        return socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError):
        return None


def _copy(error: BaseException) -> BaseException:
    """A lookup's failure, raised afresh in each caller's thread (one instance is not raised twice)."""
    if isinstance(error, OSError):
        return type(error)(*error.args)
    return OSError(f"the name lookup failed: {error!r}")
