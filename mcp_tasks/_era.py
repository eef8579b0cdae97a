"""Which protocol a connection speaks, found once and held in one place.

A 2026-07-28 server answers ``server/discover``; a handshake server (2025-11-25 and older) refuses
it in its own ways (stdio: -32601 or -32602; HTTP: 400 with -32600 "Missing session ID" or -32000
"not initialized", or 404/405). Such an answer means "this is a handshake server": the client then
sends ``initialize`` offering 2025-11-25 and accepts the server's counter-offer of 2025-06-18 or
2025-03-26 (plain tools, no tasks). `Connection` holds the outcome; the client and the task helpers
ask it rather than branching on versions themselves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Literal

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import (
    CONNECTION_CLOSED,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
    RequestTimeout,
    TransportError,
)
from mcp_tasks._wire import PROTOCOL_VERSION, malformed

__all__ = [
    "HANDSHAKE_VERSIONS",
    "PROTOCOLS",
    "Answerer",
    "Connection",
    "Era",
    "InputRoutes",
    "StatusBoard",
    "is_handshake_refusal",
]

Era = Literal["modern", "legacy"]

LEGACY_VERSION = "2025-11-25"
HANDSHAKE_VERSIONS = (LEGACY_VERSION, "2025-06-18", "2025-03-26")
"""The handshake revisions this client speaks, newest first (only the first has tasks)."""
PROTOCOLS = ("auto", PROTOCOL_VERSION, *HANDSHAKE_VERSIONS)
"""What ``protocol=`` accepts: ``"auto"`` (detect), or one revision to pin."""
HANDSHAKE_HTTP_STATUSES = frozenset({400, 404, 405})

RELATED_TASK = "io.modelcontextprotocol/related-task"

Answerer = Callable[[dict[str, Any]], "dict[str, Any] | None"]
"""A running wait's answer to a server request about its task: the response message, or None to
leave the request to the client's input handlers.
"""

Send = Callable[[str, Mapping[str, Any] | None, Deadline], dict[str, Any]]


def check_protocol(protocol: object) -> str:
    """`protocol` when it is one `PROTOCOLS` names; ValueError otherwise."""
    if not isinstance(protocol, str) or protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}; got {protocol!r}")
    return protocol


def is_handshake_refusal(error: McpError) -> bool:
    """Whether `error`, the answer to a ``server/discover`` probe, says "a handshake server".

    JSON-RPC refusals of the method (-32601, -32602, -32600, -32000) and HTTP 400/404/405 do; a
    modern server's -32022, an authorization failure, a timeout or a connection that failed do not.
    """
    if isinstance(error, RequestTimeout) or error.code == UNSUPPORTED_PROTOCOL_VERSION:
        return False
    if error.kind == "authorization":  # a 401/403 nobody resolved: the answer, not the era
        return False
    if isinstance(error, TransportError):
        data = error.data
        status = data.get("status") if isinstance(data, dict) else None
        return status in HANDSHAKE_HTTP_STATUSES
    return error.code in (METHOD_NOT_FOUND, INVALID_PARAMS, INVALID_REQUEST, CONNECTION_CLOSED)


class StatusBoard:
    """Wakes waits when a ``notifications/tasks/status`` names their task (legacy sessions push
    them on any stream; a wait still polls, so a lost notification costs only time).
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._versions: dict[str, int] = {}

    def publish(self, task_id: str) -> None:
        """A notification named `task_id`."""
        with self._changed:
            self._versions[task_id] = self._versions.get(task_id, 0) + 1
            if len(self._versions) > 10_000:  # old tasks: forget them rather than grow for ever
                self._versions.clear()
            self._changed.notify_all()

    def version(self, task_id: str) -> int:
        """How many notifications have named `task_id` (the mark `wait` compares against)."""
        with self._changed:
            return self._versions.get(task_id, 0)

    def wait(self, task_id: str, seen: int, timeout: float) -> bool:
        """Block until a notification after mark `seen` names `task_id`, or `timeout` passes."""
        with self._changed:
            return self._changed.wait_for(lambda: self._versions.get(task_id, 0) != seen, timeout)


class InputRoutes:
    """Which running wait answers a legacy server's input request (servers send them as requests
    of their own): the wait for the task the request names in ``_meta`` related-task, else the
    task the server last said needs input, else the only wait running. None leaves the request
    to the client's input handlers.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waits: dict[str, list[Answerer]] = {}
        self._asking: str | None = None

    def add(self, task_id: str, answerer: Answerer) -> None:
        """A wait for `task_id` started."""
        with self._lock:
            self._waits.setdefault(task_id, []).append(answerer)

    def remove(self, task_id: str, answerer: Answerer) -> None:
        """The wait ended."""
        with self._lock:
            waits = self._waits.get(task_id, [])
            if answerer in waits:
                waits.remove(answerer)
            if not waits:
                self._waits.pop(task_id, None)

    def asking(self, task_id: str) -> None:
        """A status notification said `task_id` needs input (some servers' requests name no task)."""
        self._asking = task_id

    def answerer_for(self, request: Mapping[str, Any]) -> Answerer | None:
        """The wait that answers `request`, or None."""
        params = request.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        related = meta.get(RELATED_TASK) if isinstance(meta, dict) else None
        named = related.get("taskId") if isinstance(related, dict) else None
        with self._lock:
            if isinstance(named, str):
                task_id: str | None = named
            elif self._asking in self._waits:
                task_id = self._asking
            elif len(self._waits) == 1:
                task_id = next(iter(self._waits))
            else:
                return None
            waits = self._waits.get(task_id or "")
            return waits[-1] if waits else None


class Connection:
    """The era of one connection: what was negotiated, the server's capabilities and info, the
    tools' task support (legacy), and the status board. Negotiated once, under a lock, so that
    many threads making the first call at once start one handshake.
    """

    def __init__(self, protocol: str = "auto") -> None:
        self.protocol = check_protocol(protocol)
        self._lock = threading.Lock()
        self._era: Era | None = None
        self._version: str | None = None
        self._capabilities: dict[str, Any] = {}
        self._server_info: dict[str, Any] = {}
        self._discovered: dict[str, Any] | None = None
        self.task_support: dict[str, str] = {}
        self.board = StatusBoard()
        self.inputs = InputRoutes()

    # -- what was negotiated ------------------------------------------------------------------

    @property
    def era(self) -> Era | None:
        """``"modern"``, ``"legacy"``, or None before the first request."""
        return self._era

    @property
    def legacy(self) -> bool:
        """True on a handshake (2025-era) connection."""
        return self._era == "legacy"

    @property
    def version(self) -> str | None:
        """The negotiated protocol revision (None before the first request)."""
        return self._version

    @property
    def capabilities(self) -> dict[str, Any]:
        """The server's capabilities: from ``server/discover`` or from ``initialize``."""
        return self._capabilities

    @property
    def server_info(self) -> dict[str, Any]:
        """The server's name and version as it gave them (may be empty)."""
        return self._server_info

    @property
    def discovered(self) -> dict[str, Any] | None:
        """The ``server/discover`` result of a modern connection."""
        return self._discovered

    def legacy_tasks(self) -> bool:
        """Whether this legacy session may task-augment ``tools/call`` (2025-11-25 and the
        server's ``capabilities.tasks.requests.tools.call``).
        """
        if not self.legacy or self._version != LEGACY_VERSION:
            return False
        tasks = self._capabilities.get("tasks")
        requests = tasks.get("requests") if isinstance(tasks, dict) else None
        tools = requests.get("tools") if isinstance(requests, dict) else None
        return isinstance(tools, dict) and isinstance(tools.get("call"), dict)

    # -- negotiating --------------------------------------------------------------------------

    def ensure(self, deadline: Deadline, negotiate: Callable[[Deadline], None]) -> None:
        """Run `negotiate` unless this connection already has an era (one thread at a time)."""
        if self._era is not None:
            return
        if not self._lock.acquire(timeout=deadline.step() or -1):
            raise RequestTimeout(deadline.timeout or 0.0, "Timed out waiting for the connection's handshake")
        try:
            if self._era is None:
                negotiate(deadline)
        finally:
            self._lock.release()

    def reset(self) -> None:
        """Forget the negotiation (a legacy session that expired, a server that restarted)."""
        self._era = None
        self._version = None

    def pinned_modern(self) -> None:
        """A connection pinned to 2026-07-28: no probe; ``server/discover`` is sent when the
        capabilities are first asked for.
        """
        self._version = PROTOCOL_VERSION
        self._era = "modern"

    def modern(self, discovered: dict[str, Any]) -> None:
        """Take a ``server/discover`` result."""
        capabilities = discovered.get("capabilities")
        if capabilities is not None and not isinstance(capabilities, dict):
            raise malformed("The server/discover capabilities are not an object", discovered)
        info = discovered.get("serverInfo")
        meta = discovered.get("_meta")
        if not isinstance(info, dict) and isinstance(meta, dict):
            info = meta.get("io.modelcontextprotocol/serverInfo")
        self._discovered = discovered
        self._capabilities = capabilities or {}
        self._server_info = info if isinstance(info, dict) else {}
        self._version = PROTOCOL_VERSION
        self._era = "modern"

    def initialized(self, result: dict[str, Any], offered: str) -> str:
        """Take an ``initialize`` result; returns the version agreed (ValueError-free: a version
        this client does not speak is an McpError).
        """
        version = result.get("protocolVersion")
        acceptable = HANDSHAKE_VERSIONS if self.protocol == "auto" else (offered,)
        if not isinstance(version, str) or version not in acceptable:
            raise McpError(
                CONNECTION_CLOSED,
                f"The server answered initialize with protocol version {version!r}, which this client "
                f"does not speak (it offered {offered})",
                {"offered": offered, "supported": list(acceptable)},
                "protocol",
                result,
            )
        capabilities = result.get("capabilities")
        if capabilities is not None and not isinstance(capabilities, dict):
            raise malformed("The initialize capabilities are not an object", result)
        info = result.get("serverInfo")
        self._capabilities = capabilities or {}
        self._server_info = info if isinstance(info, dict) else {}
        self._version = version
        self._era = "legacy"
        return version

    def offer(self) -> str:
        """The version to offer in ``initialize``."""
        return LEGACY_VERSION if self.protocol == "auto" else self.protocol

    def learn_tools(self, tools: object) -> None:
        """Remember each listed tool's ``execution.taskSupport`` (legacy task augmentation)."""
        if not isinstance(tools, list):
            return
        for tool in tools:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                execution = tool.get("execution")
                mode = execution.get("taskSupport") if isinstance(execution, dict) else None
                self.task_support[tool["name"]] = mode if mode in ("optional", "required") else "forbidden"
