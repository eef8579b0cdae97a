"""The stdio transport: a server subprocess speaking newline-delimited JSON on stdin and stdout.

Nothing here blocks a caller past its deadline, and `close()` is bounded whatever the server does:

- One writer thread owns stdin. A caller hands it a line and waits with its deadline, so a server
  that stopped reading costs the caller its timeout, not for ever. The writer alone closes stdin.
- One reader thread routes each line of stdout: a response to the thread waiting for it, a listen
  stream's messages to that stream. A line it cannot take (not JSON, nested too deep, too long) is
  logged and skipped; the reader lives on. Messages the server sends of its own accord go to the
  client (`Transport.deliver`) on one delivery thread, so a slow answer never stalls the reader.
- stderr is always drained (logged at debug, redacted, or written to a file the caller gives); its
  last lines go into the error when the server exits.
- The server runs in a session of its own (POSIX): the caller's Ctrl-C does not reach it (a task
  it runs goes on), and `close()` ends the whole process group — wrappers such as ``sh -c``, npx
  or uvx and the grandchildren they start — with SIGTERM, then SIGKILL.
- A transport that is never closed ends its server when it is garbage-collected or at interpreter
  exit, with a `ResourceWarning`, as `subprocess.Popen` warns.

This module is the `Transport` the client talks to; `transports._stdio_connection` holds the pipes
and the threads above, `transports._process` starts the server's process group and ends it.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping, Sequence
from typing import IO, Any

from mcp_tasks._clock import Deadline, wait_sliced
from mcp_tasks._errors import RequestTimeout, TransportError
from mcp_tasks._wire import dumps, notification
from mcp_tasks.transports._base import Message, QueueStream, RequestId, Sent, Stream, Transport, request_ids
from mcp_tasks.transports._process import EXIT_GRACE, spawn
from mcp_tasks.transports._stdio_connection import Connection, Line, Pending

__all__ = ["StdioTransport"]

NOTIFY_TIMEOUT = 10.0
"""How long a notification sent without a deadline may wait for the server to read it."""


class StdioTransport(Transport):
    """Runs `command` with `args` and talks to it over its stdin and stdout."""

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: IO[Any] | int | None = None,
    ) -> None:
        if isinstance(args, (str, bytes)):
            raise TypeError("args must be a sequence of strings, not one string")
        argv = [os.fspath(command), *(os.fspath(a) for a in args)]
        self.argv: tuple[str, ...] = tuple(argv)
        """The server's command line (a task store names a stdio task's endpoint with it)."""
        proc = spawn(argv, env=env, cwd=cwd, stderr=stderr)
        me = weakref.ref(self)

        def deliver(message: Message) -> Message | None:
            transport = me()
            return transport.deliver(message) if transport is not None else None

        self._proc = proc
        self._conn = Connection(proc, deliver)
        self._finalizer = weakref.finalize(self, self._conn.abandon)

    # -- the client's side -------------------------------------------------------------------

    def _request(self, message: Message, deadline: Deadline, headers: Mapping[str, str] | None, sent: Sent) -> Message:
        """See `Transport.request`: an abandoned request leaves the pending map, and its line is
        dropped if the writer had not begun it (then it never reaches the server).
        """
        conn = self._conn
        key = message["id"]
        deadline.step()
        pending = Pending()
        with conn.lock:
            conn.raise_if_failed()
            conn.pending[key] = pending
        line: Line | None = None
        try:
            line = Line(dumps(message) + b"\n")
            conn.put(line)
            try:
                conn.written(line, deadline)
            except TransportError:
                # Usually the server died: the reader's error (with its stderr) says more than EPIPE.
                if wait_sliced(pending.done, deadline.bound(EXIT_GRACE)) and pending.error is not None:
                    raise pending.error from None
                raise
            sent.reached = True
            if not wait_sliced(pending.done, deadline.remaining()) and self._forget(key, pending):
                raise RequestTimeout(deadline.timeout or 0.0)
            # Answered, or the reader took the entry to answer it (it sets `done` right after).
            wait_sliced(pending.done, None)
        except BaseException:
            self._forget(key, pending)
            if line is not None and line.abandon():
                sent.reached = True
            raise
        if pending.error is not None:
            raise pending.error
        assert pending.response is not None
        return pending.response

    def _forget(self, key: object, pending: Pending) -> bool:
        """Take `pending` out of the map; False when the reader (or a failure) took it first."""
        conn = self._conn
        with conn.lock:
            if conn.pending.get(key) is pending:
                del conn.pending[key]
                return True
            return False

    @property
    def in_flight(self) -> frozenset[RequestId]:
        """See `Transport.in_flight`."""
        with self._conn.lock:
            return request_ids(self._conn.pending)

    def notify(self, message: Message, deadline: Deadline | None = None) -> None:
        """See `Transport.notify`. Without a deadline, waits at most `NOTIFY_TIMEOUT`."""
        conn = self._conn
        line = conn.queue(message)
        try:
            conn.written(line, deadline if deadline is not None else Deadline(NOTIFY_TIMEOUT))
        except RequestTimeout:
            line.abandon()
            raise

    def _open_stream(self, message: Message, deadline: Deadline, sent: Sent) -> Stream:
        """See `Transport.open_stream`. Closing it sends notifications/cancelled for its id."""
        conn = self._conn
        key = message["id"]

        def on_close() -> None:
            with conn.lock:
                known = conn.streams.pop(key, None) is not None
            if known:
                self._cancel(key, "closed by the client")

        stream = QueueStream(on_close)
        with conn.lock:
            conn.raise_if_failed()
            conn.streams[key] = stream
        line: Line | None = None
        try:
            line = Line(dumps(message) + b"\n")
            conn.put(line)
            conn.written(line, deadline)
        except BaseException:
            with conn.lock:
                if conn.streams.get(key) is stream:
                    del conn.streams[key]
            if line is not None and line.abandon():
                sent.reached = True
            raise
        sent.reached = True
        return stream

    exit_grace: float = EXIT_GRACE
    """Seconds `close` gives the server to exit once its input is closed, and again after SIGTERM
    before SIGKILL (2.0). A program that must end at once (the command line on Ctrl-C) lowers it
    before closing."""

    def close(self) -> None:
        """End the server: close its input, give it `exit_grace`, then SIGTERM and SIGKILL its
        process group; join the threads. Bounded, whatever the server does. Idempotent.
        """
        self._finalizer.detach()
        self._conn.close(self.exit_grace)

    @property
    def pid(self) -> int:
        """The server process id (also its process group id on POSIX)."""
        return self._conn.proc.pid

    def _cancel(self, request_id: object, reason: str) -> None:
        self._send_cancel(notification("notifications/cancelled", {"requestId": request_id, "reason": reason}))

    def _send_cancel(self, message: Message) -> None:
        """See `Transport._send_cancel`: queued for the writer, which sends it after what is ahead of
        it; never waited for (the caller has given up already).
        """
        self._conn.post(message)

    def __repr__(self) -> str:
        return f"<StdioTransport pid={self.pid} {'closed' if self._conn.closed else 'open'}>"
