"""The reference server: the dispatch of every 2026-07-28 request, with the Tasks extension.
Transports hand it decoded messages (`handle`) and carry back what it returns. What the requests
lean on has a module of its own: the tools (`ToolRegistry`), the envelope and ``server/discover``
(_handshake), input rounds (`InputRounds`), tasks (`TaskRuntime`) and listen streams (`Hub`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mcp_tasks._errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, McpError
from mcp_tasks._exchange import Exchange
from mcp_tasks._version import __version__
from mcp_tasks._wire import META_SUBSCRIPTION_ID, PROTOCOL_VERSION, TASKS_EXTENSION, declares_extension, valid_id
from mcp_tasks.server._handshake import check_envelope, discover_result, tasks_required
from mcp_tasks.server._hub import Hub
from mcp_tasks.server._input_rounds import InputRounds, check_input_capabilities, check_responses
from mcp_tasks.server._task_record import MAX_TASK_ID_BYTES, TaskRecord, check_task_id
from mcp_tasks.server._task_runtime import TaskRuntime
from mcp_tasks.server._tool_registry import ToolRegistry
from mcp_tasks.server._tools import Cancelled, NeedInput, Tool, ToolContext, ToolError, error_result, to_call_result
from mcp_tasks.server._tracing import traced_request

__all__ = ["Server"]

log = logging.getLogger("mcp_tasks.server")

MAX_LISTEN_TASK_IDS = 10_000


class Server:
    """An MCP server for tests, demos and your own test suites.

    Register tools with `tool` (synchronous, or task-capable: ``task="optional"`` or
    ``"required"``), then serve it with `Client.direct(server)`, over stdio
    (``python -m mcp_tasks.server module:server``) or over HTTP (`serve_http`).

    `latency` delays named methods (``{"tasks/get": 2.0}``) to play a slow server;
    `update_delay` applies ``tasks/update`` answers that many seconds after acknowledging them
    (the extension allows it: an update is eventually consistent); `on_request`
    is called with each request's method and params before it is handled; ``listen=False`` plays a
    server without a subscription source (``subscriptions/listen`` answers -32601).
    """

    def __init__(
        self,
        name: str = "mcp_tasks-reference",
        version: str = __version__,
        *,
        tasks: bool = True,
        listen: bool = True,
        task_ttl: float | None = 3600.0,
        poll_interval: float | None = 0.25,
        max_jobs: int = 32,
        max_tasks: int = 10_000,
        max_runtime: float | None = None,
        latency: Mapping[str, float] | None = None,
        update_delay: float | None = None,
        on_request: Callable[[str, dict[str, Any]], None] | None = None,
        supported_versions: Iterable[str] = (PROTOCOL_VERSION,),
    ) -> None:
        self.name = name
        self.version = version
        self.tasks_enabled = tasks
        self.listen_enabled = listen
        self.latency = dict(latency or {})
        self.update_delay = update_delay
        self.on_request = on_request
        self.supported_versions = list(supported_versions)
        self.hub = Hub()
        self.tasks = TaskRuntime(
            ttl=task_ttl,
            poll_interval=poll_interval,
            max_jobs=max_jobs,
            max_tasks=max_tasks,
            max_runtime=max_runtime,
            publish=self._publish_task,
        )
        self._registry = ToolRegistry(self.hub.publish_tools_changed)
        self._rounds = InputRounds()
        self._closed = threading.Event()

    # -- tools --------------------------------------------------------------------------------

    def tool(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        task: str = "forbidden",
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register the decorated function as a tool. It is called as ``fn(ctx, **arguments)``;
        without `input_schema` one is derived from its keyword parameters.
        """

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.add_tool(fn, name=name, description=description, input_schema=input_schema, task=task)
            return fn

        return register

    def add_tool(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        task: str = "forbidden",
    ) -> Tool:
        """Register `fn` as a tool (see `tool`); listeners hear ``tools/list_changed``."""
        return self._registry.add(fn, name=name, description=description, input_schema=input_schema, task=task)

    def remove_tool(self, name: str) -> None:
        """Unregister a tool; listeners hear ``tools/list_changed``."""
        self._registry.remove(name)

    @property
    def tools(self) -> dict[str, Tool]:
        """The registered tools by name."""
        return self._registry.snapshot()

    # -- lifecycle ----------------------------------------------------------------------------

    def end_subscriptions(self, error: McpError | None = None) -> None:
        """End every open listen stream: gracefully (each gets its closing response), or with
        `error` as the response (a subscription source that failed).
        """
        self.hub.end_all(error)

    def close(self) -> None:
        """End the listen streams and cancel running tasks."""
        self._closed.set()
        self.hub.end_all()
        self.tasks.close()

    # -- dispatch -----------------------------------------------------------------------------

    def handle(self, message: object, exchange: Exchange) -> dict[str, Any] | None:
        """Handle one decoded JSON-RPC message; the response for a request, else None."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _error_response(None, McpError(INVALID_REQUEST, "Invalid Request"))
        method = message.get("method")
        if "id" not in message:
            if isinstance(method, str):
                log.debug("notification %s", method)
            return None
        request_id = message["id"]
        if not valid_id(request_id):
            return _error_response(None, McpError(INVALID_REQUEST, "Invalid Request: bad id"))
        if not isinstance(method, str):
            return _error_response(request_id, McpError(INVALID_REQUEST, "Invalid Request: no method"))
        try:
            params = message.get("params")
            result = traced_request(
                method, request_id, params, lambda: self._dispatch(request_id, method, params, exchange)
            )
        except McpError as exc:
            return _error_response(request_id, exc)
        except Exception:
            log.exception("internal error handling %s", method)
            return _error_response(request_id, McpError(INTERNAL_ERROR, "Internal error"))
        if result is None:
            return None
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def _dispatch(self, request_id: object, method: str, params: object, exchange: Exchange) -> dict[str, Any] | None:
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise McpError(INVALID_PARAMS, "params must be an object")
        meta = check_envelope(params, self.supported_versions)
        if self.on_request is not None:
            self.on_request(method, params)
        delay = self.latency.get(method)
        if delay and exchange.cancelled.wait(delay):
            return None
        if method == "server/discover":
            return discover_result(
                self.name, self.version, self.supported_versions, listen=self.listen_enabled, tasks=self.tasks_enabled
            )
        if method == "tools/list":
            tools = [t.definition() for t in self.tools.values()]
            return {"resultType": "complete", "tools": tools, "ttlMs": 0, "cacheScope": "private"}
        if method == "tools/call":
            return self._call_tool(params, exchange, meta)
        if method == "subscriptions/listen" and self.listen_enabled:
            return self._listen(request_id, params, exchange, meta)
        if method in ("tasks/get", "tasks/update", "tasks/cancel") and self.tasks_enabled:
            return self._task_method(method, params, exchange, meta)
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")

    # -- tools/call ---------------------------------------------------------------------------

    def _call_tool(self, params: dict[str, Any], exchange: Exchange, meta: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            raise McpError(INVALID_PARAMS, f"Unknown tool: {name}")
        try:
            arguments = tool.check_arguments(params.get("arguments"))
        except McpError as exc:
            # Arguments that do not fit the schema are the tool's error, for the model to see.
            return {"resultType": "complete", **error_result(exc.message)}
        declared = self.tasks_enabled and declares_extension(meta, TASKS_EXTENSION)
        if tool.task_support == "required" and not declared:
            raise tasks_required(f"Tool {tool.name} runs only as a task: declare the {TASKS_EXTENSION} extension")
        if tool.task_support != "forbidden" and declared:
            return self.tasks.create(tool, arguments, exchange.principal, meta).created
        answers = self._rounds.answers(params)
        context = ToolContext(
            cancelled=exchange.cancelled,
            answers=answers,
            principal=exchange.principal,
            notify=exchange.notify,
            meta=meta,
        )
        try:
            value = tool.run(context, arguments)
        except NeedInput as need:
            check_input_capabilities(need.requests, meta)
            return {
                "resultType": "input_required",
                "inputRequests": need.requests,
                "requestState": self._rounds.seal(answers),
            }
        except ToolError as exc:
            return {"resultType": "complete", **error_result(str(exc))}
        except Cancelled:
            raise McpError(INTERNAL_ERROR, "The request was cancelled") from None
        except McpError:
            raise
        except Exception:
            log.exception("tool %s failed", tool.name)
            raise McpError(INTERNAL_ERROR, "Internal error") from None
        return {"resultType": "complete", **to_call_result(value)}

    # -- tasks/* ------------------------------------------------------------------------------

    def _task_method(
        self, method: str, params: dict[str, Any], exchange: Exchange, meta: dict[str, Any]
    ) -> dict[str, Any]:
        if not declares_extension(meta, TASKS_EXTENSION):
            raise tasks_required(f"{method} needs the {TASKS_EXTENSION} extension declared on the request")
        record: TaskRecord = self.tasks.lookup(params.get("taskId"), exchange.principal)
        if method == "tasks/get":
            return {"resultType": "complete", **record.wire()}
        if method == "tasks/update":
            responses = check_responses(params.get("inputResponses"))
            if self.update_delay:
                self.tasks.later(self.update_delay, lambda: record.answer(responses))
            else:
                record.answer(responses)
        else:
            record.cancel()
        return {"resultType": "complete"}

    def _publish_task(self, record: TaskRecord, task: dict[str, Any]) -> None:
        self.hub.publish_task(record.principal, task)

    # -- subscriptions/listen ------------------------------------------------------------------

    def _listen(
        self, request_id: object, params: dict[str, Any], exchange: Exchange, meta: dict[str, Any]
    ) -> dict[str, Any] | None:
        wanted = params.get("notifications")
        if not isinstance(wanted, dict):
            raise McpError(INVALID_PARAMS, "notifications must be an object")
        accepted: dict[str, Any] = {}
        if wanted.get("toolsListChanged") is True:
            accepted["toolsListChanged"] = True
        if "taskIds" in wanted:
            if not (self.tasks_enabled and declares_extension(meta, TASKS_EXTENSION)):
                raise tasks_required(f"taskIds needs the {TASKS_EXTENSION} extension declared on the request")
            ids = _check_listen_ids(wanted["taskIds"])
            accepted["taskIds"] = self.tasks.visible_ids(ids, exchange.principal)
        listener = self.hub.open(request_id, accepted, exchange)
        exchange.on_cancel(listener.end)
        if self._closed.is_set():
            listener.end()
        try:
            listener.pump()
        finally:
            self.hub.close(listener)
        if exchange.cancelled.is_set():
            return None  # the client went away: nothing more is sent
        if listener.error is not None:
            raise listener.error
        return {"resultType": "complete", "_meta": {META_SUBSCRIPTION_ID: request_id}}


def _error_response(request_id: object, error: McpError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()}


def _check_listen_ids(ids: object) -> list[str]:
    if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
        raise McpError(INVALID_PARAMS, "taskIds must be a list of non-empty strings")
    if len(ids) > MAX_LISTEN_TASK_IDS:
        raise McpError(INVALID_PARAMS, f"taskIds must contain at most {MAX_LISTEN_TASK_IDS} entries")
    if any(len(i.encode()) > MAX_TASK_ID_BYTES for i in ids):
        raise McpError(INVALID_PARAMS, f"taskIds entries must be at most {MAX_TASK_ID_BYTES} bytes")
    for task_id in ids:
        check_task_id(task_id)
    return list(dict.fromkeys(ids))
