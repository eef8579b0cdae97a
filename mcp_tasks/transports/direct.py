"""The direct transport: an in-process server, with every message still serialized to JSON and
back, so what crosses is exactly what a wire would carry.

A request without a timeout runs in the caller's thread. A request with one runs in a worker
thread that the caller waits on, so a request that stalls is abandoned at its timeout: the server
sees it cancelled, as it would on a real wire.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from mcp_tasks._clock import Deadline, wait_sliced
from mcp_tasks._errors import RequestTimeout, TransportError
from mcp_tasks._threads import join_all, start_thread
from mcp_tasks._wire import dumps, loads
from mcp_tasks.server._exchange import Exchange
from mcp_tasks.transports._base import Message, QueueStream, Stream, Transport

__all__ = ["DirectTransport", "ServesMessages"]

log = logging.getLogger("mcp_tasks")

CLOSE_TIMEOUT = 5.0


class ServesMessages(Protocol):
    """What the direct transport needs of a server: one decoded message in, its response out."""

    def handle(self, message: dict[str, Any], exchange: Exchange) -> dict[str, Any] | None:
        """Handle one message; the response for a request, None for a notification."""


def _over_the_wire(message: Message) -> Message:
    copied: Message = loads(dumps(message))
    return copied


class DirectTransport(Transport):
    """Talks to a server object in this process."""

    def __init__(self, server: ServesMessages, *, principal: str | None = None) -> None:
        if not callable(getattr(server, "handle", None)):
            raise TypeError(f"a direct server needs a handle(message, exchange) method, got {server!r}")
        self._server = server
        self._principal = principal
        self._lock = threading.Lock()
        self._inflight: dict[threading.Thread, Exchange] = {}
        self._numbers = itertools.count(1)
        self._closed = False

    def _request(self, message: Message, deadline: Deadline, headers: Mapping[str, str] | None) -> Message:
        """See `Transport.request`."""
        self._check_open()
        timeout = deadline.step()
        wire = _over_the_wire(message)
        exchange = Exchange(principal=self._principal)
        if timeout is None:
            return self._answer(self._server.handle(wire, exchange))
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                outcome["response"] = self._server.handle(wire, exchange)
            except BaseException as exc:  # handed to the caller's thread
                outcome["error"] = exc
            finally:
                done.set()
                with self._lock:
                    self._inflight.pop(threading.current_thread(), None)

        with self._lock:
            self._check_open()
            thread = start_thread(f"direct-{next(self._numbers)}", run)
            self._inflight[thread] = exchange
        if not wait_sliced(done, timeout):
            exchange.cancel()
            raise RequestTimeout(deadline.timeout or timeout)
        if "error" in outcome:
            raise outcome["error"]
        return self._answer(outcome["response"])

    def notify(self, message: Message, deadline: Deadline | None = None) -> None:
        """See `Transport.notify`."""
        self._check_open()
        self._server.handle(_over_the_wire(message), Exchange(principal=self._principal))

    def _open_stream(self, message: Message, deadline: Deadline) -> Stream:
        """See `Transport.open_stream`. The server side runs in a worker thread until it ends."""
        self._check_open()
        wire = _over_the_wire(message)
        workers: list[threading.Thread] = []

        def on_close() -> None:
            exchange.cancel()
            join_all(workers, CLOSE_TIMEOUT)

        stream = QueueStream(on_close)
        exchange = Exchange(lambda m: stream.feed(_over_the_wire(m)), self._principal)

        def run() -> None:
            try:
                response = self._server.handle(wire, exchange)
                if response is not None:
                    stream.feed(_over_the_wire(response))
                stream.end()
            except BaseException as exc:
                stream.end(TransportError(f"the server failed while serving the stream: {exc!r}"))
            finally:
                with self._lock:
                    self._inflight.pop(threading.current_thread(), None)

        with self._lock:
            self._check_open()
            thread = start_thread(f"direct-listen-{next(self._numbers)}", run)
            self._inflight[thread] = exchange
            workers.append(thread)
        return stream

    def close(self) -> None:
        """Cancel what is still running on the server for this client and join its threads."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            inflight = dict(self._inflight)
        for exchange in inflight.values():
            exchange.cancel()
        join_all(list(inflight), CLOSE_TIMEOUT)

    def _answer(self, response: Message | None) -> Message:
        if response is None:
            raise TransportError("the server sent no response to the request")
        return _over_the_wire(response)

    def _check_open(self) -> None:
        if self._closed:
            raise TransportError("the client is closed")
