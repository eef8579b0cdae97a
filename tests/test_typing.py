"""Options are typed: `mypy --strict` reports each deliberate mistake in a user's file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

MISTAKES = """
import mcp_tasks as mt

client = mt.Client.http("http://127.0.0.1:1/mcp")
mt.await_task(client, "t", timout=5)  # MISTAKE
mt.wait_task(client, "t", listen="yes")  # MISTAKE
mt.call_and_await(client, "tool", timout=5)  # MISTAKE
mt.call_and_await(client, "tool", call_opts={"timout": 5})  # MISTAKE
mt.await_task(client, "t", input="ask")  # MISTAKE
mt.wait_task(client, "t", on_status=42)  # MISTAKE
mt.Client.http("http://127.0.0.1:1/mcp", verfy=False)  # MISTAKE
mt.Client.stdio("server", timout=1)  # MISTAKE
mt.wait_tasks(client, "t")  # MISTAKE (a public name loads on first use, and a typo is still caught)
result: dict[str, object] = mt.await_task(client, "t", timeout=5, poll_interval=0.5, cancel_on_timeout=True)
status: mt.Status = mt.wait_task(client, "t", input="return", on_status=mt.StatusDisplay())
"""


def test_mypy_reports_every_mistake(tmp_path: Path) -> None:
    (tmp_path / "mistakes.py").write_text(MISTAKES)
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--config-file", os.devnull, "mistakes.py"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    reported = {int(n) for n in re.findall(r"^mistakes\.py:(\d+): error", done.stdout, re.M)}
    marked = {n for n, line in enumerate(MISTAKES.splitlines(), 1) if line.split("  # ")[-1].startswith("MISTAKE")}
    assert reported == marked, done.stdout
