"""Tools as the reference server runs them: the definition, the context a tool body gets, and the
conversion of what it returns into a CallToolResult.
"""

from __future__ import annotations

import inspect
import json
import threading
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union

import attrs

from mcp_tasks._errors import INVALID_PARAMS, McpError

__all__ = [
    "Cancelled",
    "NeedInput",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "to_call_result",
]

TaskSupport = Literal["forbidden", "optional", "required"]
TASK_SUPPORT = ("forbidden", "optional", "required")


class ToolError(Exception):
    """Raised by a tool body to report its own failure: the call returns a result with
    ``isError: true`` (a task still completes), not a protocol error.
    """


class Cancelled(Exception):
    """Raised inside a tool body by `ToolContext` once the call or task is cancelled."""


class NeedInput(Exception):
    """A synchronous call needs input it does not have yet (answered with input_required)."""

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__(f"needs input: {', '.join(sorted(requests))}")
        self.requests = requests


@attrs.frozen
class ToolResult:
    """A CallToolResult spelled out: content blocks, structured content, and the error flag."""

    content: list[dict[str, Any]] = attrs.field(factory=list)
    structured: dict[str, Any] | None = None
    is_error: bool = False

    def to_wire(self) -> dict[str, Any]:
        """The CallToolResult map."""
        wire: dict[str, Any] = {"content": list(self.content), "isError": self.is_error}
        if self.structured is not None:
            wire["structuredContent"] = self.structured
        return wire


def to_call_result(value: object) -> dict[str, Any]:
    """What a tool body returned, as a CallToolResult: a string is text content, a dict is
    structured content (with its JSON as text), a `ToolResult` is taken as it is.
    """
    if isinstance(value, ToolResult):
        return value.to_wire()
    if value is None:
        return {"content": [], "isError": False}
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}], "isError": False}
    if isinstance(value, dict):
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return {"content": [{"type": "text", "text": text}], "structuredContent": value, "isError": False}
    raise TypeError(f"a tool must return str, dict, ToolResult or None, not {type(value).__name__}")


def error_result(message: str) -> dict[str, Any]:
    """The CallToolResult of a tool that reported its own failure."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


class ToolContext:
    """What a tool body gets as its first argument: input, status messages, cancellation.

    The same body runs synchronously or as a task. `meta` is the ``_meta`` of the request that
    started it; `principal` who sent that request. `ask` returns the client's answer: in a task it
    blocks until ``tasks/update`` brings it; in a synchronous call the server answers
    ``input_required`` and runs the body again when the client re-sends the call with answers.
    """

    def __init__(
        self,
        *,
        cancelled: threading.Event,
        answers: Mapping[str, Any] | None = None,
        task: Any = None,
        principal: str | None = None,
        notify: Callable[[dict[str, Any]], None] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        self._cancelled = cancelled
        self.meta: dict[str, Any] = dict(meta or {})
        self._answers = dict(answers or {})
        self._task = task
        self._notify = notify
        self.principal = principal

    @property
    def task_id(self) -> str | None:
        """The task's id when the call runs as a task, else None."""
        return None if self._task is None else str(self._task.task_id)

    @property
    def cancelled(self) -> bool:
        """Whether the call or task has been cancelled (or the client went away)."""
        return self._cancelled.is_set()

    def check_cancelled(self) -> None:
        """Raise `Cancelled` when the call or task has been cancelled."""
        if self._cancelled.is_set():
            raise Cancelled()

    def sleep(self, seconds: float) -> None:
        """Sleep, waking early with `Cancelled` when the call or task is cancelled."""
        if self._cancelled.wait(seconds):
            raise Cancelled()

    def report(self, message: str | None) -> None:
        """Set the task's status message; in a synchronous call, send it as a request-scoped
        ``notifications/message`` (which travels only where the response's stream can carry it).
        """
        if self._task is not None:
            self._task.set_message(message)
        elif self._notify is not None and message is not None:
            self._notify(
                {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": message}}
            )

    def ask(self, key: str, request: Mapping[str, Any]) -> Any:
        """Ask the client for one input; `request` is ``{"method": ..., "params": ...}``."""
        return self.ask_all({key: request})[key]

    def ask_all(self, requests: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        """Ask the client for several inputs at once; returns every answer, keyed as asked."""
        if not requests:
            return {}
        wanted = {}
        for key, request in requests.items():
            if not isinstance(key, str) or not key:
                raise ValueError("input keys must be non-empty strings")
            if not isinstance(request, Mapping) or not isinstance(request.get("method"), str):
                raise ValueError(f"input request {key!r} needs a method")
            wanted[key] = dict(request)
        if self._task is not None:
            answers: dict[str, Any] = self._task.ask(wanted)
            return answers
        missing = {key: req for key, req in wanted.items() if key not in self._answers}
        if missing:
            raise NeedInput(missing)
        return {key: self._answers[key] for key in wanted}

    def elicit(self, key: str, message: str, schema: Mapping[str, Any]) -> Any:
        """Ask for a form: returns the client's ElicitResult (``action`` and ``content``)."""
        params = {"mode": "form", "message": message, "requestedSchema": dict(schema)}
        return self.ask(key, {"method": "elicitation/create", "params": params})


_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    dict: "object",
    list: "array",
}


def _schema_type(annotation: Any) -> dict[str, Any]:
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return _schema_type(members[0])
        return {}
    base = origin if origin is not None else annotation
    kind = _JSON_TYPES.get(base)
    return {"type": kind} if kind else {}


def schema_from_signature(fn: Callable[..., Any]) -> dict[str, Any]:
    """An input schema from a tool body's keyword parameters (after the context)."""
    hints = typing.get_type_hints(fn)
    params = list(inspect.signature(fn).parameters.values())[1:]
    properties: dict[str, Any] = {}
    required = []
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        properties[param.name] = _schema_type(hints.get(param.name, Any))
        if param.default is param.empty:
            required.append(param.name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _matches(kind: str, value: object) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    python = {"string": str, "boolean": bool, "object": dict, "array": list}.get(kind)
    return python is None or isinstance(value, python)


def keyword_names(fn: Callable[..., Any]) -> frozenset[str] | None:
    """The argument names a tool body takes after its context; None when it takes any (``**``)."""
    params = list(inspect.signature(fn).parameters.values())[1:]
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params if p.kind is not p.VAR_POSITIONAL)


@attrs.frozen
class Tool:
    """A registered tool: its name, schema, task support, and the body that runs it."""

    name: str
    fn: Callable[..., Any] = attrs.field(repr=False)
    description: str | None = None
    input_schema: dict[str, Any] = attrs.field(factory=lambda: {"type": "object"})
    task_support: TaskSupport = "forbidden"
    takes: frozenset[str] | None = attrs.field(default=None, repr=False)
    """The argument names the body accepts (None: any)."""

    def definition(self) -> dict[str, Any]:
        """The tool as ``tools/list`` shows it (2026-07-28 has no execution field)."""
        tool: dict[str, Any] = {"name": self.name, "inputSchema": self.input_schema}
        if self.description:
            tool["description"] = self.description
        return tool

    def check_arguments(self, arguments: object) -> dict[str, Any]:
        """The arguments, checked against the schema's required keys and property types."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise McpError(INVALID_PARAMS, f"Arguments of {self.name} must be an object")
        properties = self.input_schema.get("properties", {})
        for key in self.input_schema.get("required", []):
            if key not in arguments:
                raise McpError(INVALID_PARAMS, f"Missing argument {key!r} for tool {self.name}")
        for key, value in arguments.items():
            spec = properties.get(key)
            if spec is None:
                if self.input_schema.get("additionalProperties") is False or (
                    self.takes is not None and key not in self.takes
                ):
                    raise McpError(INVALID_PARAMS, f"Unknown argument {key!r} for tool {self.name}")
                continue
            kind = spec.get("type") if isinstance(spec, dict) else None
            if isinstance(kind, str) and not _matches(kind, value):
                raise McpError(INVALID_PARAMS, f"Argument {key!r} of tool {self.name} must be of type {kind}")
        return arguments

    def run(self, context: ToolContext, arguments: dict[str, Any]) -> Any:
        """Call the body with the context and the arguments as keywords."""
        return self.fn(context, **arguments)
