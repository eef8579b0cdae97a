"""A traced client with ``store=`` keeps the W3C trace context of the ``tools/call`` that created a
task with its `TaskRef`; a wait for that task in another process (``mt.resume``, or ``wait_task``
with a store on a traced client) links its span to that call. A real second process with the SDK's
in-memory exporter, against the reference server and a foreign one; the ref's round trip; a store
file written before trace contexts were kept; untraced clients read and send nothing more.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import mcp_tasks as mt
from mcp_tasks._redact import short_id
from mcp_tasks.server import HttpServer, Server, serve_http
from tests.conftest import ROOT
from tests.foreign.modern_http_tasks import ModernHttpTasksServer
from tests.memory_store import MemoryTaskStore

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
TASK = "task-0123456789abcdef"
PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def traceparent(span: ReadableSpan) -> str:
    context = span.get_span_context()
    assert context is not None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


class Traced:
    """A tracer provider of the test's own (the global one belongs to tests/tracing/test_tracing.py)."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.exporter.get_finished_spans() if span.name == name]


@pytest.fixture
def traced() -> Iterator[Traced]:
    found = Traced()
    yield found
    found.provider.shutdown()


class Reference:
    """The reference server over HTTP with ``ask``, a task that needs a name."""

    def __init__(self) -> None:
        self.server = Server(poll_interval=0.02)

        @self.server.tool(task="required")
        def ask(ctx: Any) -> dict[str, Any]:
            answer = ctx.elicit("name", "What is your name?", SCHEMA)
            return {"name": answer["content"]["name"]}

        self.http: HttpServer = serve_http(self.server)
        self.url = self.http.url

    def close(self) -> None:
        self.http.close()
        self.server.close()


@pytest.fixture(params=["reference", "foreign"])
def peer(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "reference":
        reference = Reference()
        yield reference.url
        reference.close()
    else:
        foreign = ModernHttpTasksServer()
        foreign.start()
        yield foreign.url
        foreign.close()


@pytest.fixture
def sqlite(tmp_path: Path) -> mt.SqliteTaskStore:
    return mt.SqliteTaskStore(tmp_path / "tasks.sqlite3")


# -- the ref ---------------------------------------------------------------------------------------


def test_a_refs_trace_context_goes_to_json_and_back() -> None:
    ref = mt.TaskRef("http://127.0.0.1:9/mcp", TASK, trace_context={"traceparent": PARENT, "tracestate": "k=v"})
    again = mt.TaskRef.from_json(ref.to_json())
    assert again == ref and again.trace_context == {"traceparent": PARENT, "tracestate": "k=v"}
    assert json.loads(ref.to_json())["format"] == 1  # an optional key: older readers skip it
    assert hash(again) == hash(ref)
    assert again.with_status(mt.Status.from_map({"taskId": TASK, "status": "working"})).trace_context == {
        "traceparent": PARENT,
        "tracestate": "k=v",
    }
    plain = mt.TaskRef("http://127.0.0.1:9/mcp", TASK)
    assert plain.trace_context is None and "traceContext" not in json.loads(plain.to_json())


def test_a_ref_keeps_the_w3c_headers_only_and_says_what_is_wrong() -> None:
    ref = mt.TaskRef("x", TASK, trace_context={"traceparent": PARENT, "baggage": "user=secret"})
    assert ref.trace_context == {"traceparent": PARENT}
    with pytest.raises(ValueError, match="needs a 'traceparent'"):
        mt.TaskRef("x", TASK, trace_context={"tracestate": "k=v"})
    with pytest.raises(ValueError, match=r"trace_context\['traceparent'\] must be a non-empty string"):
        mt.TaskRef("x", TASK, trace_context={"traceparent": 7})
    with pytest.raises(ValueError, match="must be a mapping"):
        mt.TaskRef("x", TASK, trace_context="00-abc")
    saved = json.loads(mt.TaskRef("x", TASK).to_json())
    saved["traceContext"] = ["00-abc"]
    with pytest.raises(ValueError, match="traceContext must be an object"):
        mt.TaskRef.from_json(json.dumps(saved))


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_a_store_keeps_the_trace_context_through_status_updates(kind: str, tmp_path: Path) -> None:
    store: mt.TaskStore = mt.SqliteTaskStore(tmp_path / "s.sqlite3") if kind == "sqlite" else MemoryTaskStore()
    store.record(mt.TaskRef("http://127.0.0.1:9/mcp", TASK, trace_context={"traceparent": PARENT}))
    store.update(TASK, mt.Status.from_map({"taskId": TASK, "status": "working"}))
    kept = store.get(TASK)
    assert kept is not None and kept.trace_context == {"traceparent": PARENT}
    assert [ref.trace_context for ref in store.unfinished()] == [{"traceparent": PARENT}]


OLD_TABLES = """
CREATE TABLE tasks (task_id TEXT PRIMARY KEY, finished INTEGER NOT NULL, created_at REAL NOT NULL,
    updated_at REAL NOT NULL, ref TEXT NOT NULL);
CREATE INDEX tasks_finished ON tasks (finished, updated_at);
CREATE TABLE answers (task_id TEXT NOT NULL, key TEXT NOT NULL, response TEXT NOT NULL,
    acknowledged INTEGER NOT NULL, written_at REAL NOT NULL, PRIMARY KEY (task_id, key));
CREATE TABLE leases (task_id TEXT PRIMARY KEY, holder TEXT NOT NULL, expires REAL NOT NULL);
PRAGMA user_version=1;
"""
OLD_RECORD = {
    "format": 1,
    "endpoint": "http://127.0.0.1:9/mcp",
    "taskId": "old-task-0123456789",
    "era": "modern",
    "tool": "export",
    "createdAt": 1000.0,
    "lastStatus": None,
}


def test_a_store_file_from_before_trace_contexts_is_read_and_written(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as db:  # the layout and record the first release of the store wrote
        db.executescript(OLD_TABLES)
        db.execute(
            "INSERT INTO tasks VALUES (?, 0, 1000.0, 1000.0, ?)", ("old-task-0123456789", json.dumps(OLD_RECORD))
        )
    db.close()
    store = mt.SqliteTaskStore(path)
    old = store.get("old-task-0123456789")
    assert old is not None and old.trace_context is None and old.tool == "export"
    store.record(mt.TaskRef("http://127.0.0.1:9/mcp", TASK, created_at=2000.0, trace_context={"traceparent": PARENT}))
    assert [(ref.task_id, ref.trace_context) for ref in store.unfinished()] == [
        ("old-task-0123456789", None),
        (TASK, {"traceparent": PARENT}),
    ]
    with sqlite3.connect(path) as db:  # still a file the first release opens: same schema version
        assert db.execute("PRAGMA user_version").fetchone()[0] == 1
        row = db.execute("SELECT ref FROM tasks WHERE task_id = ?", (TASK,)).fetchone()
    db.close()
    assert json.loads(row[0])["format"] == 1


# -- recording and linking in this process ---------------------------------------------------------


def test_a_traced_client_keeps_the_creating_calls_context(
    peer: str, sqlite: mt.SqliteTaskStore, traced: Traced
) -> None:
    with mt.Client.http(peer, store=sqlite, tracer_provider=traced.provider) as client:
        task = mt.call_tool(client, "ask")
        assert isinstance(task, mt.Status)
    (call,) = traced.named("tools/call ask")
    ref = sqlite.get(task.task_id)
    assert ref is not None and ref.trace_context == {"traceparent": traceparent(call)}
    assert task.task_id not in json.dumps(ref.trace_context)


def test_an_untraced_client_keeps_no_context_and_its_wait_reads_no_record(peer: str) -> None:
    class Counting(MemoryTaskStore):
        gets = 0

        def get(self, task_id: str) -> mt.TaskRef | None:
            Counting.gets += 1
            return super().get(task_id)

    store = Counting()
    with mt.Client.http(peer, store=store) as client:
        task = mt.call_tool(client, "ask")
        assert isinstance(task, mt.Status)
        kept = store.get(task.task_id)
        assert kept is not None and kept.trace_context is None
        assert mt.wait_task(client, task, input="return", timeout=30).status is mt.TaskState.INPUT_REQUIRED
    assert Counting.gets == 1  # the test's own


def test_a_wait_on_the_creating_channel_is_not_a_resume(peer: str, sqlite: mt.SqliteTaskStore, traced: Traced) -> None:
    with mt.Client.http(peer, store=sqlite, tracer_provider=traced.provider) as client:
        task = mt.call_tool(client, "ask")
        assert isinstance(task, mt.Status)
        mt.wait_task(client, task, input="return", timeout=30)
    (call,) = traced.named("tools/call ask")
    (wait,) = traced.named("task ask")
    assert wait.parent is not None and wait.parent.span_id == call.get_span_context().span_id  # type: ignore[union-attr]
    assert wait.attributes is not None and "mcp.task.resumed" not in wait.attributes


def test_another_client_with_the_store_links_its_wait(peer: str, sqlite: mt.SqliteTaskStore, traced: Traced) -> None:
    with mt.Client.http(peer, store=sqlite, tracer_provider=traced.provider) as creator:
        task = mt.call_tool(creator, "ask")
        assert isinstance(task, mt.Status)
    with mt.Client.http(peer, store=sqlite, tracer_provider=traced.provider) as other:
        mt.wait_task(other, task.task_id, input="return", timeout=30)
    (call,) = traced.named("tools/call ask")
    (wait,) = traced.named("task ask")
    assert [(link.context.trace_id, link.context.span_id) for link in wait.links] == [
        (call.context.trace_id, call.context.span_id)
    ]
    assert wait.parent is None and wait.context.trace_id != call.context.trace_id
    assert wait.attributes is not None and wait.attributes["mcp.task.resumed"] is True


def answer(status: mt.Status) -> dict[str, Any]:
    return {key: {"action": "accept", "content": {"name": "resumed"}} for key in status.input_requests}


def test_resume_links_from_the_ref_it_is_given_without_a_store(
    peer: str, sqlite: mt.SqliteTaskStore, traced: Traced
) -> None:
    with mt.Client.http(peer, store=sqlite, tracer_provider=traced.provider) as creator:
        task = mt.call_tool(creator, "ask")
        assert isinstance(task, mt.Status)
    ref = sqlite.get(task.task_id)
    assert ref is not None
    mt.resume(ref, tracer_provider=traced.provider, input=answer, timeout=30)  # no store: the ref's context
    (call,) = traced.named("tools/call ask")
    (wait,) = traced.named("task ask")
    assert [link.context.span_id for link in wait.links] == [call.context.span_id]
    assert sqlite.get(task.task_id) == ref  # nothing recorded without a store


def test_a_damaged_saved_context_leaves_the_wait_unlinked(peer: str, traced: Traced) -> None:
    store = MemoryTaskStore()
    with mt.Client.http(peer, store=store) as creator:
        task = mt.call_tool(creator, "ask")
        assert isinstance(task, mt.Status)
    kept = store.get(task.task_id)
    assert kept is not None
    store.record(mt.TaskRef(kept.endpoint, kept.task_id, tool="ask", trace_context={"traceparent": "00-not-a-span"}))
    with mt.Client.http(peer, store=store, tracer_provider=traced.provider) as other:
        status = mt.wait_task(other, task.task_id, input="return", timeout=30)
    assert status.status is mt.TaskState.INPUT_REQUIRED
    (wait,) = traced.named("task ask")
    assert list(wait.links) == [] and wait.attributes is not None and "mcp.task.resumed" not in wait.attributes


# -- a real second process -------------------------------------------------------------------------

RESUMER = textwrap.dedent(
    """
    import json, sys
    import mcp_tasks as mt

    url, path, task_id, mode = sys.argv[1:]
    store = mt.SqliteTaskStore(path)

    def answer(status):
        return {key: {"action": "accept", "content": {"name": "resumed"}} for key in status.input_requests}

    if mode == "untraced":
        mt.resume(task_id, store=store, input=answer, timeout=60)
        print(json.dumps("resumed"))
        assert not [name for name in sys.modules if name.startswith("opentelemetry")], "imported"
        sys.exit(0)

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if mode == "resume":
        mt.resume(task_id, store=store, tracer_provider=provider, input=answer, timeout=60)
    else:
        with mt.Client.http(url, store=store, tracer_provider=provider) as client:
            assert mt.wait_task(client, task_id, input=answer, timeout=60).status is mt.TaskState.COMPLETED
    spans = [
        {
            "name": span.name,
            "trace": span.context.trace_id,
            "span": span.context.span_id,
            "parent": span.parent.span_id if span.parent else None,
            "links": [[link.context.trace_id, link.context.span_id, dict(link.attributes)] for link in span.links],
            "attributes": dict(span.attributes),
            "events": [dict(event.attributes) for event in span.events],
        }
        for span in exporter.get_finished_spans()
    ]
    print(json.dumps(spans))
    """
)


def run_resumer(url: str, path: Path, task_id: str, mode: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", RESUMER, url, str(path), task_id, mode],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("mode", ["resume", "wait"])
def test_a_wait_in_another_process_links_to_the_creating_call(
    peer: str, sqlite: mt.SqliteTaskStore, traced: Traced, mode: str
) -> None:
    with mt.Client.http(peer, store=sqlite, tracer_provider=traced.provider) as client:
        task = mt.call_tool(client, "ask")
        assert isinstance(task, mt.Status)
    (call,) = traced.named("tools/call ask")
    creator = call.get_span_context()
    assert creator is not None

    spans = run_resumer(peer, sqlite.path, task.task_id, mode)

    (wait,) = [span for span in spans if span["name"] == "task ask"]
    assert wait["links"] == [[creator.trace_id, creator.span_id, {"mcp.task.resumed": True}]]
    assert wait["attributes"]["mcp.task.resumed"] is True
    assert wait["attributes"]["mcp.task.id"] == short_id(task.task_id)
    assert wait["parent"] is None and wait["trace"] != creator.trace_id  # a trace of its own, linked
    requests = [span for span in spans if span["name"] in ("tasks/get", "tasks/update")]
    assert {span["name"] for span in requests} == {"tasks/get", "tasks/update"}  # it read, and answered
    assert all(span["parent"] == wait["span"] and span["trace"] == wait["trace"] for span in requests)
    assert task.task_id not in json.dumps(spans)  # never a full task id
    done = sqlite.get(task.task_id)
    assert done is not None and done.finished


def test_an_untraced_resume_of_a_traced_task_imports_nothing(
    peer: str, sqlite: mt.SqliteTaskStore, traced: Traced
) -> None:
    with mt.Client.http(peer, store=sqlite, tracer_provider=traced.provider) as client:
        task = mt.call_tool(client, "ask")
        assert isinstance(task, mt.Status)
    kept = sqlite.get(task.task_id)
    assert kept is not None and kept.trace_context is not None
    assert run_resumer(peer, sqlite.path, task.task_id, "untraced") == "resumed"
    done = sqlite.get(task.task_id)
    assert done is not None and done.finished
