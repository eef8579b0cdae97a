"""Leaving a task running, and logs above the live line, as a person and a script see them.

``call --detach`` prints the task's id on stdout and the commands to follow or cancel it, exit 0;
Esc during a live wait in a real pseudo-terminal does the same (an arrow key does not; Ctrl-C
still interrupts; a question's answer is typed as usual), and the terminal's mode is put back. A
log record or a warning written while the live line is on the terminal gets a line of its own
above it; on a pipe nothing changes.
"""

from __future__ import annotations

import json
import os
import termios
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_tasks import cli
from mcp_tasks.cli._keys import Keys
from tests.cli.server import served_over_http
from tests.cli.test_commands import run
from tests.screen.terminal import Screen, render


@pytest.fixture
def http_url() -> Iterator[str]:
    with served_over_http() as url:
        yield url


def cooked(screen: Screen) -> bool:
    """Whether the terminal echoes and reads lines (its mode before the command ran)."""
    flags = termios.tcgetattr(screen.master)[3]
    return bool(flags & termios.ECHO and flags & termios.ICANON)


def status_of(url: str, task_id: str) -> str:
    got = run("get", url, task_id)
    assert got.returncode == cli.EXIT_OK, got.stderr
    return str(json.loads(got.stdout)["status"])


@pytest.mark.parametrize("columns", [40, 80, 120])
@pytest.mark.parametrize("command", ["call", "wait"])
def test_esc_detaches_a_live_wait_and_the_task_runs_on(
    http_url: str, tmp_path: Path, columns: int, command: str
) -> None:
    if command == "call":
        args = ["call", http_url, "hold"]
    else:
        started = run("call", http_url, "hold", "--no-wait")  # (the older name)
        args = ["wait", http_url, started.stdout.strip()]
    screen = Screen(tmp_path, columns, "-m", "mcp_tasks", *args)
    screen.expect("working: holding")
    assert not cooked(screen)  # keys one by one, not echoed, while it waits
    os.write(screen.master, b"\x1b[A\x1bOB\x1bx")  # an arrow key, another, Alt+x: not Esc
    os.write(screen.master, b"\x1b")  # Esc
    screen.proc.wait(60)
    assert cooked(screen)  # put back
    code, out = screen.finish()
    shown = screen.seen.decode(errors="replace")
    assert code == cli.EXIT_OK, shown
    task_id = out.strip()
    assert out == task_id + "\n" and len(task_id) > 12  # the full id, alone on stdout
    assert "Detached: task" in shown and "still running" in shown, shown
    assert f"mcp-tasks wait {http_url} {task_id}" in shown.replace("\r\n", " ").replace("\n", " ")
    assert "(or: mcp-tasks cancel" in shown
    assert status_of(http_url, task_id) == "working"  # it runs on at the server
    assert run("cancel", http_url, task_id).returncode == cli.EXIT_OK


def test_ctrl_c_keeps_its_meaning_and_the_terminal_comes_back(http_url: str, tmp_path: Path) -> None:
    screen = Screen(tmp_path, 80, "-m", "mcp_tasks", "call", http_url, "hold")
    screen.expect("working: holding")
    os.write(screen.master, b"\x03")
    screen.proc.wait(60)
    assert cooked(screen)
    code, out = screen.finish()
    shown = screen.seen.decode(errors="replace")
    assert code == cli.EXIT_INTERRUPTED and out == "", shown
    assert "interrupted; task" in shown and "Detached" not in shown


def test_a_question_is_answered_as_usual_during_a_watched_wait(http_url: str, tmp_path: Path) -> None:
    screen = Screen(tmp_path, 80, "-m", "mcp_tasks", "call", http_url, "ask_name")
    screen.expect("name [string] (empty to decline): ")
    screen.answer("Ada")
    code, out = screen.finish()
    assert code == cli.EXIT_OK, screen.seen
    assert json.loads(out)["structuredContent"]["hello"] == "Ada"
    assert "(empty to decline): Ada" in "\n".join(render(screen.seen, 80))  # echoed as typed


def test_detach_on_a_pipe_prints_the_id_and_how_to_follow_it(http_url: str) -> None:
    done = run("call", http_url, "hold", "--detach")
    assert done.returncode == cli.EXIT_OK, done.stderr
    task_id = done.stdout.strip()
    assert done.stdout == task_id + "\n" and len(task_id) > 12
    assert f"Resume with: mcp-tasks wait {http_url} {task_id}" in done.stderr
    assert f"(or: mcp-tasks cancel {http_url} {task_id})" in done.stderr
    assert status_of(http_url, task_id) == "working"
    as_json = run("call", http_url, "hold", "--detach", "--json")
    event = json.loads(as_json.stderr.splitlines()[0])
    assert event["event"] == "task" and event["taskId"] == as_json.stdout.strip()
    at_once = run("call", http_url, "shout", '{"text": "hi"}', "--detach")
    assert json.loads(at_once.stdout)["structuredContent"] == {"text": "HI"}  # answered at once: its result
    for started in (task_id, as_json.stdout.strip()):
        run("cancel", http_url, started)


def test_keys_tell_a_lone_esc_from_escape_sequences() -> None:
    keys = Keys()
    for typed in (b"\x1b[A", b"\x1b[1;5C", b"\x1bOB", b"\x1bx", b"q"):
        for byte in typed:
            keys.feed(byte)
        assert not keys.waiting, typed
    keys.feed(0x1B)
    assert keys.waiting and keys.quiet()  # nothing followed: Esc
    keys.feed(0x1B)
    keys.feed(ord("["))
    assert keys.waiting and not keys.quiet()  # a sequence cut short is not Esc


CHATTY = textwrap.dedent(
    """
    import logging, warnings
    from mcp_tasks.server import Server

    server = Server(poll_interval=0.05)

    @server.tool(task="optional")
    def chatty(ctx, gate: str = "", hold: bool = True) -> dict:
        ctx.report("holding")
        if gate:
            with open(gate) as fifo:  # until the test has seen the line
                fifo.read()
        logging.getLogger("my_server").warning("disk almost full")
        warnings.warn("careful: old format", UserWarning, stacklevel=1)
        ctx.report("after the log")
        if hold:
            ctx.sleep(3600)
        return {}
    """
)


@pytest.mark.parametrize("debug", [False, True], ids=["last-resort", "root-handler"])
def test_a_log_line_goes_above_the_live_line(tmp_path: Path, debug: bool) -> None:
    (tmp_path / "my_server.py").write_text(CHATTY)
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    options = ["--debug"] if debug else []
    arguments = json.dumps({"gate": str(gate)})
    screen = Screen(tmp_path, 80, "-m", "mcp_tasks", "call", "my_server:server", "chatty", arguments, *options)
    screen.expect("working: holding")
    with open(gate, "w") as fifo:
        fifo.write("go")
    screen.expect("working: after the log")
    os.write(screen.master, b"\x03")
    screen.finish()
    shown = render(screen.seen, 80)
    logged = "WARNING:my_server:disk almost full" if debug else "disk almost full"
    assert logged in shown, shown  # a line of its own
    path = str(tmp_path)[:12]  # the warning starts with the server's path (a long line: the terminal wraps it)
    assert any(line.startswith(path) for line in shown), shown
    assert not any(line.startswith("[") and ("disk" in line or path in line) for line in shown), shown
    after = shown[shown.index(logged) + 1 :]
    assert any(line.startswith("[") and "working" in line for line in after), shown  # drawn again below


def test_on_a_pipe_log_lines_are_as_before(tmp_path: Path) -> None:
    (tmp_path / "my_server.py").write_text(CHATTY)
    done = run("call", "my_server:server", "chatty", '{"hold": false}', cwd=tmp_path)
    assert done.returncode == cli.EXIT_OK, done.stderr
    lines = done.stderr.splitlines()
    assert "disk almost full" in lines and "\x1b" not in done.stderr and "\r" not in done.stderr
    assert any(line.endswith("UserWarning: careful: old format") for line in lines)
    statuses = [line for line in lines if line.startswith("[")]
    assert statuses and not any("disk" in line or "Warning" in line for line in statuses), lines
