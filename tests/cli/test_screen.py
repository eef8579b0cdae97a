"""mcp-tasks as a person sees it at 40 and 200 columns: the live status line is cut to the width
(never wraps), prompts are not overwritten, and after a piped answer the next status starts on a
line of its own. Each message says what is true of the target: a task on a stdio or in-process
server ends with the command; a tool that is not a task ran synchronously; an unknown task id has
its own exit code; ``tools`` shows task support as each era declares it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_tasks import cli
from mcp_tasks.server import Server, ToolContext, serve_http
from tests.cli.server import SERVER_MODULE, served_over_http
from tests.cli.test_commands import run
from tests.foreign.legacy_http_tasks import LegacyHttpTasksServer
from tests.foreign.modern_http_tasks import ModernHttpTasksServer
from tests.screen.terminal import Screen, render

LONG = "copying the quarterly export to the archive, one very long status message " * 4

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
OK = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


class Survey:
    """A server (over HTTP, in this process) whose task shows a long status message before each
    question, and holds it until the test has seen it on the screen (`go`)."""

    def __init__(self) -> None:
        self.go = [threading.Event(), threading.Event()]
        self.server = Server(poll_interval=0.02)
        self.server.add_tool(self.survey, name="survey", task="optional")

    def survey(self, ctx: ToolContext) -> dict[str, Any]:
        ctx.report(f"first: {LONG}")
        self.go[0].wait(60)
        name = ctx.elicit("name", "What is your name?", NAME)["content"]["name"]
        ctx.report(f"thanks {name}: {LONG}")
        self.go[1].wait(60)
        done = ctx.elicit("ok", "Shall I finish?", OK)["content"]["ok"]
        return {"name": name, "done": done}


def cli_screen(cwd: Path, columns: int, *args: str, piped: bool) -> Screen:
    """mcp-tasks `args` on a `Screen` `columns` wide."""
    return Screen(cwd, columns, "-m", "mcp_tasks", *args, piped=piped)


@pytest.fixture
def survey() -> Iterator[tuple[Survey, str]]:
    made = Survey()
    with serve_http(made.server) as http:
        yield made, http.url
        for gate in made.go:
            gate.set()
    made.server.close()


@pytest.mark.parametrize("columns", [40, 200])
@pytest.mark.parametrize("piped", [False, True], ids=["typed", "piped"])
def test_the_status_line_fits_the_terminal_and_prompts_keep_their_lines(
    survey: tuple[Survey, str], tmp_path: Path, columns: int, piped: bool
) -> None:
    made, url = survey
    screen = cli_screen(tmp_path, columns, "call", url, "survey", piped=piped)
    screen.expect("working: first: copying")
    made.go[0].set()
    screen.expect("name [string] (empty to decline): ")
    screen.answer("Ada")
    screen.expect("working: thanks Ada: copying")
    made.go[1].set()
    screen.expect("Shall I finish?")
    screen.expect("ok [y/n] (empty to decline): ")
    screen.answer("y")
    code, out = screen.finish()
    assert code == cli.EXIT_OK, screen.seen
    assert json.loads(out)["structuredContent"] == {"name": "Ada", "done": True}
    shown = render(screen.seen, columns)
    drawn = screen.seen.decode(errors="replace").split("\r\x1b[K")[1:]
    for line in drawn:  # each redraw of the live line fits in the width less one column
        assert len(line.split("\r")[0].split("\n")[0]) <= columns - 1, line
    assert all(len(line) <= columns for line in shown)
    prompts = [line for line in shown if "(empty to decline): " in line]
    assert (
        prompts
        == [
            "  name [string] (empty to decline): " + ("Ada" if not piped else ""),
            "  ok [y/n] (empty to decline): " + ("y" if not piped else ""),
        ][: len(prompts)]
    )
    assert len(prompts) == 2, shown  # neither prompt was overwritten by a status line
    after = shown[shown.index(prompts[0]) + 1]
    assert after.startswith("[") and "input_required" in after, shown  # the next status: a line of its own
    if columns == 40:
        print("\n".join(shown))  # the session, as the terminal shows it (pytest -s)


def test_ctrl_c_on_an_in_process_server_says_the_task_ends_with_it(tmp_path: Path) -> None:
    (tmp_path / "my_server.py").write_text(SERVER_MODULE)
    screen = cli_screen(tmp_path, 80, "call", "my_server:server", "hold", piped=False)
    screen.expect("working: holding")
    os.write(screen.master, b"\x03")
    code, out = screen.finish()
    shown = screen.seen.decode(errors="replace")
    assert code == cli.EXIT_INTERRUPTED and out == ""
    assert "ends now: its server was started in this process and stops when the command exits" in shown
    assert "still running" not in shown and "Resume with" not in shown


def test_a_timeout_over_stdio_does_not_say_the_task_is_still_running(tmp_path: Path) -> None:
    (tmp_path / "my_server.py").write_text(SERVER_MODULE)
    target = f"{sys.executable} -m mcp_tasks.server my_server:server"
    done = run("call", target, "hold", "--timeout", "0.3", cwd=tmp_path)
    assert done.returncode == cli.EXIT_TIMEOUT
    assert "did not finish within 0.3 s" in done.stderr
    assert "ends now: its server was started over stdio by this command" in done.stderr
    assert "still running" not in done.stderr and "wait for it again" not in done.stderr


@pytest.mark.parametrize("kind", ["module", "stdio"])
def test_no_wait_refuses_a_server_that_dies_with_the_command(tmp_path: Path, kind: str) -> None:
    (tmp_path / "my_server.py").write_text(SERVER_MODULE)
    target = "my_server:server" if kind == "module" else f"{sys.executable} -m mcp_tasks.server my_server:server"
    done = run("call", target, "hold", "--no-wait", cwd=tmp_path)
    assert done.returncode == cli.EXIT_USAGE and done.stdout == ""
    assert "--no-wait needs an http(s) target" in done.stderr
    assert "stops when the command exits" in done.stderr and "Traceback" not in done.stderr


@pytest.fixture
def http_url() -> Iterator[str]:
    with served_over_http() as url:
        yield url


def test_no_wait_on_a_tool_that_is_not_a_task_says_it_ran_synchronously(http_url: str) -> None:
    done = run("call", http_url, "shout", '{"text": "hi"}', "--no-wait")
    assert done.returncode == cli.EXIT_OK
    assert json.loads(done.stdout)["structuredContent"] == {"text": "HI"}
    assert "The tool ran synchronously (the server made no task)" in done.stderr
    as_json = run("call", http_url, "shout", '{"text": "hi"}', "--no-wait", "--json")
    assert json.loads(as_json.stderr.splitlines()[0])["event"] == "synchronous"


@pytest.fixture
def modern_foreign() -> Iterator[ModernHttpTasksServer]:
    server = ModernHttpTasksServer()
    server.start()
    yield server
    server.close()


@pytest.fixture
def legacy_foreign() -> Iterator[LegacyHttpTasksServer]:
    server = LegacyHttpTasksServer()
    server.start()
    yield server
    server.close()


def test_an_unknown_task_has_its_own_exit_code(
    http_url: str, modern_foreign: ModernHttpTasksServer, legacy_foreign: LegacyHttpTasksServer
) -> None:
    for url in (http_url, modern_foreign.url, legacy_foreign.url):
        for command in ("get", "wait"):
            done = run(command, url, "no-such-task-id-0123456789")
            assert done.returncode == cli.EXIT_NO_TASK, (url, command, done.stderr)
            assert "task no-s…6789: " in done.stderr and "(no such task on this server: expired," in done.stderr
            assert "(error -32602)" in done.stderr
    assert run("cancel", http_url, "no-such-task-id-0123456789").returncode == cli.EXIT_NO_TASK
    assert run("get", "http://127.0.0.1:9/mcp", "some-task").returncode == cli.EXIT_ERROR  # down, not unknown
    assert "8    no such task" in run("--help").stdout


def test_tools_shows_task_support_as_each_era_declares_it(
    http_url: str, modern_foreign: ModernHttpTasksServer, legacy_foreign: LegacyHttpTasksServer
) -> None:
    def listed(url: str) -> dict[str, str]:
        done = run("tools", url)
        assert done.returncode == 0, done.stderr
        return {line.split()[0]: line.split("tasks: ", 1)[1] for line in done.stdout.splitlines()}

    assert set(listed(http_url).values()) == {"decided by the server per call"}
    assert set(listed(modern_foreign.url).values()) == {"decided by the server per call"}
    legacy = listed(legacy_foreign.url)
    assert legacy["must_task"] == "required" and legacy["hold"] == "optional"
    assert legacy["forbidden_tool"] == "forbidden" and legacy["plain"] == "forbidden (not declared)"


def test_tools_on_servers_without_tasks() -> None:
    modern = ModernHttpTasksServer(advertise=False)
    legacy = LegacyHttpTasksServer(tasks_capability=False)
    modern.start()
    legacy.start()
    try:
        assert "tasks: no (the server does not offer the Tasks extension)" in run("tools", modern.url).stdout
        assert "tasks: no (the server does not offer task-augmented tools/call)" in run("tools", legacy.url).stdout
    finally:
        modern.close()
        legacy.close()


@pytest.mark.parametrize("command", ["call", "wait", "get", "cancel", "tools"])
def test_every_command_explains_its_arguments(command: str) -> None:
    helped = run(command, "--help")
    assert helped.returncode == 0
    text = helped.stdout
    assert "TARGET is one of:\n  http://host:port/mcp" in text  # the forms keep their lines
    assert "TARGET                the server: an http(s) URL" in text.replace("\n  ", " ")
    if command in ("wait", "get", "cancel"):
        assert "TASK_ID" in text and "the task's id, as printed by" in text
    if command == "call":
        assert "TOOL                  the tool's name" in text
    assert "exit codes:" in text
