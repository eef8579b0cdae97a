"""The progress a 2025-era server reports, as the command shows it: a bar on the live line of a
real terminal (40, 80 and 120 columns: one line that fits), a line per report on a pipe, a
``progress`` event with ``--json``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_tasks import cli
from tests.cli.test_commands import run
from tests.foreign.progress_http import LegacyProgressServer
from tests.screen.terminal import Screen, render

BEFORE = json.dumps({"before": [[1, 4, "rows"]]})


@pytest.fixture
def server() -> Iterator[LegacyProgressServer]:
    with LegacyProgressServer() as made:
        yield made


@pytest.mark.parametrize("columns", [40, 80, 120])
def test_call_shows_the_task_progress_as_a_bar(server: LegacyProgressServer, tmp_path: Path, columns: int) -> None:
    screen = Screen(tmp_path, columns, "-m", "mcp_tasks", "call", server.url, "report", BEFORE)
    screen.expect("1/4 (25%) rows")  # reported on the call's own stream, before the task was made
    (task_id,) = server.task_ids()
    server.step(task_id, 3, 4, "rows")
    screen.expect("3/4 (75%) rows")
    server.finish(task_id)
    code, out = screen.finish()
    assert code == cli.EXIT_OK, screen.seen
    assert json.loads(out)["content"][0]["text"] == "report done"
    text = screen.seen.decode(errors="replace")
    for frame in text.split("\r\x1b[K")[1:]:  # every redraw fits in the width less one column
        assert len(frame.split("\r")[0].split("\n")[0]) <= columns - 1, frame
    bars = [line for line in render(screen.seen, columns) if "3/4 (75%)" in line]
    assert len(bars) == 1 and "▕" in bars[0] and "█" in bars[0], bars  # one line, redrawn in place


@pytest.mark.parametrize("form", ["pipe", "json"])
def test_on_a_pipe_a_line_per_report_and_with_json_an_event(server: LegacyProgressServer, form: str) -> None:
    def finish() -> None:
        made = server.journal.wait_for(lambda e: e["event"] == "report_task", what="the task")
        server.finish(made["taskId"])  # what the call's stream reported is kept for the wait

    finisher = threading.Thread(target=finish)
    finisher.start()
    extra = ["--json"] if form == "json" else []
    done = run("call", *extra, server.url, "report", BEFORE)
    finisher.join()
    assert done.returncode == cli.EXIT_OK, done.stderr
    if form == "json":
        events = [json.loads(line) for line in done.stderr.splitlines()]
        assert {"event": "progress", "progress": 1.0, "total": 4.0, "message": "rows"} in events
    else:
        lines = [line for line in done.stderr.splitlines() if "1/4 (25%)" in line]
        assert len(lines) == 1 and lines[0].endswith("▕███         ▏ 1/4 (25%) rows"), done.stderr
