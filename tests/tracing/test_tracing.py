"""Tracing (``trace=True``): request spans per the MCP semantic conventions, one span per task wait,
trace context in ``params._meta``, the reference server's spans in the same trace; and nothing at
all (no import, nothing sent) when a client does not trace.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import baggage, propagate, trace
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import mcp_tasks as mt
from mcp_tasks._redact import short_id
from mcp_tasks.server import Server, ToolError
from tests.conftest import ROOT, Harness, accept_form, release
from tests.foreign.http_servers import Conn, ForeignServer, Request, completed, created, result, tool_result
from tests.foreign.legacy_http_tasks import LegacyHttpTasksServer


class Ended(SpanProcessor):
    """Wakes a test when a span ends in another thread (the server's task threads)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.changed = threading.Condition()

    def on_end(self, span: ReadableSpan) -> None:
        with self.changed:
            self.names.append(span.name)
            self.changed.notify_all()

    def wait_for(self, name: str, timeout: float = 30.0) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: name in self.names, timeout), f"no span {name!r} ended"


EXPORTER = InMemorySpanExporter()
ENDED = Ended()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
PROVIDER.add_span_processor(ENDED)


@pytest.fixture(scope="module", autouse=True)
def global_provider() -> None:
    """The reference server traces with the global provider: this module's, for the whole run."""
    trace.set_tracer_provider(PROVIDER)
    assert trace.get_tracer_provider() is PROVIDER, "another tracer provider was set globally first"


@pytest.fixture(autouse=True)
def spans() -> Iterator[InMemorySpanExporter]:
    EXPORTER.clear()
    with ENDED.changed:
        ENDED.names.clear()
    yield EXPORTER
    EXPORTER.clear()


@pytest.fixture(params=["direct", "stdio", "http"])
def traced(request: pytest.FixtureRequest) -> Iterator[Harness]:
    harness = Harness(request.param)
    yield harness
    harness.close()


def named(name: str, kind: SpanKind | None = None) -> list[ReadableSpan]:
    found = [s for s in EXPORTER.get_finished_spans() if s.name == name and (kind is None or s.kind == kind)]
    return found


def one(name: str, kind: SpanKind | None = None) -> ReadableSpan:
    found = named(name, kind)
    assert len(found) == 1, [s.name for s in EXPORTER.get_finished_spans()]
    return found[0]


def attr(item: ReadableSpan | Event) -> dict[str, Any]:
    return dict(item.attributes or {})


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.span_id)


def trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.trace_id)


def everything_said(span: ReadableSpan) -> str:
    """All the text a span carries: name, attributes, events, links, status."""
    parts: list[Any] = [span.name, dict(span.attributes or {}), span.status.description]
    parts += [(e.name, dict(e.attributes or {})) for e in span.events]
    parts += [dict(link.attributes or {}) for link in span.links]
    return repr(parts)


def assert_no_full_id(task_id: str) -> None:
    for span in EXPORTER.get_finished_spans():
        assert task_id not in everything_said(span), span.name


def test_a_wait_is_one_span_parent_of_its_requests_and_the_server_spans_are_children(traced: Harness) -> None:
    client = traced.client(trace=True)
    status = mt.call_tool(client, "slow_compute", {"label": "x"})
    assert isinstance(status, mt.Status)
    assert mt.await_task(client, status)["structuredContent"] == {"label": "x", "computed": True}
    call = one("tools/call slow_compute", SpanKind.CLIENT)
    wait = one("task slow_compute")
    gets = named("tasks/get", SpanKind.CLIENT)
    assert gets and all(parent_id(get) == span_id(wait) for get in gets)
    assert parent_id(wait) == span_id(call)  # no span of the caller's: the wait goes on the call's trace
    others = [s for s in EXPORTER.get_finished_spans() if s.name != "server/discover"]  # the era's probe
    assert {trace_id(s) for s in others} == {trace_id(call)}
    attributes = attr(call)
    transport = {"direct": "inproc", "stdio": "pipe", "http": "tcp"}[traced.transport]
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "slow_compute"
    assert attributes["jsonrpc.request.id"].isdigit()
    assert attributes["mcp.protocol.version"] == "2026-07-28"
    assert attributes["network.transport"] == transport
    assert attributes["mcp.task.id"] == attr(wait)["mcp.task.id"] == short_id(status.task_id)
    if traced.transport == "http":
        assert attributes["server.address"] == "127.0.0.1" and isinstance(attributes["server.port"], int)
    else:
        assert "server.address" not in attributes
    assert wait.kind == SpanKind.INTERNAL and wait.status.status_code == StatusCode.UNSET
    assert attr(wait)["mcp.task.status"] == "completed"
    assert [attr(e)["mcp.task.status"] for e in wait.events][-1] == "completed"
    assert attr(gets[0])["mcp.task.id"] == short_id(status.task_id)
    if traced.transport != "stdio":  # the server runs in this process: its spans are here too
        served = one("tools/call slow_compute", SpanKind.SERVER)
        assert parent_id(served) == span_id(call) and trace_id(served) == trace_id(call)
        served_gets = named("tasks/get", SpanKind.SERVER)
        assert {parent_id(s) for s in served_gets} == {span_id(g) for g in gets}
        ENDED.wait_for("execute_tool slow_compute")  # it ends in the task's thread, after the task did
        ran = one("execute_tool slow_compute", SpanKind.INTERNAL)  # the tool, in the server's task thread
        assert parent_id(ran) == span_id(served) and attr(ran)["mcp.task.id"] == short_id(status.task_id)
    assert_no_full_id(status.task_id)


def test_inside_a_span_of_the_callers_the_wait_is_its_child_linked_to_the_creating_call(traced: Harness) -> None:
    client = traced.client(trace=True)
    tracer = PROVIDER.get_tracer("test")
    with tracer.start_as_current_span("job") as job:
        mt.call_and_await(client, "slow_compute")
    call = one("tools/call slow_compute", SpanKind.CLIENT)
    wait = one("task slow_compute")
    assert parent_id(call) == parent_id(wait) == job.get_span_context().span_id
    assert [link.context.span_id for link in wait.links] == [span_id(call)]


def test_the_server_gets_the_trace_context_in_meta_and_nothing_without_trace(traced: Harness) -> None:
    tracer = PROVIDER.get_tracer("test")
    plain = traced.client()
    client = traced.client(trace=True)
    with tracer.start_as_current_span("job"):
        untraced = plain.call_tool("echo_meta")["structuredContent"]["meta"]
        meta = client.call_tool("echo_meta")["structuredContent"]["meta"]
    assert not {"traceparent", "tracestate", "baggage"} & set(untraced)
    call = one("tools/call echo_meta", SpanKind.CLIENT)
    assert call.context is not None
    assert meta["traceparent"].split("-")[1:3] == [f"{call.context.trace_id:032x}", f"{call.context.span_id:016x}"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"  # the envelope is still whole


def test_the_callers_baggage_stays_home_unless_the_client_is_told_to_propagate_it(traced: Harness) -> None:
    # OpenTelemetry's default global propagator sends W3C baggage; a traced client does not.
    assert "baggage" in propagate.get_global_textmap().fields
    tracer = PROVIDER.get_tracer("test")
    token = otel_context.attach(baggage.set_baggage("user.email", "ada@example.com"))
    try:
        with tracer.start_as_current_span("job"):
            default = traced.client(trace=True).call_tool("echo_meta")["structuredContent"]["meta"]
            told = traced.client(trace=True, propagate_baggage=True).call_tool("echo_meta")["structuredContent"]["meta"]
    finally:
        otel_context.detach(token)
    assert "traceparent" in default and "baggage" not in default, default
    assert "ada@example.com" not in repr(default)
    assert "traceparent" in told and told["baggage"] == "user.email=ada%40example.com", told


def test_propagate_baggage_is_a_typed_option_of_a_traced_client() -> None:
    with pytest.raises(TypeError, match="propagate_baggage must be"):
        mt.Client.direct(Server(), trace=True, propagate_baggage="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="needs a traced client"):
        mt.Client.direct(Server(), propagate_baggage=True)


def test_input_rounds_are_events_of_the_wait(traced: Harness) -> None:
    client = traced.client(trace=True, input_handlers=mt.InputHandlers(form=accept_form))
    mt.call_and_await(client, "confirm_delete")
    wait = one("task confirm_delete")
    names = [e.name for e in wait.events]
    assert "task.input" in names
    statuses = [attr(e)["mcp.task.status"] for e in wait.events if e.name == "task.status" and e.attributes]
    assert "input_required" in statuses and statuses[-1] == "completed"
    updates = named("tasks/update", SpanKind.CLIENT)
    assert updates and all(parent_id(u) == span_id(wait) for u in updates)


def test_a_failed_task_and_a_timed_out_wait_mark_their_spans(traced: Harness) -> None:
    client = traced.client(trace=True)
    with pytest.raises(mt.TaskFailed):
        mt.call_and_await(client, "protocol_error_job")
    failed = one("task protocol_error_job")
    assert failed.status.status_code == StatusCode.ERROR
    assert attr(failed)["error.type"] == "task_failed"
    assert mt.call_and_await(client, "failing_job")["isError"] is True
    tool_failed = one("task failing_job")
    assert tool_failed.status.status_code == StatusCode.ERROR
    assert attr(tool_failed)["error.type"] == "tool_error"
    status = mt.call_tool(client, "slow_compute", {"block": True})
    assert isinstance(status, mt.Status)
    with pytest.raises(mt.TaskTimeout):
        mt.wait_task(client, status, timeout=0.2, poll_interval=0.05)
    release(client)
    timed_out = named("task slow_compute")[-1]
    assert timed_out.status.status_code == StatusCode.ERROR
    assert attr(timed_out)["error.type"] == "TaskTimeout"
    assert_no_full_id(status.task_id)


def test_error_types_of_requests() -> None:
    server = Server(latency={"tools/list": 60.0})

    @server.tool()
    def refuse(ctx: Any) -> dict[str, Any]:
        raise ToolError("no")

    with mt.Client.direct(server, tracer_provider=PROVIDER) as client:
        with pytest.raises(mt.McpError):
            client.request("no/such/method")
        assert client.call_tool("refuse")["isError"] is True
        with pytest.raises(mt.RequestTimeout):
            client.list_tools(timeout=0.2)
    timed_out = one("tools/list", SpanKind.CLIENT)
    assert attr(timed_out)["error.type"] == "RequestTimeout" and timed_out.status.status_code == StatusCode.ERROR
    missing = one("no/such/method", SpanKind.CLIENT)
    assert attr(missing)["error.type"] == "-32601" and missing.status.status_code == StatusCode.ERROR
    refused = one("tools/call refuse", SpanKind.CLIENT)
    assert attr(refused)["error.type"] == "tool_error" and refused.status.status_code == StatusCode.ERROR
    assert attr(one("tools/call refuse", SpanKind.SERVER))["error.type"] == "tool_error"
    assert attr(one("no/such/method", SpanKind.SERVER))["error.type"] == "-32601"
    server.close()


def test_a_foreign_server_gets_traceparent_and_retries_are_events_of_their_request() -> None:
    """A socket-level server (no mcp_tasks code): the context it receives, and a 503 retried."""
    task_id = "task-0123456789-abcdef-secret"
    busy = [True]

    def handler(request: Request, conn: Conn) -> None:
        method = request.rpc_method
        if method == "tools/call":
            conn.json(created(request, task_id) if request.params.get("name") == "job" else tool_result(request))
        elif method == "tasks/get" and busy and busy.pop():
            conn.body(b"busy", "503 Service Unavailable", [("Content-Type", "text/plain")])
        elif method == "tasks/get":
            conn.json(result(request, completed(task_id)))
        else:
            conn.empty()

    retry = mt.Retry(2, backoff=0.01, jitter=0.0)
    with (
        ForeignServer(handler) as http,
        mt.Client.http(http.url, protocol="2026-07-28", trace=True, retries=retry) as client,
    ):
        assert mt.call_and_await(client, "job")["content"][0]["text"] == "done"
    sent = {(r.rpc_method, r.number): r.params.get("_meta", {}) for r in http.seen if r.rpc_method}
    call = one("tools/call job", SpanKind.CLIENT)
    assert call.context is not None
    call_meta = next(meta for (method, _), meta in sent.items() if method == "tools/call")
    assert call_meta["traceparent"].split("-")[2] == f"{call.context.span_id:016x}"
    get = one("tasks/get", SpanKind.CLIENT)
    assert get.context is not None
    gets = [meta for (method, _), meta in sent.items() if method == "tasks/get"]
    assert len(gets) == 2 and all(m["traceparent"].split("-")[2] == f"{get.context.span_id:016x}" for m in gets)
    retries = [e for e in get.events if e.name == "retry"]
    assert len(retries) == 1 and attr(retries[0])["error.type"] == "TransportError"
    assert get.status.status_code == StatusCode.UNSET  # the retry worked
    assert attr(get)["server.port"] == http.port
    assert_no_full_id(task_id)


def test_bad_tracing_options_are_refused_before_anything_starts() -> None:
    with pytest.raises(TypeError, match="trace must be"):
        mt.Client.direct(Server(), trace="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tracer_provider"):
        mt.Client.direct(Server(), tracer_provider=object())  # type: ignore[arg-type]


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_without_trace_nothing_is_imported() -> None:
    done = _run(
        """
        import sys
        import mcp_tasks as mt
        from mcp_tasks.server import Server
        assert "opentelemetry" not in sys.modules, "import mcp_tasks"
        server = Server()
        server.tool(task="optional")(lambda ctx: {"ok": True})
        with mt.Client.direct(server, trace=False) as client:
            client.list_tools()
            mt.call_and_await(client, "<lambda>")
        assert not [m for m in sys.modules if m.startswith("opentelemetry")], "a call"
        print("clean")
        """
    )
    assert done.returncode == 0, done.stderr
    assert "clean" in done.stdout


def test_trace_without_opentelemetry_names_the_extra_and_starts_nothing() -> None:
    done = _run(
        """
        import sys

        class Blocker:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ModuleNotFoundError(f"No module named {name!r}")
                return None

        sys.meta_path.insert(0, Blocker())
        import mcp_tasks as mt
        try:  # a command that cannot start: the options are refused before it is tried
            mt.Client.stdio("/nonexistent/mcp-server", trace=True)
        except ImportError as exc:
            print("refused:", exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "refused: trace=True needs OpenTelemetry: pip install 'mcp_tasks[otel]'" in done.stdout


def test_a_cancelled_task_marks_the_wait_span() -> None:
    harness = Harness("direct")
    try:
        client = harness.client(trace=True)
        status = mt.call_tool(client, "slow_compute", {"block": True})
        assert isinstance(status, mt.Status)
        mt.cancel_task(client, status)
        with pytest.raises(mt.TaskCancelled):
            mt.await_task(client, status)
        release(client)
    finally:
        harness.close()
    wait = one("task slow_compute")
    assert attr(wait)["error.type"] == "task_cancelled" and wait.status.status_code == StatusCode.ERROR
    assert one("tasks/cancel", SpanKind.CLIENT).parent is None  # asked outside any wait
    assert_no_full_id(status.task_id)


def test_several_waits_in_one_thread_each_own_their_requests() -> None:
    """How a loop over many tasks (wait_all) uses the hook: start, `within` per step, end."""
    harness = Harness("direct")
    try:
        client = harness.client(trace=True)
        first, second = (mt.call_tool(client, "slow_compute", {"label": label}) for label in ("a", "b"))
        assert isinstance(first, mt.Status) and isinstance(second, mt.Status)
        traces = [client.channel.tracing.task(first.task_id), client.channel.tracing.task(second.task_id)]
        for each in traces:
            each.start()
        for each, task in ((traces[1], second), (traces[0], first), (traces[1], second)):
            with each.within():
                mt.get_task(client, task)
        for each in traces:
            each.end()
    finally:
        harness.close()
    waits = named("task slow_compute")
    by_task = {attr(w)["mcp.task.id"]: span_id(w) for w in waits}
    gets = named("tasks/get", SpanKind.CLIENT)
    assert len(gets) == 3
    assert all(parent_id(get) == by_task[attr(get)["mcp.task.id"]] for get in gets)


def test_a_legacy_session_is_traced_too() -> None:
    """A 2025-11-25 foreign server (no envelope in _meta): the context still goes in _meta."""
    server = LegacyHttpTasksServer()
    server.start()
    try:
        with mt.Client.http(server.url, trace=True) as client:
            assert mt.call_and_await(client, "quick")["isError"] is False
    finally:
        server.close()
    requests = server.journal.events(lambda e: e["event"] == "request" and e["method"] in ("tools/call", "tasks/get"))
    assert {e["method"] for e in requests} == {"tools/call", "tasks/get"}
    spans = {span_id(s): s for s in EXPORTER.get_finished_spans() if s.kind == SpanKind.CLIENT}
    for event in requests:
        sent = int(event["params"]["_meta"]["traceparent"].split("-")[2], 16)
        assert spans[sent].name.startswith(event["method"])
        assert attr(spans[sent])["mcp.protocol.version"] == "2025-11-25"
    wait = one("task quick")
    assert all(parent_id(spans[s]) == span_id(wait) for s in spans if spans[s].name == "tasks/get")


def test_a_listening_wait_sends_its_context_on_the_listen_request() -> None:
    harness = Harness("direct")
    try:
        client = harness.client(trace=True)
        # Not followed from its creation (that listen is the client's, opened before any wait):
        # the wait opens the stream itself.
        status = mt.call_tool(client, "slow_compute", follow=False)
        assert isinstance(status, mt.Status)
        mt.wait_task(client, status, listen=True)
    finally:
        harness.close()
    ENDED.wait_for("subscriptions/listen")
    wait = one("task slow_compute")
    assert parent_id(one("subscriptions/listen", SpanKind.SERVER)) == span_id(wait)


def test_the_listen_that_follows_a_task_from_its_creation_carries_the_creating_calls_context() -> None:
    """Issue 36: the keeper's listen (no wait yet) went out with no trace context at all; it now
    carries the context the task was made in (a wait's own listen carries the wait's, above).
    """
    listened: list[dict[str, Any]] = []
    heard = threading.Event()

    def record(method: str, params: dict[str, Any]) -> None:
        if method == "subscriptions/listen":
            listened.append(params)
            heard.set()

    harness = Harness("direct")
    try:
        client = harness.client(trace=True)
        assert harness.server is not None
        harness.server.on_request = record
        tracer = PROVIDER.get_tracer("test")
        with tracer.start_as_current_span("batch") as batch:
            status = mt.call_tool(client, "slow_compute", {"block": True})
        assert isinstance(status, mt.Status)
        assert heard.wait(30), "the task made was not followed on a listen stream"
        release(client)
        mt.wait_task(client, status, listen=True)
    finally:
        harness.close()
    sent = listened[0]["_meta"].get("traceparent")
    assert sent is not None, "the keeper's listen carried no trace context"
    _, trace_hex, parent_hex, _ = sent.split("-")
    assert int(trace_hex, 16) == batch.get_span_context().trace_id
    assert int(parent_hex, 16) == batch.get_span_context().span_id
