"""Errors: one root, `McpError`, that carries a JSON-RPC code, a kind and a cause.

```
McpError(Exception)                       code, message, data, kind, cause
 +- TransportError(McpError, ConnectionError)  the connection failed (-32000, kind transport)
 +- RequestTimeout(McpError, TimeoutError)     a request got no answer in time (-32001)
 +- TaskFailed                                 the task failed; code, message, data from its error
 +- TaskTimeout(McpError, TimeoutError)        a wait ran out of time (-32001); the task keeps running
TaskCancelled(Exception)                  the task was cancelled (an outcome, not a protocol error)
InputRequired(Exception)                  the task needs input this wait did not answer
InvalidStatus(ValueError)                 a task map from the wire that does not decode
InputError(Exception)                     raised by an input handler that cannot answer
```

Subclasses also derive from the builtin they resemble, so ``except TimeoutError`` catches a wait that
ran out of time. ``str(error)`` is the message alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp_tasks._redact import short_id

if TYPE_CHECKING:
    from mcp_tasks._status import Status

__all__ = [
    "CONNECTION_CLOSED",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CAPABILITY",
    "PARSE_ERROR",
    "REQUEST_TIMEOUT",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "InputError",
    "InputRequired",
    "InvalidStatus",
    "McpError",
    "RequestTimeout",
    "TaskCancelled",
    "TaskFailed",
    "TaskTimeout",
    "TransportError",
    "kind_for_code",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

KINDS = ("json_rpc", "protocol", "transport", "execution", "authorization", "extension")


def kind_for_code(code: int) -> str:
    """The kind of a JSON-RPC error that came from a peer, derived from its code."""
    if code in (PARSE_ERROR, INVALID_REQUEST):
        return "json_rpc"
    if code == INTERNAL_ERROR:
        return "execution"
    return "protocol"


class McpError(Exception):
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
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r}, kind={self.kind!r})"

    @classmethod
    def from_wire(cls, error: object) -> McpError:
        """Decode a JSON-RPC error object; a malformed one is itself a transport error."""
        if (
            isinstance(error, dict)
            and isinstance(error.get("code"), int)
            and not isinstance(error.get("code"), bool)
            and isinstance(error.get("message"), str)
        ):
            return cls(error["code"], error["message"], error.get("data"))
        return McpError(
            CONNECTION_CLOSED,
            "The server sent a malformed JSON-RPC error object",
            kind="transport",
            cause=error,
        )

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


class RequestTimeout(McpError, TimeoutError):
    """A request got no answer within its timeout (-32001, kind transport, data ``timeoutMs``)."""

    def __init__(self, timeout: float, message: str = "Request timed out") -> None:
        super().__init__(REQUEST_TIMEOUT, message, {"timeoutMs": _millis(timeout)}, "transport", "timeout")


class TaskFailed(McpError):
    """The task failed: `code`, `message` and `data` are those of its error; `.status` is the task."""

    def __init__(self, status: Status) -> None:
        error = status.error or {}
        code = error.get("code", INTERNAL_ERROR)
        message = error.get("message", "The task failed")
        super().__init__(code, message, error.get("data"), None, ("task_failed", status))
        self.status = status


class TaskTimeout(McpError, TimeoutError):
    """A wait ran out of time. The task keeps running on the server: wait again, or cancel it.

    `data` holds ``taskId`` and ``timeoutMs`` (the configured timeout); `.status` is the last status
    the wait read, or None when it read none.
    """

    def __init__(self, task_id: str, timeout: float, status: Status | None) -> None:
        super().__init__(
            REQUEST_TIMEOUT,
            "The task did not finish within the wait",
            {"taskId": task_id, "timeoutMs": _millis(timeout)},
            "transport",
            ("timeout", status),
        )
        self.status = status


class TaskCancelled(Exception):
    """The task was cancelled: an outcome, not a protocol error. `.status` is the task."""

    def __init__(self, status: Status) -> None:
        super().__init__(f"Task {short_id(status.task_id)} was cancelled")
        self.status = status


class InputRequired(Exception):
    """The task needs input this wait did not answer. `.status` lists it in `input_requests`."""

    def __init__(self, status: Status) -> None:
        keys = ", ".join(short_id(k) for k in sorted(status.input_requests)) or "none listed"
        super().__init__(f"Task {short_id(status.task_id)} needs input ({keys})")
        self.status = status


class InvalidStatus(ValueError):
    """A task map from the wire does not decode. `.field` is the wire name of the bad field."""

    def __init__(self, field: str, problem: str, value: Any = None) -> None:
        super().__init__(f"invalid task: {field} {problem}")
        self.field = field
        self.value = value


class InputError(Exception):
    """Raised by an input handler that cannot answer; the wait stops with -32603.

    `reason` is carried into the error's cause as ``("input_handler", key, reason, status)``.
    """

    def __init__(self, reason: Any) -> None:
        super().__init__(str(reason))
        self.reason = reason


def _millis(seconds: float) -> int:
    return round(seconds * 1000)
