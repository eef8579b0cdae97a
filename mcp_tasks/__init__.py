"""mcp_tasks: a synchronous Python client for MCP tool calls that the server runs as tasks
(the ``io.modelcontextprotocol/tasks`` extension, protocol 2026-07-28).

    import mcp_tasks as mt

    with mt.Client.stdio("my_server") as client:
        outcome = mt.call_tool(client, "export", {"id": 7})
        if isinstance(outcome, mt.Status):          # the server made it a task
            result = mt.await_task(client, outcome, timeout=120)
        else:
            result = outcome                        # the tool ran synchronously

Data flows one way: your code -> these helpers -> `Client` -> a transport -> the wire.
"""

from mcp_tasks._client import UNSET, Client
from mcp_tasks._errors import (
    InputError,
    InputRequired,
    InvalidStatus,
    McpError,
    OAuthError,
    ProtocolError,
    RequestTimeout,
    TaskCancelled,
    TaskFailed,
    TaskTimeout,
    ToolError,
    TransportError,
)
from mcp_tasks._input import InputHandlers
from mcp_tasks._logs import install as _escape_log_lines
from mcp_tasks._oauth import FileTokenStore, MemoryTokenStore, OAuth, TokenStore
from mcp_tasks._options import ClientOptions
from mcp_tasks._people import _prompt  # (registers what InputHandlers.interactive asks with)
from mcp_tasks._people._display import StatusDisplay  # (registers how a Status or an error shows)
from mcp_tasks._people._progress import SetProgress, SetSnapshot
from mcp_tasks._session._subscription import Closed, Dropped, Notification, Subscription
from mcp_tasks._status import Status, TaskState
from mcp_tasks._store import (
    Intent,
    OutcomeUnknown,
    PostgresTaskStore,
    SqliteTaskStore,
    StoreError,
    TaskRef,
    TaskStore,
    open_store,
)
from mcp_tasks._tasks import (
    CANCEL_BUDGET,
    CallOptions,
    FailedWait,
    ManyOptions,
    SubmitOptions,
    TaskFuture,
    WaitOptions,
    adopt,
    as_completed,
    await_task,
    call_and_await,
    call_tool,
    cancel_task,
    capabilities,
    get_task,
    list_tasks,
    may_create_task,
    outcome,
    resume,
    server_supports,
    submit,
    update_task,
    wait_all,
    wait_any,
    wait_task,
)
from mcp_tasks._tasks._strategies import InputStrategy
from mcp_tasks._version import __version__
from mcp_tasks.transports._retry import Retry

__all__ = [
    "CANCEL_BUDGET",
    "UNSET",
    "CallOptions",
    "Client",
    "ClientOptions",
    "Closed",
    "Dropped",
    "FailedWait",
    "FileTokenStore",
    "InputError",
    "InputHandlers",
    "InputRequired",
    "InputStrategy",
    "Intent",
    "InvalidStatus",
    "ManyOptions",
    "McpError",
    "MemoryTokenStore",
    "Notification",
    "OAuth",
    "OAuthError",
    "OutcomeUnknown",
    "PostgresTaskStore",
    "ProtocolError",
    "RequestTimeout",
    "Retry",
    "SetProgress",
    "SetSnapshot",
    "SqliteTaskStore",
    "Status",
    "StatusDisplay",
    "StoreError",
    "SubmitOptions",
    "Subscription",
    "TaskCancelled",
    "TaskFailed",
    "TaskFuture",
    "TaskRef",
    "TaskState",
    "TaskStore",
    "TaskTimeout",
    "TokenStore",
    "ToolError",
    "TransportError",
    "WaitOptions",
    "__version__",
    "adopt",
    "as_completed",
    "await_task",
    "call_and_await",
    "call_tool",
    "cancel_task",
    "capabilities",
    "get_task",
    "list_tasks",
    "may_create_task",
    "open_store",
    "outcome",
    "resume",
    "server_supports",
    "submit",
    "update_task",
    "wait_all",
    "wait_any",
    "wait_task",
]

# Public classes report the package as their home, so tracebacks and reprs say
# ``mcp_tasks.TaskCancelled`` rather than the private module that defines it.
for _name in __all__:
    _public = globals()[_name]
    if isinstance(_public, type) and _public.__module__.startswith("mcp_tasks."):
        _public.__module__ = "mcp_tasks"
del _name, _public, _prompt

_escape_log_lines()  # no log line of the library carries a server's raw control characters
del _escape_log_lines
