"""The MCP conformance suite's client scenarios, one test each, run against
tests/interop/conformance_client.py (a tools client on mcp_tasks' public API, which detects the era):
the 2026-07-28 ones of runner 0.2.0-alpha.12 (.npm-peers) and the 2025-era ones of runner 0.1.16
(.npm-peers-016), which only that release line has.

Each runner (installed by .ci/peers.py) starts each scenario's mock server on 127.0.0.1
(tests/interop/node20/preload.mjs pins it there, and lets the runner start on Node 20) and judges
what the client sent. Failures of the library that are known are listed, each with its reason, in
conformance-baseline.yml; a listed check that passes fails the test too (the runner calls the
baseline stale).

The auth/* scenarios run with `mcp_tasks.OAuth` as the client's auth object: the 25 of the required
set, the extension scenario auth/client-credentials-basic, and the two 2025-03-26 ones (forced to
run at 2026-07-28: their point is the authorization fallback, not the older wire).

The auth extension scenarios that need signed JWTs or DPoP (client-credentials-jwt, dpop,
dpop-nonce, wif-jwt-bearer, enterprise-managed-authorization) run forced as well, with the
mcp_tasks[jwt] extra. Not run: the sep-2640-* skills-extension scenarios (not a tools client's
part; the runner skips them at 2026-07-28).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_tasks._errors import AUTHORIZATION_FAILED
from tests.conftest import ROOT
from tests.interop.conftest import HERE, require

pytestmark = pytest.mark.interop


PRELOAD = HERE / "node20" / "preload.mjs"
BASELINE = HERE / "conformance-baseline.yml"
CLIENT = HERE / "conformance_client.py"
SPEC_VERSION = "2026-07-28"


class Runner:
    """One installed conformance runner: its folder, and the spec version to ask for (None: the
    scenario's own, for 0.1.16, which has no --spec-version)."""

    def __init__(self, folder: str, spec_version: str | None) -> None:
        self.folder = ROOT / folder
        self.bin = self.folder / "node_modules" / ".bin" / "conformance"
        self.spec_version = spec_version


RUNNERS = {"0.2.0-alpha.12": Runner(".npm-peers", SPEC_VERSION), "0.1.16": Runner(".npm-peers-016", None)}

MODERN_SCENARIOS = [
    "tools_call",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
]
AUTH_SCENARIOS = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
]
# Not on the 2026-07-28 timeline (an extension; two removed in 2025-06-18): the runner skips them
# at 2026-07-28 unless forced.
FORCED_SCENARIOS = [
    "auth/client-credentials-basic",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    # The signed grants (mcp_tasks[jwt]): private_key_jwt, DPoP with and without nonces, workload
    # identity federation and enterprise-managed authorization.
    "auth/client-credentials-jwt",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/wif-jwt-bearer",
    "auth/enterprise-managed-authorization",
]

# The 2025-era scenarios (stateful sessions: initialize, Mcp-Session-Id, the GET stream).
LEGACY_SCENARIOS = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]
SCENARIOS = [("0.2.0-alpha.12", name) for name in MODERN_SCENARIOS + AUTH_SCENARIOS + FORCED_SCENARIOS] + [
    ("0.1.16", name) for name in LEGACY_SCENARIOS
]

# Requests of the conformance client that fail by the scenario's design, as (request, code).
EXPECTED_CLIENT_FAILURES: dict[str, list[tuple[str, int]]] = {
    # The mock serves tools/list only (its point is that the client never fetches a network $ref).
    "json-schema-ref-no-deref": [("tools/call lookup_user", -32601)],
    # The client must refuse to authorize (and stops at its first request): metadata for another
    # resource, a wrong or missing iss, poisoned authorization server metadata (an OAuthError)...
    **{
        name: [("connect", AUTHORIZATION_FAILED)]
        for name in (
            "auth/resource-mismatch",
            "auth/iss-supported-missing",
            "auth/iss-wrong-issuer",
            "auth/iss-unexpected",
            "auth/iss-normalized",
            "auth/metadata-issuer-mismatch",
        )
    },
    # ...or a 403 that asks for scopes the token already has (the transport's 401/403 error).
    "auth/scope-retry-limit": [("connect", -32091)],
}


def runner_env(report: Path) -> dict[str, str]:
    """The runner's environment, which it passes on to the client it spawns."""
    env = dict(os.environ)
    env["NODE_OPTIONS"] = " ".join(filter(None, [env.get("NODE_OPTIONS"), f"--import={PRELOAD}"]))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["MCP_TASKS_CONFORMANCE_REPORT"] = str(report)
    env.pop("MCP_CONFORMANCE_CONTEXT", None)
    return env


def summary(checks: list[dict[str, Any]]) -> str:
    """One line per check that did not pass."""
    return "\n".join(
        f"  {c['status']} {c['id']} ({c.get('name')}): {c.get('errorMessage') or c.get('description')}"
        for c in checks
        if c.get("status") in ("FAILURE", "WARNING")
    )


@pytest.mark.parametrize(("release", "scenario"), SCENARIOS, ids=[f"{r}-{s}" for r, s in SCENARIOS])
def test_client_scenario(release: str, scenario: str, tmp_path: Path) -> None:
    installed = RUNNERS[release]
    runner = require(installed.bin, f"the conformance suite {release}")
    command = f"{sys.executable} {CLIENT}"
    if " " in command.replace(" ", "", 1):
        pytest.fail(f"the runner splits --command on spaces, so these paths must have none: {command}")
    report_path = tmp_path / "client-report.json"
    out = tmp_path / "results"
    argv = [str(runner), "client", "--command", command, "--scenario", scenario]
    if installed.spec_version is not None:
        argv += ["--spec-version", installed.spec_version]
    if scenario in FORCED_SCENARIOS:
        argv.append("--force")
    argv += ["--expected-failures", str(BASELINE), "-o", str(out), "--timeout", "30000"]
    done = subprocess.run(
        argv, cwd=installed.folder, env=runner_env(report_path), capture_output=True, text=True, timeout=180
    )
    output = f"$ {' '.join(argv)}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"

    results = sorted(out.glob("**/checks.json"))
    assert len(results) == 1, f"the scenario did not run (skipped, or the runner failed):\n{output}"
    checks: list[dict[str, Any]] = json.loads(results[0].read_text())
    assert done.returncode == 0, (
        f"failures not in the baseline, or stale baseline entries:\n{summary(checks)}\n{output}"
    )
    assert any(c["status"] == "SUCCESS" for c in checks), f"nothing was checked:\n{output}"

    assert report_path.exists(), f"the conformance client did not run:\n{output}"
    report = json.loads(report_path.read_text())
    assert report["finished"], f"the conformance client did not get to its end: {report}\n{output}"
    failed = [(f["request"], f["code"]) for f in report["failures"]]
    assert failed == EXPECTED_CLIENT_FAILURES.get(scenario, []), f"{report}\n{output}"


def test_every_baseline_entry_names_a_scenario_run_here_and_gives_its_reason() -> None:
    lines = BASELINE.read_text().splitlines()
    assert any(line.startswith("client:") for line in lines), "the baseline has no client: section"
    for number, line in enumerate(lines):
        entry = re.match(r"^\s+-\s+(\S+)", line)
        if not entry:
            continue
        scenario = entry.group(1).split(":", 1)[0]
        assert scenario in MODERN_SCENARIOS + AUTH_SCENARIOS + FORCED_SCENARIOS + LEGACY_SCENARIOS, (
            f"line {number + 1}: {scenario} is not run by this module"
        )
        above = lines[number - 1].strip() if number else ""
        assert "#" in line or above.startswith("#"), f"line {number + 1} has no reason: {line!r}"
