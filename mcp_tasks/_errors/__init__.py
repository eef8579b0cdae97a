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

from typing import Any

from mcp_tasks._clock import expire_with
from mcp_tasks._errors._codes import (
    AUTHORIZATION_FAILED,
    CONNECTION_CLOSED,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CAPABILITY,
    PARSE_ERROR,
    PROTOCOL_VIOLATION,
    REQUEST_TIMEOUT,
    SERVER_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    kind_for_code,
)
from mcp_tasks._errors._codes import (
    KINDS as KINDS,
)
from mcp_tasks._errors._display import Displayed
from mcp_tasks._errors._mcp_error import (
    McpError,
    OAuthError,
    ProtocolError,
    RequestTimeout,
    SessionExpired,
    TransportError,
    seconds,
)
from mcp_tasks._errors._task_errors import MAX_TOOL_TEXT as MAX_TOOL_TEXT
from mcp_tasks._errors._task_errors import InputRequired, TaskCancelled, TaskFailed, TaskTimeout, ToolError
from mcp_tasks._redact import ids_in, redact_server_text

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


class InvalidStatus(Displayed, ValueError):
    """A task map from the wire does not decode. `.field` is the wire name of the bad field."""

    def __init__(self, field: str, problem: str, value: Any = None) -> None:
        super().__init__(f"invalid task: {field} {problem}")
        self.field = field
        self.value = value


class InputError(Displayed, Exception):
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


expire_with(RequestTimeout)  # a deadline that passes is a RequestTimeout (the clock stands below us)

# Every class keeps the module it has always named in its pretty form, its HTML table and a pickle.
for _name in __all__:
    _value = globals()[_name]
    if isinstance(_value, type):
        _value.__module__ = __name__
del _name, _value
