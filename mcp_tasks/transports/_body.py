"""Reading an HTTP answer's body under the exchange's deadline: decoded (gzip, deflate), capped,
and its connection back in the pool only after a clean end.

The deadline is kept by the exchange's `Watch` (see `transports._watchdog`): at the deadline the
socket is shut down, a blocked read wakes, and whatever it returns (an error, or an empty read
that would look like the body's end) is a `RequestTimeout`. A connection goes back to the pool
only when its body was read to its end, no read failed, the watch never cut it, and the server
keeps it open: anything else (a timeout, a body half read, an SSE stream left open past the
drain) closes it, so the next request, maybe another thread's, never reads old bytes.
"""

from __future__ import annotations

import http.client
import logging
import socket
import zlib
from collections.abc import Callable
from typing import Any, Final

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import McpError, RequestTimeout, TransportError
from mcp_tasks._wire import malformed
from mcp_tasks.transports._failures import describe
from mcp_tasks.transports._plumbing import http_response, socket_of
from mcp_tasks.transports._watchdog import Watch

__all__ = ["Response"]

log = logging.getLogger("mcp_tasks")

READ_SIZE: Final = 65536
_INFLATE_STEP: Final = 4 * 1024 * 1024


class Response:
    """One HTTP response whose body this transport reads itself, from the socket, under `watch`."""

    def __init__(self, fp: http.client.HTTPResponse, where: str, watch: Watch, release: Callable[[bool], None]) -> None:
        self.where = where
        self.watch = watch
        self.status: int = fp.status
        self.reason: str = fp.reason or ""
        self.headers: Any = fp.headers
        self.event_stream = _media_type(fp.headers.get("Content-Type", "")) == "text/event-stream"
        self._fp = fp  # read with read1 (what one receive brings)
        self._release = release  # True: the connection may be kept; False: it must be closed
        sock = watch.sock
        if sock is None:  # a connection a user's own adapter made: watch its socket from here on
            sock = socket_of(fp)
            watch.attach(sock)
        self.sock: socket.socket | None = sock
        self._inflate = _decompressor(fp.headers.get("Content-Encoding", ""), where)
        self.ended = False  # no more reads: the body's end, or a failure (then `_broken` too)
        self._broken = False
        self._finished = False
        self._body: bytes | None = None

    @classmethod
    def of(cls, raw: Any, where: str, watch: Watch) -> Response:
        """The response under a urllib3 response (`Session.request`, a GET, a DELETE)."""
        fp = http_response(raw)

        def release(keep: bool) -> None:
            try:
                if not keep:
                    raw.close()
                    conn = getattr(raw, "connection", None)  # urllib3 keeps it for release_conn
                    if conn is not None:
                        conn.close()
            finally:
                raw.release_conn()

        return cls(fp, where, watch, release)

    def chunk(self, deadline: Deadline | None, *, keep_timeout: bool = False) -> bytes:
        """The next decoded bytes of the body, b"" at its end. Without a deadline a read may
        block for ever (a listen stream), unless `keep_timeout` leaves the socket's timeout to
        whoever set it. Raises `RequestTimeout`, or a retryable `TransportError` when the
        connection breaks or the body ends early.
        """
        inflate = self._inflate
        while True:
            if inflate is not None and inflate.unconsumed_tail:
                data = self._inflated(inflate.unconsumed_tail)
                if data:
                    return data
                continue
            if self.ended:
                return b""
            data = self._receive(deadline, keep_timeout)
            if not data:
                self.ended = True
                left = self._fp.length
                if left:
                    self._broken = True
                    raise TransportError(f"the response from {self.where} ended {left} bytes early", retryable=True)
                return inflate.flush() if inflate is not None else b""
            if inflate is None:
                if self._fp.length == 0:
                    self.ended = True  # the whole Content-Length came: no read left to make
                return data
            data = self._inflated(data)
            if data:
                return data

    def _receive(self, deadline: Deadline | None, keep_timeout: bool) -> bytes:
        if deadline is None:
            if self.sock is not None and not keep_timeout:
                self.sock.settimeout(None)
        elif deadline.expired():
            self.ended = self._broken = True
            raise RequestTimeout(_timeout(deadline))
        try:
            data: bytes = self._fp.read1(READ_SIZE)
        except (http.client.HTTPException, OSError, ValueError, AttributeError) as exc:
            self.ended = self._broken = True
            raise self._cut(deadline) or (
                RequestTimeout(_timeout(deadline))
                if isinstance(exc, TimeoutError)
                else TransportError(
                    f"the connection to {self.where} broke in a response: {describe(exc)}", cause=exc, retryable=True
                )
            ) from exc
        if self.watch.fired is not None:  # the read may have returned b"" for a socket shut down
            self.ended = self._broken = True
            raise self._cut(deadline) or RequestTimeout(_timeout(deadline))
        return data

    def _cut(self, deadline: Deadline | None) -> McpError | None:
        """The error for a read the watch cut (None when it was not cut)."""
        if self.watch.fired is None:
            return None
        if self.watch.timed_out:
            return RequestTimeout(_timeout(deadline))
        return TransportError(f"the response from {self.where} was cut")

    def _inflated(self, data: bytes) -> bytes:
        """Decompress at most `_INFLATE_STEP` bytes of output (the rest waits in the tail)."""
        try:
            out: bytes = self._inflate.decompress(data, _INFLATE_STEP)
        except zlib.error as exc:
            self.ended = self._broken = True
            raise malformed(f"The server sent a body from {self.where} that does not decompress") from exc
        return out

    def read_all(self, deadline: Deadline, cap: int) -> bytes:
        """The whole (decoded) body, within the deadline and at most `cap` bytes (read once)."""
        if self._body is not None:
            return self._body
        parts: list[bytes] = []
        size = 0
        while chunk := self.chunk(deadline):
            size += len(chunk)
            if size > cap:
                self._broken = True
                raise malformed(f"The server sent a body from {self.where} larger than {cap} bytes")
            parts.append(chunk)
        self._body = b"".join(parts)
        return self._body

    def drain(self, deadline: Deadline) -> None:
        """Read what is left of the body, within `deadline`, to keep the connection; give up
        quietly when it takes longer or is long (then `finish` closes the connection).
        """
        size = 0
        try:
            while chunk := self.chunk(deadline):
                size += len(chunk)
                if size > READ_SIZE:
                    return
        except McpError as exc:
            log.debug("not keeping a connection to %s after an SSE answer: %s", self.where, exc.message)

    def shutdown(self) -> None:
        """Wake a read blocked on this response's socket (from any thread)."""
        self.watch.fire()

    def finish(self) -> None:
        """Done with the response: its connection back in the pool when the body was read to its
        end and the server keeps it, otherwise closed. Idempotent.
        """
        if self._finished:
            return
        self._finished = True
        fp = self._fp
        cut = self.watch.detach(self.sock)  # from here on the watch never touches this socket
        keep = self.ended and not self._broken and not cut and not fp.will_close
        try:
            fp.close()  # its reader only: the connection's socket stays for the next request
            self._release(keep)
        except Exception as exc:  # the socket may be half shut already
            log.debug("closing a response from %s: %s", self.where, describe(exc))


def _timeout(deadline: Deadline | None) -> float:
    return deadline.timeout if deadline is not None and deadline.timeout else 0.0


def _media_type(content_type: str) -> str:
    return content_type.split(";")[0].strip().lower()


def _decompressor(encoding: str, where: str) -> Any:
    """A zlib decompressor for a Content-Encoding (None for identity)."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return _Deflate()
    raise malformed(f"The server sent a body from {where} in an encoding this client cannot read: {encoding}")


class _Deflate:
    """HTTP "deflate": zlib-wrapped as the RFC says, or raw deflate as some servers send it."""

    def __init__(self) -> None:
        self._inner: Any = None
        self._first = b""

    @property
    def unconsumed_tail(self) -> bytes:
        return self._inner.unconsumed_tail if self._inner is not None else b""

    def decompress(self, data: bytes, max_length: int = 0) -> bytes:
        if self._inner is None:
            self._first += data
            if len(self._first) < 2:
                return b""
            data, self._first = self._first, b""
            wrapped = (data[0] & 0x0F) == 8 and (data[0] * 256 + data[1]) % 31 == 0
            self._inner = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        out: bytes = self._inner.decompress(data, max_length)
        return out

    def flush(self) -> bytes:
        return self._inner.flush() if self._inner is not None else b""
