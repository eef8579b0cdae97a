"""Tracing of many-task waits (issues 17 and 20): each task of `wait_all` / `as_completed` /
`wait_any` and each `TaskFuture` is one wait span, like `wait_task`'s, whose requests are its
children; nothing is traced (or imported) when the client does not trace.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import mcp_tasks as mt
from mcp_tasks._redact import short_id
from tests.conftest import ROOT, Harness, accept_form, release

EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()  # given to the clients: the global provider is test_tracing's
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))


@pytest.fixture(autouse=True)
def spans() -> Iterator[InMemorySpanExporter]:
    EXPORTER.clear()
    yield EXPORTER
    EXPORTER.clear()


@pytest.fixture(params=["direct", "stdio", "http"])
def traced(request: pytest.FixtureRequest) -> Iterator[Harness]:
    harness = Harness(request.param)
    yield harness
    harness.close()


def named(name: str, kind: SpanKind | None = None) -> list[ReadableSpan]:
    return [s for s in EXPORTER.get_finished_spans() if s.name == name and (kind is None or s.kind == kind)]


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.span_id)


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def task_attr(span: ReadableSpan) -> str:
    return str((span.attributes or {})["mcp.task.id"])


def waits_by_task(name: str = "task slow_compute") -> dict[str, ReadableSpan]:
    found = named(name, SpanKind.INTERNAL)
    by_task = {task_attr(w): w for w in found}
    assert len(by_task) == len(found), "one wait span per task"
    return by_task


def calls_by_task(name: str = "tools/call slow_compute") -> dict[str, ReadableSpan]:
    return {task_attr(c): c for c in named(name, SpanKind.CLIENT) if "mcp.task.id" in (c.attributes or {})}


def start(client: mt.Client, count: int, gate: str = "slow") -> list[mt.Status]:
    tasks = [mt.call_tool(client, "slow_compute", {"label": str(i), "block": True, "gate": gate}) for i in range(count)]
    return [t for t in tasks if isinstance(t, mt.Status)]


def assert_gets_are_children(waits: dict[str, ReadableSpan]) -> None:
    gets = named("tasks/get", SpanKind.CLIENT)
    assert gets
    for get in gets:
        assert parent_id(get) == span_id(waits[task_attr(get)])


def test_each_task_of_wait_all_is_one_span_child_of_its_call(traced: Harness) -> None:
    client = traced.client(server={"poll_interval": 0.05}, tracer_provider=PROVIDER)
    tasks = start(client, 3)
    release(client)
    statuses = mt.wait_all(client, tasks, timeout=30)
    assert {s.wire_status for s in statuses} == {"completed"}
    waits = waits_by_task()
    calls = calls_by_task()
    assert set(waits) == {short_id(t.task_id) for t in tasks} == set(calls)
    for short, wait in waits.items():
        assert parent_id(wait) == span_id(calls[short])  # no span of the caller's: the call's trace
        assert (wait.attributes or {})["mcp.task.status"] == "completed"
        assert wait.status.status_code == StatusCode.UNSET
        assert [(e.attributes or {}).get("mcp.task.status") for e in wait.events][-1] == "completed"
    assert_gets_are_children(waits)
    said = repr(
        [
            (s.name, dict(s.attributes or {}), [dict(e.attributes or {}) for e in s.events])
            for s in EXPORTER.get_finished_spans()
        ]
    )
    assert not any(t.task_id in said for t in tasks)


def test_inside_a_callers_span_the_waits_are_its_children_linked_to_their_calls() -> None:
    harness = Harness("direct")
    try:
        client = harness.client(server={"poll_interval": 0.05}, tracer_provider=PROVIDER)
        with PROVIDER.get_tracer("test").start_as_current_span("job") as job:
            tasks = start(client, 2)
            release(client)
            finished = list(mt.as_completed(client, tasks, timeout=30))
    finally:
        harness.close()
    assert len(finished) == 2
    calls = calls_by_task()
    for short, wait in waits_by_task().items():
        assert parent_id(wait) == job.get_span_context().span_id
        assert [link.context.span_id for link in wait.links] == [span_id(calls[short])]


def test_a_timed_out_set_marks_the_pending_spans_only(traced: Harness) -> None:
    client = traced.client(server={"poll_interval": 0.05}, tracer_provider=PROVIDER)
    pending = start(client, 2, gate="never")
    (done,) = start(client, 1, gate="now")
    release(client, "now")
    with pytest.raises(mt.TaskTimeout):
        mt.wait_all(client, [*pending, done], timeout=0.5)
    waits = waits_by_task()
    assert len(waits) == 3
    for task in pending:
        wait = waits[short_id(task.task_id)]
        assert wait.status.status_code == StatusCode.ERROR
        assert (wait.attributes or {})["error.type"] == "TaskTimeout"
    finished = waits[short_id(done.task_id)]
    assert (
        finished.status.status_code == StatusCode.UNSET
        and (finished.attributes or {})["mcp.task.status"] == "completed"
    )
    assert_gets_are_children(waits)


def test_wait_any_ends_every_span_and_failures_mark_theirs() -> None:
    harness = Harness("direct")
    try:
        client = harness.client(server={"poll_interval": 0.05}, tracer_provider=PROVIDER)
        (left,) = start(client, 1, gate="later")
        failing = mt.call_tool(client, "protocol_error_job")
        assert isinstance(failing, mt.Status)
        first = mt.wait_any(client, [left, failing], timeout=30)
        release(client, "later")
    finally:
        harness.close()
    assert first.task_id == failing.task_id
    failed = waits_by_task("task protocol_error_job")[short_id(failing.task_id)]
    assert failed.status.status_code == StatusCode.ERROR and (failed.attributes or {})["error.type"] == "task_failed"
    other = waits_by_task()[short_id(left.task_id)]  # no longer followed: ended, with no outcome
    assert other.status.status_code == StatusCode.UNSET and "mcp.task.status" not in (other.attributes or {})


def test_input_rounds_are_events_of_their_tasks_span(traced: Harness) -> None:
    client = traced.client(
        server={"poll_interval": 0.05}, tracer_provider=PROVIDER, input_handlers=mt.InputHandlers(form=accept_form)
    )
    (other,) = start(client, 1)
    asking = mt.call_tool(client, "confirm_delete")
    assert isinstance(asking, mt.Status)
    release(client)
    mt.wait_all(client, [other, asking], timeout=30)
    asked = waits_by_task("task confirm_delete")[short_id(asking.task_id)]
    assert "task.input" in [e.name for e in asked.events]
    assert "task.input" not in [e.name for e in waits_by_task()[short_id(other.task_id)].events]
    updates = named("tasks/update", SpanKind.CLIENT)
    assert updates and all(parent_id(u) == span_id(asked) for u in updates)


def test_a_futures_span_is_a_child_of_its_call_even_inside_a_callers_span(traced: Harness) -> None:
    client = traced.client(server={"poll_interval": 0.05}, tracer_provider=PROVIDER)
    with PROVIDER.get_tracer("test").start_as_current_span("job"):
        futures = [mt.submit(client, "slow_compute", {"label": str(i), "block": True}) for i in range(2)]
        release(client)
        results = [f.result(timeout=30) for f in futures]
    assert [r["structuredContent"]["label"] for r in results] == ["0", "1"]
    calls = calls_by_task()
    waits = waits_by_task()
    assert set(waits) == {short_id(str(f.task_id)) for f in futures}
    for short, wait in waits.items():
        assert parent_id(wait) == span_id(calls[short])
        assert (wait.attributes or {})["mcp.task.status"] == "completed"
    assert_gets_are_children(waits)


def test_without_trace_many_waits_and_futures_import_nothing() -> None:
    code = """
        import sys
        import mcp_tasks as mt
        from mcp_tasks.server import Server
        server = Server()
        server.tool(task="optional")(lambda ctx: {"ok": True})
        with mt.Client.direct(server) as client:
            tasks = [mt.call_tool(client, "<lambda>") for _ in range(2)]
            mt.wait_all(client, tasks, timeout=30)
            list(mt.as_completed(client, tasks, timeout=30))
            mt.submit(client, "<lambda>").result(timeout=30)
        assert not [m for m in sys.modules if m.startswith("opentelemetry")]
        print("clean")
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "clean" in done.stdout
