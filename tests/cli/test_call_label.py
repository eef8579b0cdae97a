"""A question names the call that asks, in the command as in the API: ``[export {"report": "q3",
"token": "***"} e294…b175]``, whether the command made the task (``call``) or picked it up from
the task store (``wait TASK_ID --store``, where it was ``[task e294…b175]``), in a real
pseudo-terminal 40, 80 and 120 columns wide; the token the call carried is never shown. A tool's
own error names the call too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks import cli
from mcp_tasks._call_text import arguments_text, task_label
from mcp_tasks.server import Server, ToolError, serve_http
from tests.cli.test_commands import run
from tests.screen.terminal import Screen

ARGUMENTS = {"report": "q3", "token": "tok-0123456789"}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
PROMPT = "(empty to decline): "


@pytest.fixture
def url() -> Iterator[str]:
    server = Server(poll_interval=0.05)

    @server.tool(task="required")
    def export(ctx: Any, report: str, token: str) -> dict[str, Any]:
        answer = ctx.elicit("name", f"Who reads {report}?", NAME)
        return {"report": report, "reader": (answer.get("content") or {}).get("name")}

    @server.tool(task="required")
    def refuse(ctx: Any, report: str, token: str) -> dict[str, Any]:
        raise ToolError(f"no such report: {report}")

    with serve_http(server) as http:
        yield http.url
    server.close()


def asked(screen: Screen) -> str:
    """Answer the question; the terminal's text."""
    screen.expect(PROMPT)
    screen.answer("Ada")
    code, out = screen.finish()
    shown = screen.seen.decode(errors="replace")
    assert code == cli.EXIT_OK, shown
    assert json.loads(out)["structuredContent"] == {"report": "q3", "reader": "Ada"}
    assert "tok-0123" not in shown  # the token is never on the screen
    return shown


@pytest.mark.parametrize("columns", [40, 80, 120])
def test_a_resumed_question_names_its_call_as_the_api_does(url: str, tmp_path: Path, columns: int) -> None:
    store = str(tmp_path / "tasks.sqlite3")
    started = run("call", url, "export", json.dumps(ARGUMENTS), "--detach", "--store", store)
    assert started.returncode == cli.EXIT_OK, started.stderr
    task_id = started.stdout.strip()
    with mt.SqliteTaskStore(store) as kept:
        ref = kept.get(task_id)
    assert ref is not None and ref.arguments == {"report": "q3", "token": "***"}
    label = task_label(task_id, "export", arguments_text(ARGUMENTS))  # the API's label of this call
    assert label.startswith('export {"report": "q3", "token": "***"} ')
    listed = run("tasks", "--store", store).stdout  # the listing names the call too
    assert 'export {"report": "q3", "token": "***"}' in listed and "tok-0123" not in listed

    screen = Screen(tmp_path, columns, "-m", "mcp_tasks", "wait", task_id, "--store", store)
    shown = asked(screen)
    assert f"[{label}] The server asks: Who reads q3?" in shown, shown


def test_a_question_of_a_call_names_it_the_same_way(url: str, tmp_path: Path) -> None:
    screen = Screen(tmp_path, 80, "-m", "mcp_tasks", "call", url, "export", json.dumps(ARGUMENTS))
    shown = asked(screen)
    assert '[export {"report": "q3", "token": "***"} ' in shown and "] The server asks: Who reads q3?" in shown


def test_a_tools_error_names_its_call_in_both_commands(url: str, tmp_path: Path) -> None:
    store = str(tmp_path / "tasks.sqlite3")
    shown = 'Tool \'refuse\' {"report": "q9", "token": "***"} (task '
    called = run("call", url, "refuse", json.dumps({**ARGUMENTS, "report": "q9"}), "--store", store)
    assert called.returncode == cli.EXIT_TOOL_ERROR and shown in called.stderr, called.stderr
    started = run("call", url, "refuse", json.dumps({**ARGUMENTS, "report": "q9"}), "--detach", "--store", store)
    waited = run("wait", started.stdout.strip(), "--store", store)
    assert waited.returncode == cli.EXIT_TOOL_ERROR and shown in waited.stderr, waited.stderr
    assert "reported an error: no such report: q9" in waited.stderr and "tok-0123" not in waited.stderr
