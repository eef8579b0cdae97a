"""The reference server's spans: a request whose ``params._meta`` carries a W3C ``traceparent``
(SEP-414) is handled inside a SERVER span, child of the caller's span, when OpenTelemetry is
installed. Other requests, or no OpenTelemetry, cost a dict lookup: nothing is imported for them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from mcp_tasks._errors import McpError
from mcp_tasks._redact import redact_text, short_id

__all__ = ["carried", "traced_request"]

T = TypeVar("T")
TRACER_NAME = "mcp_tasks.server"
_loaded: list[Any] = []  # [the opentelemetry api modules, or None when not installed], once
_loading = threading.Lock()


def _otel() -> Any:
    if not _loaded:
        with _loading:
            if not _loaded:
                try:
                    from opentelemetry import propagate, trace
                except ImportError:
                    _loaded.append(None)
                else:
                    _loaded.append((propagate, trace))
    return _loaded[0]


def traced_request(method: str, request_id: object, params: object, handle: Callable[[], T]) -> T:
    """`handle()`, inside a SERVER span when the request carries trace context."""
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    if not isinstance(meta, Mapping) or not isinstance(meta.get("traceparent"), str):
        return handle()
    otel = _otel()
    if otel is None:
        return handle()
    propagate, trace = otel
    assert isinstance(params, Mapping)
    carrier = {key: meta[key] for key in ("traceparent", "tracestate", "baggage") if isinstance(meta.get(key), str)}
    parent = propagate.extract(carrier)
    tool = params.get("name") if method == "tools/call" else None
    attributes: dict[str, Any] = {"mcp.method.name": method, "jsonrpc.request.id": str(request_id)}
    if isinstance(tool, str):
        attributes["gen_ai.tool.name"] = tool
        attributes["gen_ai.operation.name"] = "execute_tool"
    if isinstance(params.get("taskId"), str):
        attributes["mcp.task.id"] = short_id(params["taskId"])
    name = f"{method} {tool}" if isinstance(tool, str) else method
    tracer = trace.get_tracer(TRACER_NAME)
    with tracer.start_as_current_span(
        name,
        context=parent,
        kind=trace.SpanKind.SERVER,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            result = handle()
        except McpError as exc:
            span.set_attribute("error.type", str(exc.code))
            span.set_status(trace.StatusCode.ERROR, redact_text(exc.message))
            raise
        except Exception as exc:
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(trace.StatusCode.ERROR)
            raise
        if isinstance(result, Mapping) and result.get("isError") is True:
            span.set_attribute("error.type", "tool_error")
            span.set_status(trace.StatusCode.ERROR)
        return result


def carried(job: Callable[[], None], tool: str, task_id: str) -> Callable[[], None]:
    """`job` (a task's tool) as it is, or, when it is started inside a traced request, a job that
    runs in a span of its own (``execute_tool {tool}``, the task's short id) child of that
    request's span, on whatever thread it runs.
    """
    otel = _otel() if _loaded else None  # nothing traced yet: OpenTelemetry was never needed
    if otel is None:
        return job
    _, trace = otel
    if not trace.get_current_span().get_span_context().is_valid:
        return job
    from opentelemetry import context

    parent = context.get_current()
    attributes = {"mcp.task.id": short_id(task_id), "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}

    def traced_job() -> None:
        tracer = trace.get_tracer(TRACER_NAME)
        kind = trace.SpanKind.INTERNAL
        with tracer.start_as_current_span(f"execute_tool {tool}", context=parent, kind=kind, attributes=attributes):
            job()

    return traced_job
