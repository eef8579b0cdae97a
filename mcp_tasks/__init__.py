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

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from mcp_tasks import _errors as _loaded_now  # (small; its classes name this package wherever raised)
from mcp_tasks import _render_hook
from mcp_tasks._lazy import homes_of
from mcp_tasks._logs import install as _escape_log_lines
from mcp_tasks._version import __version__

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time each loads on first use
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
    from mcp_tasks._oauth import FileTokenStore, MemoryTokenStore, OAuth, TokenStore
    from mcp_tasks._options import ClientOptions
    from mcp_tasks._people._display import StatusDisplay
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

# Where each public name lives, loaded on first use (PEP 562): `import mcp_tasks` costs what the
# call needs, so a script that never signs in loads no OAuth, one without a PostgreSQL store no
# psycopg, and ``mcp-tasks --help`` none of the client.
_HOMES = {
    "mcp_tasks._client": ("UNSET", "Client"),
    "mcp_tasks._errors": (
        "InputError",
        "InputRequired",
        "InvalidStatus",
        "McpError",
        "OAuthError",
        "ProtocolError",
        "RequestTimeout",
        "TaskCancelled",
        "TaskFailed",
        "TaskTimeout",
        "ToolError",
        "TransportError",
    ),
    "mcp_tasks._input": ("InputHandlers",),
    "mcp_tasks._oauth": ("FileTokenStore", "MemoryTokenStore", "OAuth", "TokenStore"),
    "mcp_tasks._options": ("ClientOptions",),
    "mcp_tasks._people._display": ("StatusDisplay",),
    "mcp_tasks._people._progress": ("SetProgress", "SetSnapshot"),
    "mcp_tasks._session._subscription": ("Closed", "Dropped", "Notification", "Subscription"),
    "mcp_tasks._status": ("Status", "TaskState"),
    "mcp_tasks._store._error": ("StoreError",),
    "mcp_tasks._store._intent": ("Intent", "OutcomeUnknown"),
    "mcp_tasks._store._open": ("open_store",),
    "mcp_tasks._store._postgres": ("PostgresTaskStore",),
    "mcp_tasks._store._protocol": ("TaskStore",),
    "mcp_tasks._store._ref": ("TaskRef",),
    "mcp_tasks._store._sqlite": ("SqliteTaskStore",),
    "mcp_tasks._tasks._adopt": ("adopt",),
    "mcp_tasks._tasks._failed": ("FailedWait",),
    "mcp_tasks._tasks._future": ("SubmitOptions", "TaskFuture", "submit"),
    "mcp_tasks._tasks._helpers": (
        "call_tool",
        "cancel_task",
        "get_task",
        "list_tasks",
        "may_create_task",
        "outcome",
        "server_supports",
        "update_task",
    ),
    "mcp_tasks._tasks._many": ("ManyOptions", "as_completed", "wait_all", "wait_any"),
    "mcp_tasks._tasks._defaults": ("CANCEL_BUDGET",),
    "mcp_tasks._tasks._options": ("WaitOptions",),
    "mcp_tasks._tasks._protocol": ("capabilities",),
    "mcp_tasks._tasks._resume": ("resume",),
    "mcp_tasks._tasks._strategies": ("InputStrategy",),
    "mcp_tasks._tasks._wait": ("CallOptions", "await_task", "call_and_await", "wait_task"),
    "mcp_tasks.transports._retry": ("Retry",),
}
_HOME = homes_of(_HOMES)
# What a name needs loaded besides its home: `InputHandlers.interactive` asks through the prompt,
# which registers itself with the input code when it loads (the input code stands below it).
_WITH = {"InputHandlers": "mcp_tasks._people._prompt"}


if not TYPE_CHECKING:  # (type checkers see the imports above: a name mistyped stays an error)

    def __getattr__(name: str) -> Any:
        """A public name, loaded from its home on first use (and kept, so this runs once per name)."""
        home = _HOME.get(name)
        if home is None:
            raise AttributeError(f"module 'mcp_tasks' has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        if name in _WITH:
            importlib.import_module(_WITH[name])
        globals()[name] = value
        _show_as_public()
        return value


def __dir__() -> list[str]:
    """Every public name, loaded or not (what ``dir()`` and tab completion offer)."""
    return sorted({*globals(), *__all__})


def _show_as_public() -> None:
    """Public classes report the package as their home, so tracebacks and reprs say
    ``mcp_tasks.TaskCancelled`` rather than the private module that defines it: each class of a
    module loaded by now (a name's home loads others, the errors with nearly all).
    """
    for name, home in _HOME.items():
        module = sys.modules.get(home)
        public = vars(module).get(name) if module is not None else None  # (loading none)
        if isinstance(public, type) and public.__module__.startswith("mcp_tasks."):
            public.__module__ = "mcp_tasks"


def _load_renderer() -> None:
    """How a Status or an error shows in IPython and notebooks: the display module registers its
    renderer when it loads, which is when a value first shows.
    """
    importlib.import_module("mcp_tasks._people._display")


_render_hook.load_renderer_with(_load_renderer)
_show_as_public()  # the errors, loaded now: a traceback says mcp_tasks.TaskFailed before any name is used
del _loaded_now
_escape_log_lines()  # no log line of the library carries a server's raw control characters
del _escape_log_lines
