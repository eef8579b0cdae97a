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
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import queue
import signal
import subprocess
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from mcp_tasks._clock import Deadline, wait_sliced
from mcp_tasks._errors import McpError, RequestTimeout, TransportError
from mcp_tasks._redact import redact_text
from mcp_tasks._threads import join_all, start_thread
from mcp_tasks._wire import dumps, loads, notification, subscription_id, valid_id
from mcp_tasks.transports._base import Message, QueueStream, RequestId, Sent, Stream, Transport, request_ids

__all__ = ["StdioTransport"]

log = logging.getLogger("mcp_tasks")
server_log = logging.getLogger("mcp_tasks.server_stderr")

CLOSE_TIMEOUT = 5.0
"""How long `close()` waits for the threads once the server's process group is gone."""

NOTIFY_TIMEOUT = 10.0
"""How long a notification sent without a deadline may wait for the server to read it."""

MAX_LINE = 64 * 1024 * 1024
"""The longest line of server output taken; a longer one is skipped (and logged)."""

STDERR_TAIL = 20
"""How many of the server's last stderr lines an exit error carries."""

_EXIT_GRACE = 2.0
_POSIX = os.name == "posix"


class _Pending:
    __slots__ = ("done", "error", "response")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.response: Message | None = None
        self.error: McpError | None = None


class _Line:
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


class _Connection:
    """The process, its pipes and its threads. Holds no reference to the transport, so an unclosed
    transport can be collected (and its server ended) while these threads run.
    """

    def __init__(self, proc: subprocess.Popen[bytes], deliver: Callable[[Message], Message | None] | None) -> None:
        self.proc = proc
        self.deliver = deliver
        self.lock = threading.Lock()
        self.pending: dict[object, _Pending] = {}
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

    def queue(self, message: Message) -> _Line:
        """Queue `message` for the writer (a ValueError if it is not JSON the wire can carry)."""
        line = _Line(dumps(message) + b"\n")
        self.put(line)
        return line

    def put(self, line: _Line) -> None:
        """Queue `line` for the writer. The writer may take it before this returns, and a
        KeyboardInterrupt may land here after that: a caller that must know whether its line went
        out makes the line first and holds it across this call (then `_Line.abandon` tells).
        """
        with self.lock:
            self.raise_if_failed()
            self.lines.put(line)

    @staticmethod
    def written(line: _Line, deadline: Deadline) -> None:
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
        code = self._wait_exit()
        if self.drainer is not None:
            self.drainer.join(_EXIT_GRACE)  # its last lines belong in the error
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

    def _wait_exit(self) -> int | None:
        try:
            return self.proc.wait(_EXIT_GRACE)
        except subprocess.TimeoutExpired:
            return None

    def close(self, exit_grace: float = _EXIT_GRACE) -> None:
        """End of input, then SIGTERM and SIGKILL to the process group as needed, each after
        `exit_grace` seconds; bounded.
        """
        with self.lock:
            if self.closed:
                return
            self.closed = True
            self.inbox.put(_STOP)
            self.lines.put(_STOP)
        self.fail("the client is closed")
        grace = Deadline(exit_grace)
        self.writer.join(grace.remaining())
        if not self._exited(grace.remaining()):
            self._signal(signal.SIGTERM)
            if not self._exited(exit_grace):
                self._signal(signal.SIGKILL)
                self._exited(CLOSE_TIMEOUT)
        # The server is gone, but what it started may still hold the pipes: end its group too.
        readers = [t for t in (self.reader, self.drainer) if t is not None]
        if not _joined(readers, exit_grace):
            self._signal(signal.SIGTERM)
            if not _joined(readers, exit_grace):
                self._signal(signal.SIGKILL)
        threads = [t for t in (self.writer, self.reader, self.drainer, self.deliverer) if t is not None]
        join_all(threads, CLOSE_TIMEOUT)
        # A pipe is closed only once no thread reads it (closing under a reader can block).
        for pipe, thread in ((self.proc.stdout, self.reader), (self.proc.stderr, self.drainer)):
            if pipe is not None and thread is not None and not thread.is_alive():
                with contextlib.suppress(OSError):
                    pipe.close()

    def _exited(self, timeout: float | None) -> bool:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def _signal(self, signum: int) -> None:
        """Send `signum` to the server's whole process group (to the server alone off POSIX)."""
        try:
            if _POSIX:
                os.killpg(self.proc.pid, signum)
            elif self.proc.poll() is None:
                if signum == signal.SIGTERM:
                    self.proc.terminate()
                else:
                    self.proc.kill()
        except (ProcessLookupError, PermissionError):
            pass  # nothing left in the group

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
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE if stderr is None else stderr,
                env=None if env is None else dict(env),
                cwd=cwd,
                start_new_session=_POSIX,
                creationflags=0 if _POSIX else getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
            )
        except OSError as exc:
            raise TransportError(f"cannot start the server {argv[0]!r}: {exc}", cause=exc) from exc
        me = weakref.ref(self)

        def deliver(message: Message) -> Message | None:
            transport = me()
            return transport.deliver(message) if transport is not None else None

        self._proc = proc
        self._conn = _Connection(proc, deliver)
        self._finalizer = weakref.finalize(self, self._conn.abandon)

    # -- the client's side -------------------------------------------------------------------

    def _request(self, message: Message, deadline: Deadline, headers: Mapping[str, str] | None, sent: Sent) -> Message:
        """See `Transport.request`: an abandoned request leaves the pending map, and its line is
        dropped if the writer had not begun it (then it never reaches the server).
        """
        conn = self._conn
        key = message["id"]
        deadline.step()
        pending = _Pending()
        with conn.lock:
            conn.raise_if_failed()
            conn.pending[key] = pending
        line: _Line | None = None
        try:
            line = _Line(dumps(message) + b"\n")
            conn.put(line)
            try:
                conn.written(line, deadline)
            except TransportError:
                # Usually the server died: the reader's error (with its stderr) says more than EPIPE.
                if wait_sliced(pending.done, deadline.bound(_EXIT_GRACE)) and pending.error is not None:
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

    def _forget(self, key: object, pending: _Pending) -> bool:
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
        line: _Line | None = None
        try:
            line = _Line(dumps(message) + b"\n")
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

    exit_grace: float = _EXIT_GRACE
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
