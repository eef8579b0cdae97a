"""Ctrl-C on a stdio target, in a real pseudo-terminal: the server is told (notifications/cancelled
for the request under way) and ended without the full exit grace, even a server that keeps running
after its input ends (as servers whose request threads keep them alive do). The time it takes is
printed, not asserted (timings belong in bench/). And ``--trace``: the command's spans on stderr.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_tasks import cli
from tests.cli.server import SERVER_MODULE, served_over_http
from tests.cli.test_commands import Terminal
from tests.foreign.legacy_stdio_tasks import Reports

SHOUT = ("call", "my_server:server", "shout", '{"text": "hi"}')


@pytest.fixture
def reports() -> Iterator[Reports]:
    made = Reports()
    yield made
    made.close()


@pytest.mark.parametrize("tool", ["block", "hold"], ids=["in-a-call", "in-a-task-wait"])
def test_ctrl_c_on_stdio_tells_the_server_and_ends_it_without_the_grace(
    reports: Reports, tmp_path: Path, tool: str
) -> None:
    slow_get = " --get-delay 3600" if tool == "hold" else ""  # Ctrl-C lands while tasks/get is under way
    target = f"{sys.executable} -m tests.foreign.legacy_stdio_tasks --report {reports.port} --ignore-eof{slow_get}"
    term = Terminal(tmp_path, "call", target, tool)
    journal = reports.journal
    started = journal.wait_for(lambda e: e["event"] == "started", timeout=60, what="the server start")

    def under_way(event: dict[str, Any]) -> bool:
        if event["event"] != "request":
            return False
        return bool(event["name"] == "block") if tool == "block" else bool(event["method"] == "tasks/get")

    request = journal.wait_for(under_way, timeout=60, what="the request to interrupt")
    sent = time.monotonic()
    term.send(b"\x03")
    code, out, shown = term.finish()
    took = time.monotonic() - sent
    print(f"\nCtrl-C to exit, stdio server that ignores EOF ({tool}): {took:.3f} s")
    assert code == cli.EXIT_INTERRUPTED, shown
    assert out == "" and "Traceback" not in shown
    assert "interrupted" in shown
    cancelled = journal.wait_for(
        lambda e: e["event"] == "cancelled" and e["requestId"] == request["id"], what="notifications/cancelled"
    )
    assert cancelled["requestId"] == request["id"]
    with pytest.raises(ProcessLookupError):  # ended (and reaped) before the command exited
        os.kill(started["pid"], 0)


@pytest.fixture
def http_url() -> Iterator[str]:
    with served_over_http() as url:
        yield url


def spans_in(stderr: str) -> list[dict[str, Any]]:
    found = []
    for line in stderr.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and "context" in value and "name" in value:
            found.append(value)
    return found


def test_trace_writes_the_spans_on_stderr(http_url: str, tmp_path: Path) -> None:
    (tmp_path / "my_server.py").write_text(SERVER_MODULE)
    done = traced_run(tmp_path, "call", http_url, "refuse", "--trace")
    assert done.returncode == cli.EXIT_TOOL_ERROR, done.stderr
    assert json.loads(done.stdout)["isError"] is True  # stdout stays the result alone
    names = {span["name"] for span in spans_in(done.stderr)}
    assert "tools/call refuse" in names and "tasks/get" in names, names
    traced = spans_in(done.stderr)
    assert len({span["context"]["trace_id"] for span in traced if span["name"] == "tools/call refuse"}) == 1
    # In process (module:attr): the server's spans join the trace, through the global provider.
    direct = traced_run(tmp_path, *SHOUT, "--trace")
    assert direct.returncode == 0, direct.stderr
    kinds = {(span["name"], span["kind"]) for span in spans_in(direct.stderr)}
    assert ("tools/call shout", "SpanKind.CLIENT") in kinds and ("tools/call shout", "SpanKind.SERVER") in kinds
    untraced = traced_run(tmp_path, *SHOUT)
    assert spans_in(untraced.stderr) == []


def test_trace_says_what_an_exporter_choice_needs(tmp_path: Path) -> None:
    (tmp_path / "my_server.py").write_text(SERVER_MODULE)
    wrong = traced_run(tmp_path, *SHOUT, "--trace", exporter="zipkin")
    assert wrong.returncode == cli.EXIT_USAGE and "--trace exports to console or otlp" in wrong.stderr
    if importlib.util.find_spec("opentelemetry.exporter") is None:
        otlp = traced_run(tmp_path, *SHOUT, "--trace", exporter="otlp")
        assert otlp.returncode == cli.EXIT_USAGE and "pip install opentelemetry-exporter-otlp" in otlp.stderr


def traced_run(cwd: Path, *args: str, exporter: str | None = None) -> subprocess.CompletedProcess[str]:
    """The command in `cwd`, with ``$OTEL_TRACES_EXPORTER`` set to `exporter` (unset: None)."""
    env = {k: v for k, v in os.environ.items() if k != "OTEL_TRACES_EXPORTER"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    if exporter is not None:
        env["OTEL_TRACES_EXPORTER"] = exporter
    return subprocess.run(
        [sys.executable, "-m", "mcp_tasks", *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env
    )


FAKE_OTLP = '''
"""A stand-in for opentelemetry-exporter-otlp's HTTP span exporter: each span's name to a file."""
import os

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


class OTLPSpanExporter(SpanExporter):
    def export(self, spans):
        with open(os.environ["FAKE_OTLP_FILE"], "a") as out:
            out.writelines(span.name + "\\n" for span in spans)
        return SpanExportResult.SUCCESS

    def shutdown(self):
        pass
'''


def test_trace_goes_over_otlp_when_its_exporter_is_installed(tmp_path: Path) -> None:
    (tmp_path / "my_server.py").write_text(SERVER_MODULE)
    package = tmp_path / "site" / "opentelemetry" / "exporter" / "otlp" / "proto" / "http"
    package.mkdir(parents=True)
    (package / "trace_exporter.py").write_text(FAKE_OTLP)
    exported = tmp_path / "exported.txt"
    env = {k: v for k, v in os.environ.items() if k != "OTEL_TRACES_EXPORTER"}
    root = Path(__file__).resolve().parents[2]
    env.update(PYTHONPATH=f"{root}{os.pathsep}{tmp_path / 'site'}", FAKE_OTLP_FILE=str(exported))
    done = subprocess.run(
        [sys.executable, "-m", "mcp_tasks", *SHOUT, "--trace"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert spans_in(done.stderr) == []  # not on stderr: over "OTLP"
    names = exported.read_text().splitlines()  # flushed before the command exited
    assert "tools/call shout" in names, names
    console = subprocess.run(
        [sys.executable, "-m", "mcp_tasks", *SHOUT, "--trace"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**env, "OTEL_TRACES_EXPORTER": "console"},
    )
    assert {span["name"] for span in spans_in(console.stderr)} >= {"tools/call shout"}
