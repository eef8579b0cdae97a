"""The MCP conformance suite's server ``tasks-*`` scenarios (0.2.0-alpha.12) against the reference
server over HTTP, through a fixture app with the tools those scenarios expect
(tests/interop/conformance_server.py). Known failures, each with its reason, are listed in
conformance-server-baseline.yml; a listed check that passes fails the test too (stale baseline).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcp_tasks.server import serve_http
from tests.interop.conformance_server import make
from tests.interop.conftest import HERE, require
from tests.interop.test_conformance import RUNNERS, runner_env, summary

MODERN = RUNNERS["0.2.0-alpha.12"]

pytestmark = pytest.mark.interop

BASELINE = HERE / "conformance-server-baseline.yml"

SCENARIOS = [
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_server_scenario(scenario: str, tmp_path: Path) -> None:
    runner = require(MODERN.bin, "the conformance suite")
    server = make()
    http = serve_http(server)  # the default keepalive (5 s)
    try:
        out = tmp_path / "results"
        argv = [str(runner), "server", "--url", http.url, "--scenario", scenario]
        argv += ["--expected-failures", str(BASELINE), "-o", str(out), "--timeout", "60000"]
        done = subprocess.run(
            argv,
            cwd=MODERN.folder,
            env=runner_env(tmp_path / "unused.json"),
            capture_output=True,
            text=True,
            timeout=240,
        )
    finally:
        http.close()
        server.close()
    output = f"$ {' '.join(argv)}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    results = sorted(out.glob("*/checks.json"))
    assert len(results) == 1, f"the scenario did not run:\n{output}"
    checks: list[dict[str, Any]] = json.loads(results[0].read_text())
    assert done.returncode == 0, f"failures not in the baseline, or stale entries:\n{summary(checks)}\n{output}"
    assert any(c["status"] in ("SUCCESS", "SKIPPED") for c in checks), f"nothing was checked:\n{output}"


def test_every_baseline_entry_names_a_scenario_run_here_and_gives_its_reason() -> None:
    lines = BASELINE.read_text().splitlines()
    assert any(line.startswith("server:") for line in lines), "the baseline has no server: section"
    for number, line in enumerate(lines):
        entry = re.match(r"^\s+-\s+(\S+)", line)
        if not entry:
            continue
        assert entry.group(1).split(":", 1)[0] in SCENARIOS, f"line {number + 1}: not a scenario run here"
        above = lines[number - 1].strip() if number else ""
        assert "#" in line or above.startswith("#"), f"line {number + 1} has no reason: {line!r}"
