"""OpenTelemetry spans for a traced client (``trace=True`` or a ``tracer_provider``); the only
client module that imports OpenTelemetry, and only when a traced client is made.

Each request is a CLIENT span named as the MCP semantic conventions say (``{mcp.method.name}
{target}``: the tool name for ``tools/call``, nothing else), with their attributes, its retries as
events, and the W3C trace context (``traceparent``, ``tracestate``) in ``params._meta`` (SEP-414),
whatever the global propagator; the caller's W3C ``baggage`` only with ``propagate_baggage=True``
(baggage often holds user or tenant ids, and a server may be a third party's). A task's
wait is one span for the task's life, the parent of its requests: an event per status change and
per input round, its status from the outcome, linked to the ``tools/call`` that created the task
(in another process: to the trace context a task store kept of that call, ``mcp.task.resumed``).
Task ids are bearer credentials: a span carries only their `short_id`.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from mcp_tasks._errors import McpError, TransportError
from mcp_tasks._redact import redact_text, short_id
from mcp_tasks._status import TaskState
from mcp_tasks._tracing._base import Saved, Send, TaskTrace, Tracing
from mcp_tasks._version import __version__
from mcp_tasks._wire import META_PROTOCOL_VERSION
from mcp_tasks.transports._retry import RETRY_WATCH

if TYPE_CHECKING:
    from mcp_tasks._session._channel import Channel
    from mcp_tasks._status import Status
    from mcp_tasks._store import TaskRef
    from mcp_tasks.transports._base import Transport

__all__ = ["ChannelTracing", "error_type"]

TRACER_NAME = "mcp_tasks"
REMEMBERED = 1024
"""How many task-creating ``tools/call`` spans a channel remembers, for the waits to link to."""
W3C = TraceContextTextMapPropagator()
"""What a request carries and a store keeps of a creating call, whatever the global propagator:
the W3C trace context only."""
BAGGAGE = W3CBaggagePropagator()
"""The caller's W3C baggage, for a client told to propagate it (``propagate_baggage=True``)."""
OUTCOME_ERRORS = {TaskState.FAILED: "task_failed", TaskState.CANCELLED: "task_cancelled"}


def error_type(exc: BaseException) -> str:
    """``error.type`` of a failed request: the JSON-RPC code as a string, else the class name."""
    if type(exc) is McpError:
        return str(exc.code)  # a JSON-RPC error (TransportError, ProtocolError...: their class names)
    return type(exc).__name__


def _fail(span: Span, kind: str, description: str | None = None) -> None:
    span.set_attribute("error.type", kind)
    span.set_status(StatusCode.ERROR, redact_text(description) if description else None)


def _transport_attributes(transport: Transport) -> dict[str, str | int]:
    from mcp_tasks.transports.direct import DirectTransport
    from mcp_tasks.transports.stdio import StdioTransport

    url = getattr(transport, "url", None)
    if isinstance(url, str):
        parts = urllib.parse.urlsplit(url)
        found: dict[str, str | int] = {"network.transport": "tcp", "network.protocol.name": "http"}
        if parts.hostname:
            found["server.address"] = parts.hostname
        try:
            port = parts.port
        except ValueError:
            port = None
        if port is None:
            port = 443 if parts.scheme == "https" else 80
        found["server.port"] = port
        return found
    if isinstance(transport, StdioTransport):
        return {"network.transport": "pipe"}
    return {"network.transport": "inproc"} if isinstance(transport, DirectTransport) else {}


def _created_task(result: Mapping[str, Any]) -> str | None:
    """The task id a ``tools/call`` result creates (either era), or None."""
    if result.get("resultType") == "task":
        task_id = result.get("taskId")
        return task_id if isinstance(task_id, str) and task_id else None
    task = result.get("task")
    if isinstance(task, Mapping) and isinstance(task.get("taskId"), str) and task.get("taskId"):
        return str(task["taskId"])
    return None


class ChannelTracing(Tracing):
    """The tracer of one traced channel."""

    def __init__(self, channel: Channel) -> None:
        provider = channel.settings.tracer_provider
        source = trace.get_tracer_provider() if provider is None else cast(trace.TracerProvider, provider)
        self.tracer = source.get_tracer(TRACER_NAME, __version__)
        self.channel = channel
        self.attributes = _transport_attributes(channel.transport)
        self._created: OrderedDict[str, tuple[SpanContext, str]] = OrderedDict()
        self._lock = threading.Lock()

    # -- requests -------------------------------------------------------------------------------

    def round_trip(self, method: str, request_id: int, params: dict[str, Any], send: Send) -> dict[str, Any]:
        tool = params.get("name") if method == "tools/call" else None
        attributes: dict[str, Any] = {
            **self.attributes,
            "mcp.method.name": method,
            "jsonrpc.request.id": str(request_id),
        }
        agreed = self.channel.agreed
        meta = params.get("_meta")
        version = agreed.version if agreed is not None else None
        if version is None and isinstance(meta, Mapping):
            version = meta.get(META_PROTOCOL_VERSION)  # the probe that finds the era
        if isinstance(version, str):
            attributes["mcp.protocol.version"] = version
        if isinstance(tool, str):
            attributes["gen_ai.tool.name"] = tool
            attributes["gen_ai.operation.name"] = "execute_tool"
        task_id = params.get("taskId")
        if isinstance(task_id, str):
            attributes["mcp.task.id"] = short_id(task_id)
        name = f"{method} {tool}" if isinstance(tool, str) else method
        with self.tracer.start_as_current_span(
            name, kind=SpanKind.CLIENT, attributes=attributes, record_exception=False, set_status_on_exception=False
        ) as span:
            watching = RETRY_WATCH.set(lambda retry, delay, error: _retried(span, retry, delay, error))
            try:
                result = send(self.inject(params))
            except BaseException as exc:
                _fail(span, error_type(exc), str(exc) if isinstance(exc, Exception) else None)
                raise
            finally:
                RETRY_WATCH.reset(watching)
            if method == "tools/call":
                self._called(span, tool, result)
            return result

    def _called(self, span: Span, tool: object, result: Mapping[str, Any]) -> None:
        if result.get("isError") is True:
            _fail(span, "tool_error")
        task_id = _created_task(result)
        if task_id is not None:
            span.set_attribute("mcp.task.id", short_id(task_id))
            with self._lock:
                self._created[task_id] = (span.get_span_context(), tool if isinstance(tool, str) else "")
                while len(self._created) > REMEMBERED:
                    self._created.popitem(last=False)

    def inject(self, params: dict[str, Any]) -> dict[str, Any]:
        carrier: dict[str, str] = {}
        W3C.inject(carrier)
        if self.channel.settings.propagate_baggage:
            BAGGAGE.inject(carrier)
        if not carrier:
            return params
        meta = params.get("_meta")
        return {**params, "_meta": {**meta, **carrier} if isinstance(meta, Mapping) else carrier}

    # -- waits ----------------------------------------------------------------------------------

    def task(self, task_id: str, saved: Saved | None = None) -> TaskTrace:
        with self._lock:
            created = self._created.get(task_id)
        if created is None and saved is not None:
            return TaskSpan(self.tracer, task_id, None, _resumed(saved()))
        return TaskSpan(self.tracer, task_id, created)

    def creation_context(self, task_id: str) -> dict[str, str] | None:
        with self._lock:
            created = self._created.get(task_id)
        if created is None:
            return None
        carrier: dict[str, str] = {}
        W3C.inject(carrier, trace.set_span_in_context(trace.NonRecordingSpan(created[0])))
        return carrier or None


def _resumed(ref: TaskRef | None) -> tuple[SpanContext | None, str] | None:
    """From a stored ref: the creating call's span context (None unless it kept a valid one) and
    the tool; None without a ref.
    """
    if ref is None:
        return None
    creator = None
    if ref.trace_context:
        found = trace.get_current_span(W3C.extract(ref.trace_context)).get_span_context()
        creator = found if found.is_valid else None
    return creator, ref.tool or ""


def _retried(span: Span, retry: int, delay: float, error: TransportError) -> None:
    span.add_event(
        "retry", {"mcp.retry.attempt": retry, "mcp.retry.delay_s": delay, "error.type": type(error).__name__}
    )


class TaskSpan(TaskTrace):
    """One wait's span, current while the wait runs (`within`), so that its requests are its children."""

    def __init__(
        self,
        tracer: trace.Tracer,
        task_id: str,
        created: tuple[SpanContext, str] | None,
        resumed: tuple[SpanContext | None, str] | None = None,
    ) -> None:
        self.tracer = tracer
        self.task_id = task_id
        self.created = created
        self.resumed = resumed
        self.span: Span = trace.INVALID_SPAN
        self._token: object = None

    def start(self) -> None:
        links: list[Link] = []
        parent = None
        name = "task"
        attributes: dict[str, Any] = {"mcp.task.id": short_id(self.task_id)}
        if self.resumed is not None:  # created in another process: a new trace, linked to that call
            saved, tool = self.resumed
            name = f"task {tool}" if tool else name
            if saved is not None:
                links.append(Link(saved, {"mcp.task.resumed": True}))
                attributes["mcp.task.resumed"] = True
        elif self.created is not None:
            creator, tool = self.created
            if tool:
                name = f"task {tool}"
            if trace.get_current_span().get_span_context().is_valid:
                links.append(Link(creator))  # the caller's span is the parent: link the creation
            else:
                parent = trace.set_span_in_context(trace.NonRecordingSpan(creator))  # one trace from the call on
        self.span = self.tracer.start_span(
            name,
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=links,
            record_exception=False,
            set_status_on_exception=False,
        )

    @contextmanager
    def within(self) -> Iterator[None]:
        token = otel_context.attach(trace.set_span_in_context(self.span))
        try:
            yield
        finally:
            otel_context.detach(token)

    def __enter__(self) -> TaskSpan:
        self.start()
        self._token = otel_context.attach(trace.set_span_in_context(self.span))
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            otel_context.detach(self._token)  # type: ignore[arg-type]
        finally:
            self.end(exc)

    def end(self, exc: BaseException | None = None) -> None:
        if exc is not None:
            _fail(self.span, type(exc).__name__, str(exc) if isinstance(exc, Exception) else None)
        self.span.end()

    def status(self, status: Status) -> None:
        self.span.add_event("task.status", {"mcp.task.status": status.wire_status})

    def input_round(self, answered: int) -> None:
        self.span.add_event("task.input", {"mcp.task.input.answered": answered})

    def finish(self, status: Status) -> None:
        self.span.set_attribute("mcp.task.status", status.wire_status)
        failed = OUTCOME_ERRORS.get(status.status)
        if status.status is TaskState.COMPLETED and isinstance(status.result, dict):
            failed = "tool_error" if status.result.get("isError") is True else None
        if failed is not None:
            _fail(self.span, failed)
