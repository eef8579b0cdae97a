"""`McpError`, the one root of the errors, and the failures on a request's way: the connection
(`TransportError`, `RequestTimeout`, `SessionExpired`), the protocol (`ProtocolError`) and
authorization (`OAuthError`). The hierarchy as a whole is drawn in `mcp_tasks._errors`.
"""

from __future__ import annotations

from typing import Any

from mcp_tasks._errors._codes import (
    AUTHORIZATION_FAILED,
    CONNECTION_CLOSED,
    KINDS,
    PROTOCOL_VIOLATION,
    REQUEST_TIMEOUT,
    kind_for_code,
)
from mcp_tasks._errors._display import Displayed
from mcp_tasks._printable import printable

__all__ = [
    "McpError",
    "OAuthError",
    "ProtocolError",
    "RequestTimeout",
    "SessionExpired",
    "TransportError",
    "millis",
    "seconds",
]


class McpError(Displayed, Exception):
    """An MCP request failed: a JSON-RPC error from the server, or one the client made.

    `kind` is one of json_rpc, protocol, transport, execution, authorization, extension; for an
    error from the wire it follows from the code. `cause` says more for errors this library makes
    (a tuple such as ``("timeout", status)``); it is never sent anywhere.
    """

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        kind: str | None = None,
        cause: Any = None,
    ) -> None:
        super().__init__(message)
        if kind is not None and kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        self.code = code
        self.message = message
        self.data = data
        self.kind = kind if kind is not None else kind_for_code(code)
        self.cause = cause

    def __str__(self) -> str:
        r"""`message`, its control and formatting characters shown as escapes (``\x1b``, ``\r``)."""
        return printable(self.message)

    @classmethod
    def from_wire(cls, error: object) -> McpError:
        """Decode a JSON-RPC error object; a malformed one is itself a `ProtocolError`."""
        if (
            isinstance(error, dict)
            and isinstance(error.get("code"), int)
            and not isinstance(error.get("code"), bool)
            and isinstance(error.get("message"), str)
        ):
            return cls(error["code"], error["message"], error.get("data"))
        return ProtocolError("The server sent a malformed JSON-RPC error object", cause=error)

    def to_wire(self) -> dict[str, Any]:
        """The JSON-RPC error object for this error (kind and cause stay local)."""
        wire: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            wire["data"] = self.data
        return wire


class TransportError(McpError, ConnectionError):
    """The connection to the server failed: it exited, a socket closed, a stream was cut.

    `retryable` says the failure is transient (a reset or refused connection, a dropped keep-alive
    connection, HTTP 429/502/503/504); `sent` is False only when the request provably never
    reached the server (the connection was refused), which makes even a non-idempotent request
    safe to send again; `retry_after` is the server's ``Retry-After`` in seconds, if it gave one.
    """

    def __init__(
        self,
        message: str,
        *,
        cause: Any = None,
        data: Any = None,
        retryable: bool = False,
        sent: bool = True,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(CONNECTION_CLOSED, message, data, "transport", cause)
        self.retryable = retryable
        self.sent = sent
        self.retry_after = retry_after


class RequestTimeout(TransportError, TimeoutError):
    """A request got no answer within its timeout (-32001, kind transport, data ``timeoutMs``).

    A `TransportError` (every transport-kind error is one) and a `TimeoutError`; never retried.
    """

    def __init__(self, timeout: float, message: str | None = None) -> None:
        super().__init__(message or f"No answer within {seconds(timeout)}", data={"timeoutMs": millis(timeout)})
        self.code = REQUEST_TIMEOUT
        self.cause = "timeout"


class SessionExpired(TransportError):
    """The server answered 404 to a request that carried the 2025-era session id: the session is
    gone, and the client sets up a new one (once) before it sends the request again.
    """

    def __init__(self) -> None:
        super().__init__("The server expired the session (HTTP 404)", data={"status": 404})


class ProtocolError(McpError):
    """The server broke the protocol; retrying will not help.

    A malformed message or task, an answer to another request, an unknown resultType: kind
    ``protocol``, code `PROTOCOL_VIOLATION` unless given; `cause` is what the server sent. Never a
    `TransportError`, so the `Retry` policy never sends the request again.
    """

    def __init__(self, message: str, *, cause: Any = None, data: Any = None, code: int = PROTOCOL_VIOLATION) -> None:
        super().__init__(code, message, data, "protocol", cause)


class OAuthError(McpError):
    """Authorization failed: discovery, registration, the user's consent or a token request.

    Its message names what was wrong (a URL, a mismatched issuer, the server's ``error``) and never
    a token, code, verifier or secret. Kind ``authorization``, code `AUTHORIZATION_FAILED`; `data`
    may hold the server's OAuth ``error`` code.
    """

    def __init__(self, message: str, *, data: Any = None) -> None:
        super().__init__(AUTHORIZATION_FAILED, message, data, "authorization")


def seconds(value: float) -> str:
    """A duration for a message: ``1.5 s``, ``90 s``, ``0.2 s`` (to the hundredth)."""
    return f"{round(value, 2) if value >= 0.1 else value:.6g} s"


def millis(value: float) -> int:
    """A duration in whole milliseconds, as the wire carries it (``timeoutMs``)."""
    return round(value * 1000)
