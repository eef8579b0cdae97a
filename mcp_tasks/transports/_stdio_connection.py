"""The stdio server's pipes and the threads that own them, for `StdioTransport` (see
`transports.stdio` for what each thread does and why nothing blocks a caller past its deadline).

A module of its own because the connection (the writer, the reader and its routing, the
delivery thread, the stderr drain, the bounded end) is one machine, apart from the `Transport`
API the transport gives the client over it.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import queue
import signal
import subprocess
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from mcp_tasks._clock import Deadline, wait_sliced
from mcp_tasks._errors import McpError, RequestTimeout, TransportError
from mcp_tasks._redact import redact_text
from mcp_tasks._threads import join_all, start_thread
from mcp_tasks._wire import dumps, loads, subscription_id, valid_id
from mcp_tasks.transports._base import CLOSED, Message, QueueStream
from mcp_tasks.transports._process import EXIT_GRACE, exit_code, exited, signal_group

__all__ = ["CLOSE_TIMEOUT", "MAX_LINE", "STDERR_TAIL", "Connection", "Line", "Pending"]

log = logging.getLogger("mcp_tasks")
server_log = logging.getLogger("mcp_tasks.server_stderr")

CLOSE_TIMEOUT = 5.0
"""How long `close()` waits for the threads once the server's process group is gone."""

MAX_LINE = 64 * 1024 * 1024
"""The longest line of server output taken; a longer one is skipped (and logged)."""

STDERR_TAIL = 20
"""How many of the server's last stderr lines an exit error carries."""


class Pending:
    """One request waiting for its response (or the connection's failure)."""

    __slots__ = ("done", "error", "response")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.response: Message | None = None
        self.error: McpError | None = None


class Line:
    """One line for the writer: queued, then written (or failed), unless abandoned first."""

    __slots__ = ("data", "done", "error", "lock", "started")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.done = threading.Event()
        self.error: TransportError | None = None
        self.lock = threading.Lock()
        self.started: bool | None = False  # None: abandoned before the writer took it

    def take(self) -> bool:
        """The writer takes the line; False if its sender gave up on it first."""
        with self.lock:
            if self.started is None:
                return False
            self.started = True
            return True

    def abandon(self) -> bool:
        """The sender gives up; True if the writer had already begun to write it."""
        with self.lock:
            if self.started is False:
                self.started = None
            return self.started is True


_STOP = object()


class Connection:
    """The process, its pipes and its threads. Holds no reference to the transport, so an unclosed
    transport can be collected (and its server ended) while these threads run.
    """

    def __init__(self, proc: subprocess.Popen[bytes], deliver: Callable[[Message], Message | None] | None) -> None:
        self.proc = proc
        self.deliver = deliver
        self.lock = threading.Lock()
        self.pending: dict[object, Pending] = {}
        self.streams: dict[object, QueueStream] = {}
        self.failure: str | None = None
        self.closed = False
        self.lines: queue.Queue[Any] = queue.Queue()
        self.inbox: queue.Queue[Any] = queue.Queue()
        self.tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)
        pid = proc.pid
        self.writer = start_thread(f"stdio-writer-{pid}", self._write_lines)
        self.reader = start_thread(f"stdio-reader-{pid}", self._read_stdout)
        self.drainer = start_thread(f"stdio-stderr-{pid}", self._drain_stderr) if proc.stderr is not None else None
        self.deliverer: threading.Thread | None = None

    # -- writing ------------------------------------------------------------------------------

    def queue(self, message: Message) -> Line:
        """Queue `message` for the writer (a ValueError if it is not JSON the wire can carry)."""
        line = Line(dumps(message) + b"\n")
        self.put(line)
        return line

    def put(self, line: Line) -> None:
        """Queue `line` for the writer. The writer may take it before this returns, and a
        KeyboardInterrupt may land here after that: a caller that must know whether its line went
        out makes the line first and holds it across this call (then `Line.abandon` tells).
        """
        with self.lock:
            self.raise_if_failed()
            self.lines.put(line)

    @staticmethod
    def written(line: Line, deadline: Deadline) -> None:
        """Wait until the writer wrote `line`: `RequestTimeout` when the deadline passes first,
        `TransportError` when it could not be written.
        """
        if not wait_sliced(line.done, deadline.remaining()):
            raise RequestTimeout(deadline.timeout or 0.0, "Request timed out: the server is not reading its input")
        if line.error is not None:
            raise line.error

    def post(self, message: Message) -> None:
        """Queue `message` without waiting (a cancellation, a response to the server)."""
        try:
            self.queue(message)
        except (McpError, ValueError) as exc:
            log.debug("could not send %s to the server: %s", message.get("method", "a response"), exc)

    def _write_lines(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        broken: TransportError | None = None
        try:
            while True:
                line = self.lines.get()
                if line is _STOP:
                    return
                if not line.take():
                    continue
                if broken is None:
                    try:
                        stdin.write(line.data)
                        stdin.flush()
                    except (OSError, ValueError) as exc:
                        broken = TransportError(f"cannot write to the server: {exc}", cause=exc)
                line.error = broken
                line.done.set()
        finally:
            with contextlib.suppress(OSError, ValueError):
                stdin.close()  # the server reads the end of its input

    # -- reading ------------------------------------------------------------------------------

    def _read_stdout(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        skipping = False
        try:
            while True:
                line = stdout.readline(MAX_LINE)
                if not line:
                    break
                if not line.endswith(b"\n") and len(line) >= MAX_LINE:
                    if not skipping:
                        log.warning("skipped a line of server stdout longer than %d bytes", MAX_LINE)
                    skipping = True
                    continue
                if skipping:
                    skipping = False
                    continue
                line = line.strip()
                if line:
                    self._take_line(line)
        except (OSError, ValueError):
            pass  # the pipe broke
        code = exit_code(self.proc)
        if self.drainer is not None:
            self.drainer.join(EXIT_GRACE)  # its last lines belong in the error
        reason = "the server closed its output" if code is None else f"the server exited (exit code {code})"
        with self.lock:
            tail = list(self.tail)
        if tail:
            reason += "; its last stderr lines:\n" + "\n".join(tail)
        self.fail(reason)

    def _take_line(self, line: bytes) -> None:
        """Route one line; whatever it holds, the reader goes on."""
        try:
            message = loads(line)
        except ValueError:
            log.warning("skipped a line of server stdout that is not JSON (%d bytes)", len(line))
            return
        except Exception as exc:  # nested too deep, too big: one bad line ends nothing
            log.warning("skipped a line of server stdout that cannot be decoded (%d bytes): %r", len(line), exc)
            return
        if not isinstance(message, dict):
            log.warning("skipped a line of server stdout that is not a JSON object")
            return
        try:
            self._route(message)
        except Exception:
            log.exception("could not route a message from the server")

    def _route(self, message: Message) -> None:
        if "method" in message:
            if "id" in message:
                self._hand_over(message)
            else:
                self._route_notification(message)
            return
        key = message.get("id")
        with self.lock:
            pending = self.pending.pop(key, None) if valid_id(key) else None
            stream = self.streams.pop(key, None) if pending is None and valid_id(key) else None
        if pending is not None:
            pending.response = message
            pending.done.set()
        elif stream is not None:
            stream.feed(message)
            stream.end()
        else:
            log.debug("dropped a response to an unknown or abandoned request id")

    def _route_notification(self, message: Message) -> None:
        params = message.get("params")
        key: object = subscription_id(params)
        ending = message.get("method") == "notifications/cancelled" and isinstance(params, dict)
        if ending:
            assert isinstance(params, dict)
            key = params.get("requestId")
        with self.lock:
            if not valid_id(key):
                stream = None
            elif ending:
                stream = self.streams.pop(key, None)
            else:
                stream = self.streams.get(key)
        if stream is not None:
            stream.feed(message)
            if ending:
                stream.end()
        else:
            self._hand_over(message)

    # -- what the server sends of its own accord ------------------------------------------------

    def _hand_over(self, message: Message) -> None:
        """Give a server's request or notification to the delivery thread, in arrival order."""
        with self.lock:
            if self.closed:
                return
            if self.deliverer is None:
                self.deliverer = start_thread(f"stdio-deliver-{self.proc.pid}", self._deliver_all)
            self.inbox.put(message)

    def _deliver_all(self) -> None:
        while True:
            message = self.inbox.get()
            if message is _STOP:
                return
            deliver = self.deliver
            try:
                response = deliver(message) if deliver is not None else None
            except Exception:
                log.exception("delivering a server %s failed", message.get("method"))
                continue
            if response is not None and "id" in message:
                self.post(response)

    # -- stderr -------------------------------------------------------------------------------

    def _drain_stderr(self) -> None:
        stderr = self.proc.stderr
        assert stderr is not None
        try:
            while True:
                raw = stderr.readline(MAX_LINE)
                if not raw:
                    return
                line = redact_text(raw.decode(errors="replace").rstrip())
                with self.lock:
                    self.tail.append(line)
                server_log.debug("%s", line)
        except (OSError, ValueError):
            pass

    # -- the end ------------------------------------------------------------------------------

    def raise_if_failed(self) -> None:
        if self.failure is not None:
            raise TransportError(self.failure)

    def fail(self, reason: str) -> None:
        """The connection is over: fail every pending request and stream with `reason`."""
        with self.lock:
            if self.failure is None:
                self.failure = reason
            reason = self.failure
            pending, self.pending = self.pending, {}
            streams, self.streams = self.streams, {}
        for entry in pending.values():
            entry.error = TransportError(reason)
            entry.done.set()
        for stream in streams.values():
            stream.end(TransportError(reason))

    def close(self, exit_grace: float = EXIT_GRACE) -> None:
        """End of input, then SIGTERM and SIGKILL to the process group as needed, each after
        `exit_grace` seconds; bounded.
        """
        with self.lock:
            if self.closed:
                return
            self.closed = True
            self.inbox.put(_STOP)
            self.lines.put(_STOP)
        self.fail(CLOSED)
        grace = Deadline(exit_grace)
        self.writer.join(grace.remaining())
        if not exited(self.proc, grace.remaining()):
            signal_group(self.proc, signal.SIGTERM)
            if not exited(self.proc, exit_grace):
                signal_group(self.proc, signal.SIGKILL)
                exited(self.proc, CLOSE_TIMEOUT)
        # The server is gone, but what it started may still hold the pipes: end its group too.
        readers = [t for t in (self.reader, self.drainer) if t is not None]
        if not _joined(readers, exit_grace):
            signal_group(self.proc, signal.SIGTERM)
            if not _joined(readers, exit_grace):
                signal_group(self.proc, signal.SIGKILL)
        threads = [t for t in (self.writer, self.reader, self.drainer, self.deliverer) if t is not None]
        join_all(threads, CLOSE_TIMEOUT)
        # A pipe is closed only once no thread reads it (closing under a reader can block).
        for pipe, thread in ((self.proc.stdout, self.reader), (self.proc.stderr, self.drainer)):
            if pipe is not None and thread is not None and not thread.is_alive():
                with contextlib.suppress(OSError):
                    pipe.close()

    def abandon(self) -> None:
        """The transport was collected (or the interpreter is exiting) without `close()`."""
        if self.closed:
            return
        warnings.warn(
            f"unclosed stdio transport: server pid {self.proc.pid} is still running; ending it",
            ResourceWarning,
            stacklevel=1,
        )
        self.close()


def _joined(threads: Sequence[threading.Thread], timeout: float) -> bool:
    """Join `threads` within one `timeout`; whether all ended (quietly: not ending is expected)."""
    end = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(end - time.monotonic(), 0.0))
    return not any(thread.is_alive() for thread in threads)
