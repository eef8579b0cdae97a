"""The stdio transport: a server subprocess speaking newline-delimited JSON on stdin and stdout.

One reader thread routes each line of stdout: a response to the thread waiting for it, a listen
stream's messages to that stream. The server's stderr is always drained (logged at debug, or
written to a file the caller gives), so a chatty server never blocks. When the server dies, every
pending and later request fails at once.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import IO, Any

from mcp_tasks._clock import Deadline, wait_sliced
from mcp_tasks._errors import McpError, RequestTimeout, TransportError
from mcp_tasks._threads import join_all, start_thread
from mcp_tasks._wire import dumps, loads, notification, subscription_id, valid_id
from mcp_tasks.transports._base import Message, QueueStream, Stream, Transport

__all__ = ["StdioTransport"]

log = logging.getLogger("mcp_tasks")
server_log = logging.getLogger("mcp_tasks.server_stderr")

CLOSE_TIMEOUT = 5.0
_EXIT_GRACE = 2.0


class _Pending:
    __slots__ = ("done", "error", "response")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.response: Message | None = None
        self.error: McpError | None = None


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
        try:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE if stderr is None else stderr,
                env=None if env is None else dict(env),
                cwd=cwd,
            )
        except OSError as exc:
            raise TransportError(f"cannot start the server {argv[0]!r}: {exc}", cause=exc) from exc
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._pending: dict[object, _Pending] = {}
        self._streams: dict[object, QueueStream] = {}
        self._failure: str | None = None
        self._closed = False
        pid = self._proc.pid
        self._threads = [start_thread(f"stdio-reader-{pid}", self._read_stdout)]
        if stderr is None:
            self._threads.append(start_thread(f"stdio-stderr-{pid}", self._drain_stderr))

    # -- the client's side -------------------------------------------------------------------

    def _request(self, message: Message, deadline: Deadline, headers: Mapping[str, str] | None) -> Message:
        """See `Transport.request`. A timed-out request is cancelled with notifications/cancelled."""
        key = message["id"]
        deadline.step()
        pending = _Pending()
        with self._lock:
            self._raise_if_failed()
            self._pending[key] = pending
        try:
            self._write(message)
        except McpError:
            with self._lock:
                self._pending.pop(key, None)
            raise
        if not wait_sliced(pending.done, deadline.remaining()):
            with self._lock:
                self._pending.pop(key, None)
            if not pending.done.is_set():
                self._cancel(key, "the request timed out")
                raise RequestTimeout(deadline.timeout or 0.0)
        if pending.error is not None:
            raise pending.error
        assert pending.response is not None
        return pending.response

    def notify(self, message: Message, deadline: Deadline | None = None) -> None:
        """See `Transport.notify`."""
        with self._lock:
            self._raise_if_failed()
        self._write(message)

    def _open_stream(self, message: Message, deadline: Deadline) -> Stream:
        """See `Transport.open_stream`. Closing it sends notifications/cancelled for its id."""
        key = message["id"]

        def on_close() -> None:
            with self._lock:
                known = self._streams.pop(key, None) is not None
            if known:
                self._cancel(key, "closed by the client")

        stream = QueueStream(on_close)
        with self._lock:
            self._raise_if_failed()
            self._streams[key] = stream
        try:
            self._write(message)
        except McpError:
            with self._lock:
                self._streams.pop(key, None)
            raise
        return stream

    def close(self) -> None:
        """Close stdin, wait for the server to exit, then terminate and kill it; join threads."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._fail("the client is closed")
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(_EXIT_GRACE)
        except subprocess.TimeoutExpired:
            self._proc.terminate()
            try:
                self._proc.wait(_EXIT_GRACE)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        join_all(self._threads, CLOSE_TIMEOUT)
        for pipe in (self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                pipe.close()

    @property
    def pid(self) -> int:
        """The server process id."""
        return self._proc.pid

    # -- internals ----------------------------------------------------------------------------

    def _write(self, message: Message) -> None:
        line = dumps(message) + b"\n"
        stdin = self._proc.stdin
        assert stdin is not None
        with self._write_lock:
            try:
                stdin.write(line)
                stdin.flush()
            except (OSError, ValueError) as exc:
                raise TransportError(f"cannot write to the server: {exc}", cause=exc) from exc

    def _cancel(self, request_id: object, reason: str) -> None:
        try:
            self._write(notification("notifications/cancelled", {"requestId": request_id, "reason": reason}))
        except McpError:
            pass  # the server is gone; nothing left to cancel

    def _raise_if_failed(self) -> None:
        if self._failure is not None:
            raise TransportError(self._failure)

    def _fail(self, reason: str) -> None:
        """The connection is over: fail every pending request and stream with `reason`."""
        with self._lock:
            if self._failure is None:
                self._failure = reason
            pending, self._pending = self._pending, {}
            streams, self._streams = self._streams, {}
        for entry in pending.values():
            entry.error = TransportError(reason)
            entry.done.set()
        for stream in streams.values():
            stream.end(TransportError(reason))

    def _read_stdout(self) -> None:
        stdout = self._proc.stdout
        assert stdout is not None
        try:
            for line in stdout:
                line = line.strip()
                if line:
                    self._route_line(line)
        except (OSError, ValueError):
            pass  # the pipe was closed under us by close()
        code = self._wait_exit()
        self._fail("the server exited" + ("" if code is None else f" (exit code {code})"))

    def _wait_exit(self) -> int | None:
        try:
            return self._proc.wait(_EXIT_GRACE)
        except subprocess.TimeoutExpired:
            return None

    def _route_line(self, line: bytes) -> None:
        try:
            message = loads(line)
        except ValueError:
            log.warning("skipped a line of server stdout that is not JSON (%d bytes)", len(line))
            return
        if not isinstance(message, dict):
            log.warning("skipped a line of server stdout that is not a JSON object")
            return
        if "method" in message:
            if "id" in message:
                self._answer_server_request(message)
            else:
                self._route_notification(message)
            return
        key = message.get("id")
        with self._lock:
            pending = self._pending.pop(key, None) if valid_id(key) else None
            stream = self._streams.pop(key, None) if pending is None and valid_id(key) else None
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
        with self._lock:
            if not valid_id(key):
                stream = None
            elif ending:
                stream = self._streams.pop(key, None)
            else:
                stream = self._streams.get(key)
        if stream is not None:
            stream.feed(message)
            if ending:
                stream.end()
        else:
            self.deliver(message)

    def _answer_server_request(self, message: Message) -> None:
        response = self.deliver(message)
        if response is None:
            return
        try:
            self._write(response)
        except McpError:
            pass

    def _drain_stderr(self) -> None:
        stderr = self._proc.stderr
        assert stderr is not None
        try:
            for line in stderr:
                server_log.debug("%s", line.decode(errors="replace").rstrip())
        except (OSError, ValueError):
            pass

    def __repr__(self) -> str:
        return f"<StdioTransport pid={self._proc.pid} {'closed' if self._closed else 'open'}>"
