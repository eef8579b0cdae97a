"""One deadline from connect to the last byte: a watchdog that shuts down the sockets of an HTTP
exchange whose deadline passed.

A socket timeout bounds one ``recv``; a server that trickles its status line, its headers or its
body a byte at a time resets it with every byte, so per-step timeouts cannot make a total. Here
each exchange (a POST and its answer, a resumption GET, the standing GET stream) holds a `Watch`:
every socket it uses is attached to it (by the connection classes in `transports._plumbing`, as
the socket is made or reused), and at the deadline the `Watchdog` shuts them down, which wakes any
read or write blocked on them at once. The reader then sees `Watch.fired` and reports a timeout,
never a clean end, and the connection is closed, never pooled.

One watchdog per transport, one thread (``mcp_tasks-http-watchdog-…``) started with the first
watch that has a deadline: it sleeps on a condition until the nearest deadline of the watches
still open, and without any open watch it sleeps until a new one comes (no wake-ups while
idle, no thread per call). A watch closed before its deadline costs at most one wake-up at that
deadline (the sleeper then finds nothing due and sleeps on), not one per call. `Watch.fire` cuts
an exchange from any thread (`close`, an answer that came another way) by the same means.

The name lookup before a connect is under the same deadline: `connect` has the watchdog's
`Resolver` (`transports._resolve`) look the host up on a helper thread, and waits for it no longer
than the watch's deadline (or until the watch is cut).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

from mcp_tasks._clock import Deadline
from mcp_tasks._threads import join_all, start_thread
from mcp_tasks.transports import _resolve

__all__ = ["Watch", "Watchdog", "attach_current", "connect", "current", "watching"]

DEADLINE = "deadline"
CUT = "cut"


class Watch:
    """The sockets of one exchange, shut down when its deadline passes or it is `fire`d.

    `fired` is None while the exchange runs, else why it was cut (``"deadline"`` or ``"cut"``).
    `sock` is the socket attached last (the one the answer is read from).
    """

    __slots__ = ("_dog", "_socks", "at", "attached", "closed", "fired", "sock")

    def __init__(self, dog: Watchdog, at: float | None) -> None:
        self._dog = dog
        self.at = at
        self._socks: list[socket.socket] = []
        self.sock: socket.socket | None = None
        self.fired: str | None = None
        self.closed = False
        self.attached = False  # a socket was connected for the exchange (it may have sent)

    def attach(self, sock: socket.socket | None, *, connected: bool = True) -> bool:
        """Watch `sock` too (shut down at once when the watch already fired: then True).
        `connected` False: a socket about to connect (no request can have gone out on it yet).
        """
        if sock is None:
            return False
        with self._dog.lock:
            if sock not in self._socks:
                self._socks = [s for s in self._socks if s.fileno() != -1]
                self._socks.append(sock)
            self.sock = sock
            self.attached = self.attached or connected
            fired = self.fired is not None
        if fired:
            _shut(sock)
        return fired

    def fire(self, why: str = CUT) -> None:
        """Cut the exchange now: shut its sockets down (from any thread). Idempotent; a closed
        watch is not cut (its connection may be another exchange's by now).
        """
        with self._dog.lock:
            if self.fired is not None or self.closed:
                return
            self.fired = why
            socks = list(self._socks)
        for sock in socks:
            _shut(sock)

    def detach(self, sock: socket.socket | None) -> bool:
        """Stop watching `sock` (its connection may go back to the pool); True when the watch
        fired already, so `sock` may be cut: then its connection must be closed, not pooled.
        """
        with self._dog.lock:
            if sock in self._socks:
                self._socks.remove(sock)
            if self.sock is sock:
                self.sock = None
            return self.fired is not None

    def rearm(self, deadline: Deadline | None) -> None:
        """Give the watch a new deadline (None: no deadline, as a listen stream once it is open)."""
        self._dog.rearm(self, None if deadline is None else deadline.at)

    def close(self) -> bool:
        """The exchange is over: its sockets are never shut from here on. True when it was cut
        (then its connection must be closed, not pooled).
        """
        return self._dog.release(self)

    @property
    def timed_out(self) -> bool:
        """Whether the deadline cut the exchange."""
        return self.fired == DEADLINE


class Watchdog:
    """One thread for all the watches of one transport (see the module's docstring)."""

    def __init__(self, name: str) -> None:
        self.resolver = _resolve.Resolver(name)
        """Looks up the names of the connections made under this watchdog's watches."""
        self.lock = threading.Lock()
        self._wake = threading.Condition(self.lock)
        self._name = name
        self._open: set[Watch] = set()
        self._target: float | None = None  # when the sleeper wakes next (None: not before notified)
        self._thread: threading.Thread | None = None
        self._closed = False

    def watch(self, deadline: Deadline | None) -> Watch:
        """A watch for one exchange under `deadline` (None: cut only by `Watch.fire`)."""
        watch = Watch(self, None if deadline is None else deadline.at)
        if watch.at is None:
            return watch
        with self.lock:
            self._add(watch)
        return watch

    def rearm(self, watch: Watch, at: float | None) -> None:
        """See `Watch.rearm`."""
        with self.lock:
            self._open.discard(watch)
            watch.at = at
            if at is not None and not watch.closed:
                self._add(watch)

    def release(self, watch: Watch) -> bool:
        """See `Watch.close`."""
        with self.lock:
            watch.closed = True
            self._open.discard(watch)
            watch._socks = []
            return watch.fired is not None

    def close(self) -> None:
        """Stop the thread (the watches still open are left to their owners) and join it, and the
        resolver's helpers.
        """
        with self.lock:
            self._closed = True
            thread = self._thread
            self._wake.notify()
        if thread is not None:
            join_all([thread], 1.0)
        self.resolver.close()

    def _add(self, watch: Watch) -> None:
        # the lock held
        assert watch.at is not None
        self._open.add(watch)
        if self._closed:
            return
        if self._thread is None:
            self._target = watch.at
            self._thread = start_thread(f"http-watchdog-{self._name}", self._run)
        elif self._target is None or watch.at < self._target:
            self._target = watch.at
            self._wake.notify()

    def _run(self) -> None:
        due: list[Watch] = []
        while True:
            with self.lock:
                while True:
                    if self._closed:
                        return
                    now = time.monotonic()
                    due = [w for w in self._open if w.at is not None and w.at <= now]
                    if due:
                        break
                    nearest = min((w.at for w in self._open if w.at is not None), default=None)
                    self._target = nearest
                    self._wake.wait(None if nearest is None else nearest - now)
                for watch in due:
                    self._open.discard(watch)
            for watch in due:
                watch.fire(DEADLINE)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # not connected yet, or closed already


_current = threading.local()


class watching:
    """Make `watch` this thread's current one: sockets the HTTP stack makes or reuses meanwhile
    (the POST, an auth object's re-send, a resumption GET) are attached to it. A class rather
    than a generator context manager, as it runs on every request.
    """

    __slots__ = ("_previous", "_watch")

    def __init__(self, watch: Watch) -> None:
        self._watch = watch
        self._previous: Watch | None = None

    def __enter__(self) -> Watch:
        self._previous = getattr(_current, "watch", None)
        _current.watch = self._watch
        return self._watch

    def __exit__(self, *exc: object) -> None:
        _current.watch = self._previous


def attach_current(sock: socket.socket | None, *, connected: bool = True) -> bool:
    """Attach `sock` to this thread's current watch, if any (called by the connection classes);
    True when that watch was cut already.
    """
    watch: Watch | None = getattr(_current, "watch", None)
    return watch is not None and watch.attach(sock, connected=connected)


def current() -> Watch | None:
    """The current watch of the calling thread (see `watching`)."""
    watch: Watch | None = getattr(_current, "watch", None)
    return watch


def connect(
    address: tuple[str, int],
    timeout: float | None,
    source_address: tuple[str, int] | None = None,
    options: Sequence[tuple[int, int, int | bytes]] | None = None,
) -> socket.socket:
    """`socket.create_connection`, with each socket attached to the current watch before it
    connects: a connect that waits (a server whose backlog is full drops the SYN) is cut at the
    deadline, or by `Watch.fire`, like any other step; and the name looked up by the watchdog's
    `Resolver`, within the watch's deadline and `timeout`. Raises OSError (TimeoutError on timeout).
    """
    host, port = address
    error: OSError | None = None
    for family, kind, proto, _, where in _addresses(host, port, timeout):
        sock = socket.socket(family, kind, proto)
        try:
            for option in options or ():
                sock.setsockopt(*option)
            sock.settimeout(timeout)
            if attach_current(sock, connected=False):
                raise ConnectionAbortedError("the exchange was cut before it connected")
            if source_address is not None:
                sock.bind(source_address)
            sock.connect(where)
            attach_current(sock)  # connected: a request may go out on it from here on
            return sock
        except OSError as exc:
            sock.close()
            error = exc
    raise error if error is not None else OSError(f"no address found for {host}")


def _addresses(host: str, port: int, timeout: float | None) -> list[tuple[Any, ...]]:
    """`host`'s addresses: looked up under the current watch (by its deadline, or `timeout` from
    now when that comes first), or, without a watch, in this thread.
    """
    watch = current()
    if watch is None:
        return socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    end = watch.at
    if timeout is not None:
        step = time.monotonic() + timeout
        end = step if end is None else min(end, step)
    return watch._dog.resolver.resolve(host, port, end, lambda: watch.fired is not None)
