"""Errors: one root, `McpError`, that carries a JSON-RPC code, a kind and a cause.

```
McpError(Exception)                            code, message, data, kind, cause
 +- TransportError(McpError, ConnectionError)  the connection failed (CONNECTION_CLOSED, kind transport)
 |   +- RequestTimeout(TimeoutError)           a request got no answer in time (REQUEST_TIMEOUT)
 |   +- SessionExpired                         the server expired the 2025-era HTTP session (404)
 +- ProtocolError                              the server broke the protocol (PROTOCOL_VIOLATION, kind
 |                                             protocol); retrying will not help
 +- OAuthError                                 authorization failed (AUTHORIZATION_FAILED, kind authorization)
 +- TaskFailed                                 the task failed; code, message, data from its error
 +- TaskTimeout(McpError, TimeoutError)        a wait ran out of time (REQUEST_TIMEOUT, kind extension); the
 |                                             task keeps running
 +- ToolError                                  the tool reported its own error (isError: true), raised by the
                                               waits given raise_on_error=True; .result is the result
TaskCancelled(Exception)                  the task was cancelled (an outcome, not a protocol error)
InputRequired(Exception)                  the task needs input this wait did not answer
InvalidStatus(ValueError)                 a task map from the wire that does not decode
InputError(Exception)                     raised by an input handler that cannot answer
```

Subclasses also derive from the builtin they resemble, so ``except TimeoutError`` catches a wait that
ran out of time. ``str(error)`` is the message alone (`TaskFailed` adds the task), its control and
invisible formatting characters shown as escapes (`mcp_tasks._printable.printable`: a server's ESC
sequence or carriage return in a printed traceback cannot rewrite the terminal), while `message` and
`data` keep the text as it came; ``repr(error)``
has one shape for all, ``Name(message=..., code=..., kind=..., task=...)`` with the fields it has. Every error of
kind transport that a request raises is a `TransportError`, and only those are ever retried;
`TaskTimeout` is the wait's own deadline, not the connection's, and is not one: its kind is
``extension`` (the Tasks extension's wait), never ``transport``. Messages name what
they are about: the task (by its `short_id`, never the whole id, even where the server's own text
embeds it), the method, the URL, the limit, the reason.

The codes this client makes are named for what they say; a server's own codes come through as sent.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from mcp_tasks._printable import printable
from mcp_tasks._redact import ids_in, redact_ids, redact_server_text, short_id

if TYPE_CHECKING:
    from mcp_tasks._status import Status

__all__ = [
    "AUTHORIZATION_FAILED",
    "CONNECTION_CLOSED",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CAPABILITY",
    "PARSE_ERROR",
    "PROTOCOL_VIOLATION",
    "REQUEST_TIMEOUT",
    "SERVER_ERROR",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "InputError",
    "InputRequired",
    "InvalidStatus",
    "McpError",
    "OAuthError",
    "ProtocolError",
    "RequestTimeout",
    "SessionExpired",
    "TaskCancelled",
    "TaskFailed",
    "TaskTimeout",
    "ToolError",
    "TransportError",
    "kind_for_code",
    "name_request",
    "redact_request",
    "seconds",
]

# JSON-RPC 2.0's own codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# JSON-RPC leaves -32000..-32099 to implementations. MCP's SDKs and specification use -32000 and
# -32001 (below), -32002 (resource not found), -32020..-32022 (below) and -32042 (URL elicitation);
# this client's own codes sit at the far end of the range, clear of all of them.
CONNECTION_CLOSED = -32000
"""The connection closed or failed (as the MCP SDKs' ``ConnectionClosed``): a `TransportError`."""
SERVER_ERROR = -32000
"""A server's own generic failure: the first code of JSON-RPC's implementation-defined range, which
servers answer for their own reasons ("Bad Request: Missing session ID"). The same number as
`CONNECTION_CLOSED`; the name says which is meant where a server's answer is tested."""
REQUEST_TIMEOUT = -32001
"""A request, or a wait, got no answer in time."""
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
PROTOCOL_VIOLATION = -32090
"""The server broke the protocol (a `ProtocolError`): a malformed message or task, an answer to
another request, an unknown resultType, a conversation past this client's limits."""
AUTHORIZATION_FAILED = -32091
"""Authorization failed (an `OAuthError`, or a 401/403 that carried no JSON-RPC error)."""

KINDS = ("json_rpc", "protocol", "transport", "execution", "authorization", "extension")


def kind_for_code(code: int) -> str:
    """The kind of a JSON-RPC error that came from a peer, derived from its code."""
    if code in (PARSE_ERROR, INVALID_REQUEST):
        return "json_rpc"
    if code == INTERNAL_ERROR:
        return "execution"
    return "protocol"


class _Displayed:
    """Rich displays for the errors: IPython's pretty form and an HTML table in notebooks.

    The display module is imported only when something is displayed: raising and catching an error
    never loads it.
    """

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        from mcp_tasks._display import error_rows, pretty

        assert isinstance(self, BaseException)
        pretty(f"{type(self).__module__}.{type(self).__qualname__}", error_rows(self), printer, cycle)

    def _repr_html_(self) -> str:
        from mcp_tasks._display import error_html

        assert isinstance(self, BaseException)
        return error_html(self)

    def __str__(self) -> str:
        """The error's text with its control and formatting characters shown as escapes."""
        return printable(super().__str__())

    def __repr__(self) -> str:
        """One shape for every error: ``Name(message=..., code=..., kind=..., task=...)``, the
        fields it has, the task by its short id.
        """
        assert isinstance(self, BaseException)
        parts = [f"message={getattr(self, 'message', str(self))!r}"]
        for name in ("code", "kind"):
            value = getattr(self, name, None)
            if value is not None:
                parts.append(f"{name}={value!r}")
        status = getattr(self, "status", None)
        if status is not None:
            parts.append(f"task={short_id(status.task_id)!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


class McpError(_Displayed, Exception):
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
        super().__init__(message or f"No answer within {seconds(timeout)}", data={"timeoutMs": _millis(timeout)})
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


class TaskFailed(McpError):
    """The task failed: `code`, `message` and `data` are those of its error; `.status` is the task.

    ``str(error)`` names the task as well: ``Task abcd…wxyz failed: <message>``. Where the server's
    message embeds the task id, `message` shows its short form (``status.error`` keeps the text as
    sent).
    """

    def __init__(self, status: Status) -> None:
        error = status.error or {}
        code = error.get("code", INTERNAL_ERROR)
        message = redact_ids(str(error.get("message", "The task failed")), status.task_id)
        super().__init__(code, message, error.get("data"), None, ("task_failed", status))
        self.status = status

    def __str__(self) -> str:
        text = f"Task {short_id(self.status.task_id)} failed: {self.message} (error {self.code}){_undeclared(self)}"
        return printable(text)


_UNDECLARED = re.compile(r"does not support (elicitation|sampling|roots) capability", re.IGNORECASE)
_KINDS_OF = {"elicitation": '["form", "url"]', "sampling": '["sampling"]', "roots": '["roots"]'}


def _undeclared(failed: TaskFailed) -> str:
    """Why a 2025-era server could not ask, when it says so: the session declared no such input."""
    found = _UNDECLARED.search(failed.message)
    if found is None:
        return ""
    capability = found.group(1).lower()
    return (
        f". The session that started the task did not declare {capability}, and a 2025-11-25 server "
        "asks only what the session declared: start such tasks from a client with input handlers, "
        f"or with declare_input={_KINDS_OF[capability]} (a client with a store= and no input handlers "
        "declares form and url), "
        "and answer later with resume()"
    )


class TaskTimeout(McpError, TimeoutError):
    """A wait ran out of time. The task keeps running on the server: wait again, or cancel it.

    Kind ``extension``: the Tasks wait's own deadline, not the connection's (it is not a
    `TransportError`, and is never retried).

    `data` holds ``taskId`` and ``timeoutMs`` (the configured timeout); `.status` is the last status
    the wait read, or None when it read none; `.cancelled` is True when the wait cancelled the task
    (``cancel_on_timeout=True``); `.pending` lists the last Status of each unfinished task.
    """

    def __init__(
        self,
        task_id: str,
        timeout: float,
        status: Status | None,
        *,
        cancelled: bool = False,
        pending: list[Status] | None = None,
    ) -> None:
        last = f" (last seen {redact_ids(status.wire_status, task_id, status.task_id)})" if status is not None else ""
        then = (
            "it was cancelled (cancel_on_timeout)"
            if cancelled
            else "it is still running on the server: wait for it again by its id "
            "(timeout=None waits as long as it takes), or cancel it"
        )
        what = f"Task {short_id(task_id)}"
        if pending is not None and len(pending) > 1:  # a wait on many tasks (wait_all, ...)
            what, last = f"{len(pending)} tasks (the first {short_id(task_id)})", ""
            then = (
                "they were cancelled (cancel_on_timeout)"
                if cancelled
                else "they are still running on the server: wait for them again, or cancel them"
            )
        super().__init__(
            REQUEST_TIMEOUT,
            f"{what} did not finish within {seconds(timeout)}{last}; {then}",
            {"taskId": task_id, "timeoutMs": _millis(timeout)},
            "extension",
            ("timeout", status),
        )
        self.status = status
        self.cancelled = cancelled
        # The last Status of each unfinished task (a wait on many tasks lists them all).
        self.pending: list[Status] = list(pending) if pending is not None else [status] if status is not None else []


MAX_TOOL_TEXT = 2000
"""The most of a tool's error text a `ToolError` message carries (its `.result` has all of it)."""


class ToolError(McpError):
    """The tool ran and reported an error of its own: a result with ``isError: true``.

    Returning such a result is how MCP reports a tool's failure, so the waits return it; given
    ``raise_on_error=True``, `call_and_await`, `await_task` and `resume` raise this instead (as
    requests' ``raise_for_status()`` does). `.result` is the CallToolResult as the server sent it,
    `.status` the task's last Status (None for a tool that ran without a task), `.tool` the tool's
    name when the caller gave it. `message` is the tool's own text. Code `INTERNAL_ERROR`, kind
    ``execution``. (On the server's side, a tool raises `mcp_tasks.server.ToolError` to return
    such a result.)
    """

    def __init__(self, result: dict[str, Any], status: Status | None = None, tool: str | None = None) -> None:
        texts = [
            item["text"].strip()
            for item in result.get("content") or ()
            if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str)
        ]
        text = "; ".join(t for t in texts if t) or "(its result has no text)"
        if len(text) > MAX_TOOL_TEXT:
            text = text[:MAX_TOOL_TEXT] + "…"
        if status is not None:
            text = redact_ids(text, status.task_id)
        who = f"Tool {tool!r}" if tool else "The tool"
        if status is not None:
            who += f" (task {short_id(status.task_id)})"
        super().__init__(INTERNAL_ERROR, f"{who} reported an error: {text}", None, "execution", ("tool_error", result))
        self.result = result
        self.status = status
        self.tool = tool


class TaskCancelled(_Displayed, Exception):
    """The task was cancelled: an outcome, not a protocol error. `.status` is the task."""

    def __init__(self, status: Status) -> None:
        why = f": {redact_ids(status.status_message, status.task_id)}" if status.status_message else ""
        super().__init__(f"Task {short_id(status.task_id)} was cancelled{why}")
        self.status = status


class InputRequired(_Displayed, Exception):
    """The task needs input this wait did not answer. `.status` lists it in `input_requests`."""

    def __init__(self, status: Status) -> None:
        keys = ", ".join(repr(redact_ids(k, status.task_id)) for k in sorted(status.input_requests)) or "none listed"
        super().__init__(
            f"Task {short_id(status.task_id)} needs input this wait did not answer ({keys}): answer it with "
            "update_task, or wait with input handlers that can"
        )
        self.status = status


class InvalidStatus(_Displayed, ValueError):
    """A task map from the wire does not decode. `.field` is the wire name of the bad field."""

    def __init__(self, field: str, problem: str, value: Any = None) -> None:
        super().__init__(f"invalid task: {field} {problem}")
        self.field = field
        self.value = value


class InputError(_Displayed, Exception):
    """Raised by an input handler that cannot answer; the wait stops with -32603.

    `reason` is carried into the error's cause as ``("input_handler", key, reason, status)``.
    """

    def __init__(self, reason: Any) -> None:
        super().__init__(str(reason))
        self.reason = reason


def name_request(error: McpError, method: str) -> None:
    """Make an error from one request name its method, when its message does not already: the
    server's bare "Method not found", and a request that got no answer in time.
    """
    if method in error.message:
        return
    if error.code == METHOD_NOT_FOUND:
        _reword(error, f"{error.message}: the server has no method {method!r}")
    elif isinstance(error, RequestTimeout):
        _reword(error, f"{method}: {error.message}")


def redact_request(error: McpError, params: object) -> None:
    """Make an error answering a request that names tasks (``taskId``, a listen's ``taskIds``)
    show them only in their short forms, however the server's message quotes them.
    """
    ids = ids_in(params)
    if ids:
        message = redact_server_text(error.message, *ids)
        if message != error.message:
            _reword(error, message)


def _reword(error: McpError, message: str) -> None:
    error.message = message
    error.args = (message,)


def seconds(value: float) -> str:
    """A duration for a message: ``1.5 s``, ``90 s``, ``0.2 s`` (to the hundredth)."""
    return f"{round(value, 2) if value >= 0.1 else value:.6g} s"


def _millis(value: float) -> int:
    return round(value * 1000)
