"""What is in flight on one HTTP transport: the watches of exchanges under way and the listen
streams open. `close` cuts them all at once (their sockets shut down), so a request or a stream
being opened to a server gone dark ends with the one closed error; an exchange either is cut or
never begins (both sides take one lock).
"""

from __future__ import annotations

import threading

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import McpError
from mcp_tasks.transports._answers import HttpStream
from mcp_tasks.transports._base import closed_error
from mcp_tasks.transports._watchdog import Watch, Watchdog

__all__ = ["InFlight"]


class InFlight:
    """The exchanges and streams of one transport, and whether it was closed."""

    def __init__(self, watchdog: Watchdog) -> None:
        self._watchdog = watchdog
        self._exchanges: set[Watch] = set()
        self._streams: set[HttpStream] = set()
        self._lock = threading.Lock()
        self.closed = False

    def begin(self, deadline: Deadline | None) -> Watch:
        """The watch of one exchange, which `close` cuts; the closed error once closed."""
        watch = self._watchdog.watch(deadline)
        with self._lock:
            if not self.closed:
                self._exchanges.add(watch)
                return watch
        watch.close()
        raise closed_error()

    def end(self, watch: Watch) -> None:
        """The exchange of `watch` is over (`close` no longer cuts it)."""
        with self._lock:
            self._exchanges.discard(watch)
        watch.close()

    def keep_stream(self, watch: Watch, stream: HttpStream) -> None:
        """The exchange of `watch` opened `stream`, which `close` closes from now on (closing it
        shuts its socket down). Closed meanwhile: the stream is closed, and the closed error raised.
        """
        with self._lock:
            closed = self.closed
            self._exchanges.discard(watch)
            if not closed:
                self._streams.add(stream)
        if closed:  # outside the lock: closing the stream forgets it, under the lock
            stream.close()
            raise closed_error()

    def forget(self, stream: HttpStream) -> None:
        """A stream closed: nothing to close any more."""
        with self._lock:
            self._streams.discard(stream)

    def closed_or(self, exc: McpError) -> McpError:
        """`exc`, or the closed error when `close` is why the exchange failed."""
        return closed_error(exc) if self.closed else exc

    def close(self) -> bool:
        """Mark the transport closed; False if it already was. The caller then `cut`s."""
        with self._lock:
            if self.closed:
                return False
            self.closed = True
            return True

    def cut(self) -> None:
        """Shut down every exchange in flight and close every open stream."""
        with self._lock:
            exchanges, streams = list(self._exchanges), list(self._streams)
        for watch in exchanges:
            watch.fire()
        for stream in streams:
            stream.close()
