"""How an HTTP exchange failed, as the client's retry policy needs to know it: a timeout, a
connection never made (``sent=False``: safe to send again whatever the method), a dropped one or a
retryable status (``retryable``), an authorization refusal, or an error for good.

What a server sent appears in errors only as a short excerpt with its long tokens shortened
(`excerpt`): an answer may carry task ids and tokens, which are bearer credentials.
"""

from __future__ import annotations

import email.utils
import http.client
import socket
import ssl
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Final

import requests
import urllib3

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import AUTHORIZATION_FAILED, McpError, ProtocolError, RequestTimeout, TransportError
from mcp_tasks._redact import redact_text, shown_endpoint
from mcp_tasks._wire import loads

if TYPE_CHECKING:
    from mcp_tasks.transports._body import Response
    from mcp_tasks.transports._watchdog import Watch

__all__ = ["EXCERPT", "RETRY_STATUSES", "check_status", "describe", "excerpt", "failure", "rpc_error"]

RETRY_STATUSES: Final = frozenset({429, 502, 503, 504})

EXCERPT: Final = 120
"""The most characters of a server's bytes an error or a log record quotes."""


def excerpt(data: bytes | str) -> str:
    """A short, redacted excerpt of what a server sent, fit for an error or a log record."""
    text = data[: EXCERPT * 2].decode(errors="replace") if isinstance(data, bytes) else data[: EXCERPT * 2]
    text = redact_text(text.strip())
    return text if len(text) <= EXCERPT else text[: EXCERPT - 1] + "…"


def check_status(response: Response, deadline: Deadline, cap: int) -> None:
    """Raise for a status that carries no answer: auth refused, retryable, or an error without
    a JSON-RPC message.
    """
    status = response.status
    if status < 300:
        return
    try:
        body = response.read_all(deadline, cap)
    except McpError:
        body = b""
    rpc = rpc_error(body)
    where = response.where
    title = f"HTTP {status} {response.reason}".rstrip()
    if status in (401, 403):
        challenge = response.headers.get("WWW-Authenticate")
        if isinstance(rpc, ProtocolError):
            rpc = None  # a garbled body says nothing about the refusal
        said = f": {rpc.message}" if rpc is not None else ""
        asks = f"; it asks for {challenge}" if challenge else ""
        raise McpError(
            rpc.code if rpc is not None else AUTHORIZATION_FAILED,
            f"{title} from {where}{said}{asks}",
            {"status": status, "wwwAuthenticate": challenge},
            "authorization",
            cause=("http", status),
        )
    if status in RETRY_STATUSES:
        raise TransportError(
            f"{title} from {where}{_snippet(body)}",
            data={"status": status},
            retryable=True,
            retry_after=_retry_after(response.headers.get("Retry-After")),
        )
    if rpc is not None and status >= 400:
        return  # the JSON-RPC error in the body is the answer (kept for `_json_answer`)
    if 300 <= status < 400:
        location = response.headers.get("Location", "")
        raise TransportError(
            f"{title} from {where}: redirected to {shown_endpoint(location)}, which this client does not follow",
            data={"status": status},
        )
    raise TransportError(f"{title} from {where}{_snippet(body)}", data={"status": status})


def rpc_error(body: bytes) -> McpError | None:
    """The JSON-RPC error an error answer's body carries, if it carries one."""
    try:
        message = loads(body) if body else None
    except (ValueError, RecursionError):
        return None
    if isinstance(message, dict) and "error" in message:
        error = McpError.from_wire(message["error"])
        return error if error.kind != "transport" else None
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """An exception and what it wraps: requests' wrapped urllib3 errors, MaxRetryError's reason,
    ProtocolError's cause, and the __cause__/__context__ chain.
    """
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        reason = getattr(current, "reason", None)
        candidates = [reason, *current.args, current.__cause__, current.__context__]
        todo.extend(c for c in candidates if isinstance(c, BaseException))


def failure(exc: BaseException, deadline: Deadline, where: str, watch: Watch | None = None) -> McpError:
    """A failed exchange as the client sees it: a timeout (whatever broke, once the watchdog cut
    it), or a transport error the retry policy can judge (`sent=False` only when the connection
    could not be made).
    """
    if watch is not None and watch.fired is not None:
        if watch.timed_out:
            return RequestTimeout(deadline.timeout or 0.0)
        return TransportError(f"the request to {where} was cut", cause=exc)
    chain = list(_chain(exc))
    if any(isinstance(e, (urllib3.exceptions.NewConnectionError, ConnectionRefusedError)) for e in chain):
        # urllib3 raises NewConnectionError for a connect that failed (ConnectTimeoutError for one
        # that timed out): the request never left this machine.
        return TransportError(f"could not connect to {where}: {describe(exc)}", cause=exc, retryable=True, sent=False)
    if any(isinstance(e, (requests.Timeout, urllib3.exceptions.TimeoutError, socket.timeout)) for e in chain):
        return RequestTimeout(deadline.timeout or 0.0)
    if any(isinstance(e, (ssl.SSLError, requests.exceptions.SSLError, urllib3.exceptions.SSLError)) for e in chain):
        return TransportError(f"TLS failed with {where}: {describe(exc)}", cause=exc)
    dropped = (
        ConnectionResetError,
        ConnectionAbortedError,
        BrokenPipeError,
        http.client.RemoteDisconnected,
        http.client.IncompleteRead,
        urllib3.exceptions.ProtocolError,
    )
    if any(isinstance(e, dropped) for e in chain):
        return TransportError(f"the connection to {where} dropped: {describe(exc)}", cause=exc, retryable=True)
    return TransportError(f"HTTP request to {where} failed: {describe(exc)}", cause=exc)


def describe(exc: BaseException) -> str:
    """The innermost useful description of a failure (not urllib3's wrapper text), with what
    the server sent (a bad status line quotes it) cut to a redacted excerpt.
    """
    chain = list(_chain(exc))
    for e in reversed(chain):
        if isinstance(e, OSError | http.client.HTTPException):
            return f"{type(e).__name__}: {excerpt(str(e))}" if str(e) else type(e).__name__
    return f"{type(exc).__name__}: {excerpt(str(exc))}"


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds from now: delta-seconds or an HTTP-date; None when absent or bad."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max((when - datetime.now(timezone.utc)).total_seconds(), 0.0)


def _snippet(body: bytes) -> str:
    text = excerpt(body)
    return f": {text}" if text else ""
