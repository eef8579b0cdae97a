"""The mcp-tasks command as a person and a script use it: driven in a pseudo-terminal (prompt
answered, live status line, Ctrl-C) and through pipes (stdout is the result alone, exit codes).
"""

from __future__ import annotations

import json
import os
import pty
import select
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import mcp_tasks as mt
from mcp_tasks import cli
from mcp_tasks.server import Server
from tests.cli.server import SERVER_MODULE, served_over_http
from tests.foreign.modern_http_tasks import ModernHttpTasksServer

# Makes the pseudo-terminal the child's controlling terminal (so Ctrl-C reaches it), then runs
# the command: no fork in this (threaded) test process.
TAKE_TERMINAL = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); os.execv(sys.executable, sys.argv[1:])"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory holding a server module, made the current directory."""
    (tmp_path / "my_server.py").write_text(SERVER_MODULE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


class Terminal:
    """mcp-tasks in a pseudo-terminal: stdin and stderr are the terminal, stdout a pipe."""

    def __init__(self, cwd: Path, *args: str) -> None:
        self.master, slave = pty.openpty()
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])  # this tree's mcp_tasks
        self.proc = subprocess.Popen(
            [sys.executable, "-c", TAKE_TERMINAL, sys.executable, "-m", "mcp_tasks", *args],
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=slave,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        os.close(slave)
        self.seen = b""

    def expect(self, text: str) -> str:
        """Read the terminal until `text` appears."""
        while text.encode() not in self.seen:
            self.more(text)
        return self.seen.decode(errors="replace")

    def more(self, wanted: str = "more output", guard: float = 60.0) -> None:
        """Read what the terminal shows next (failing after `guard` seconds of silence)."""
        ready, _, _ = select.select([self.master], [], [], guard)
        try:
            chunk = os.read(self.master, 4096) if ready else b""
        except OSError:  # the child has gone and closed the terminal
            chunk = b""
        if not chunk:
            self.kill()
            raise AssertionError(
                f"{wanted!r} never appeared; the terminal shows {self.seen.decode(errors='replace')!r}"
            )
        self.seen += chunk

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def finish(self) -> tuple[int, str, str]:
        """The exit code, stdout, and all the terminal showed."""
        out, _ = self.proc.communicate(timeout=60)
        while True:
            ready, _, _ = select.select([self.master], [], [], 0)
            if not ready:
                break
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                break
            if not chunk:
                break
            self.seen += chunk
        os.close(self.master)
        return self.proc.returncode, out.decode(), self.seen.decode(errors="replace")


def test_the_prompt_is_answered_at_the_terminal(project: Path) -> None:
    term = Terminal(project, "call", "my_server:server", "ask_name")
    term.expect("Task created: ")
    term.expect("What is your name?")
    term.expect("name [string] (empty to decline): ")
    term.send(b"Ada\r")
    code, out, shown = term.finish()
    assert code == 0, shown
    assert json.loads(out)["structuredContent"] == {"hello": "Ada", "action": "accept"}
    assert "\r\x1b[K" in shown and "input_required" in shown  # the live line, redrawn in place
    assert "What is your name?" not in out  # the prompt went to the terminal, not stdout


def test_the_status_line_ticks_and_ctrl_c_says_what_became_of_the_task(project: Path) -> None:
    term = Terminal(project, "call", "my_server:server", "hold")
    created = term.expect("Task created: ")
    term.expect("working: holding")
    first = term.seen.count(b"working: holding")
    while term.seen.count(b"working: holding") == first:  # the elapsed time is redrawn
        term.more("a redrawn status line")
    task_id = created.split("Task created: ", 1)[1].split()[0]
    term.send(b"\x03")
    code, out, shown = term.finish()
    assert code == cli.EXIT_INTERRUPTED
    assert out == ""
    assert f"interrupted; task {task_id} ends now" in shown
    assert "started in this process and stops when the command exits" in shown
    assert "Traceback" not in shown


@pytest.fixture
def http_url() -> Iterator[str]:
    with served_over_http() as url:
        yield url


def run(*args: str, cwd: Path | None = None, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_tasks", *args], input=stdin, capture_output=True, text=True, timeout=120, cwd=cwd
    )


def test_a_task_started_by_one_process_is_awaited_by_another(http_url: str, tmp_path: Path) -> None:
    started = run("call", http_url, "ask_name", "--no-wait", cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    task_id = started.stdout.strip()
    created = started.stderr.splitlines()[:2]  # at creation: the id, the commands to follow or cancel it
    assert started.stderr.count(task_id) == "".join(created).count(task_id) == 3, started.stderr
    status = run("get", http_url, task_id)
    assert json.loads(status.stdout)["status"] == "input_required"
    waited = run("wait", http_url, task_id, "--json", stdin="Grace\n")
    assert waited.returncode == 0, waited.stderr
    assert json.loads(waited.stdout)["structuredContent"] == {"hello": "Grace", "action": "accept"}
    events = [json.loads(line) for line in waited.stderr.splitlines()]
    assert [e["event"] for e in events][-1] == "status" and events[-1]["status"] == "completed"


def test_a_task_id_that_looks_like_an_option_is_resumed_as_the_hint_says() -> None:
    server = ModernHttpTasksServer(id_prefix="-h")  # a foreign server's ids may start with "-"
    server.start()
    try:
        started = run("call", server.url, "hold", "--timeout", "0.2")
        assert started.returncode == cli.EXIT_TIMEOUT, started.stderr
        (hint,) = [line for line in started.stderr.splitlines() if line.startswith("Resume with: ")]
        command = shlex.split(hint.removeprefix("Resume with: ").split("   (or: ")[0])
        assert command[:2] == ["mcp-tasks", "wait"] and command[-2:] == ["--", command[-1]]
        assert command[-1].startswith("-h")
        status = run("get", *command[2:])
        assert status.returncode == cli.EXIT_OK, status.stderr
        assert json.loads(status.stdout)["taskId"] == command[-1]
    finally:
        server.close()


def test_the_reference_server_makes_no_task_id_that_looks_like_an_option() -> None:
    server = Server()

    @server.tool(task="required")
    def quick(ctx: object) -> dict[str, bool]:
        return {"ok": True}

    with mt.Client.direct(server) as client:
        ids = [mt.call_tool(client, "quick") for _ in range(300)]  # about 5 would start with "-" by chance
    server.close()
    assert all(isinstance(task, mt.Status) and not task.task_id.startswith("-") for task in ids)


def test_the_result_alone_goes_to_stdout_and_each_outcome_has_its_exit_code(project: Path, http_url: str) -> None:
    piped = run("call", "my_server:server", "ask_name", stdin="Ada\n", cwd=project)
    assert piped.returncode == cli.EXIT_OK, piped.stderr
    assert json.loads(piped.stdout)["structuredContent"]["hello"] == "Ada"
    assert "What is your name?" in piped.stderr
    declined = run("call", "my_server:server", "ask_name", stdin="", cwd=project)
    assert declined.returncode == cli.EXIT_INPUT
    assert "stdin is closed" in declined.stderr
    assert run("call", "my_server:server", "boom", cwd=project).returncode == cli.EXIT_FAILED
    assert json.loads(run("call", "my_server:server", "shout", '{"text": "hi"}', cwd=project).stdout)[
        "structuredContent"
    ] == {"text": "HI"}
    assert run("call", "my_server:server", "refuse", cwd=project).returncode == cli.EXIT_TOOL_ERROR
    task_id = run("call", http_url, "hold", "--no-wait").stdout.strip()
    timed_out = run("wait", http_url, task_id, "--timeout", "0.2")
    assert timed_out.returncode == cli.EXIT_TIMEOUT
    assert f"mcp-tasks wait {http_url} {task_id}" in timed_out.stderr
    assert run("cancel", http_url, task_id).returncode == cli.EXIT_OK
    assert run("wait", http_url, task_id).returncode == cli.EXIT_CANCELLED
    assert run("get", http_url, "no-such-task").returncode == cli.EXIT_NO_TASK
    assert run("call", "http://127.0.0.1:9/mcp", "x").returncode == cli.EXIT_ERROR
    for problem in (["shout", "[1]"], ["shout", "not json"], ["hold", "--timeout", "0"]):
        done = run("call", "my_server:server", *problem, cwd=project)
        assert done.returncode == cli.EXIT_USAGE, problem
        assert "Traceback" not in done.stderr
    missing = run("call", "no_such_module:server", "x", cwd=project)
    assert missing.returncode == cli.EXIT_USAGE and "cannot import 'no_such_module'" in missing.stderr
    assert "Traceback" in run("call", "no_such_module:server", "x", "--debug", cwd=project).stderr


def test_over_stdio_a_timeout_tells_the_truth_about_the_server(project: Path) -> None:
    target = f"{sys.executable} -m mcp_tasks.server my_server:server"
    done = run("call", target, "hold", "--timeout", "0.3", cwd=project)
    assert done.returncode == cli.EXIT_TIMEOUT
    assert "started over stdio by this command and stops when the command exits" in done.stderr


def test_tools_version_and_help(project: Path) -> None:
    listed = run("tools", "my_server:server", cwd=project)
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["ask_name", "hold", "boom", "shout", "refuse"]
    as_json = json.loads(run("tools", "my_server:server", "--json", cwd=project).stdout)
    assert as_json[0]["name"] == "ask_name"
    assert run("--version").stdout.startswith("mcp-tasks ")
    helped = run("--help").stdout
    assert "exit codes:" in helped and "130" in helped and "`" not in helped


SECRET = ("--client-secret", "s3cret-value")


def test_oauth_client_credentials_from_the_command_line(tmp_path: Path) -> None:
    """--oauth with a client id and secret: the token comes by the client credentials grant, is
    kept owner-only in the user's config folder, and the secret is never printed."""
    from tests.oauth.realm import Realm

    realm = Realm()
    realm.token_auth_methods = ["client_secret_basic"]
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path), "HOME": str(tmp_path)}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mcp_tasks", "tools", realm.url, "--oauth", *("--client-id", "cli"), *SECRET],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        assert realm.counts["token:client_credentials"] == 1
        assert "s3cret-value" not in done.stdout + done.stderr
        tokens = tmp_path / "mcp_tasks" / "tokens.json"
        assert tokens.stat().st_mode & 0o077 == 0
    finally:
        realm.close()


def test_oauth_flags_without_oauth_are_a_usage_error(tmp_path: Path) -> None:
    done = run("tools", "http://127.0.0.1:9/mcp", "--client-id", "x", cwd=tmp_path)
    assert done.returncode == 2
    assert "--client-id go with --oauth" in done.stderr and "Traceback" not in done.stderr


def test_a_legacy_task_bound_to_its_session_is_resumed_with_the_hint(tmp_path: Path) -> None:
    """Issue 15: on a 2025-era server that keeps a task for its session only (mcp 1.30), the
    resume hint printed at a timeout carries ``--session``; the command leaves that session open
    (no DELETE), and ``mcp-tasks wait URL ID --session SID`` in another process gets the result.
    """
    from tests.foreign.legacy_http_tasks import LegacyHttpTasksServer

    server = LegacyHttpTasksServer()
    server.start()
    try:
        timed_out = run("call", server.url, "hold", "--timeout", "0.3", cwd=tmp_path)
        assert timed_out.returncode == cli.EXIT_TIMEOUT, timed_out.stderr
        hint = next(line for line in timed_out.stderr.splitlines() if "Resume with" in line)
        resume = hint.split("Resume with: ", 1)[1].split("   (or:")[0].split()
        assert resume[:2] == ["mcp-tasks", "wait"] and "--session" in resume, hint
        assert server.deletes == []  # the session with the running task was left open
        task_id = resume[3]
        elsewhere = run("get", server.url, task_id)
        assert elsewhere.returncode == cli.EXIT_NO_TASK and "--session SESSION_ID" in elsewhere.stderr  # says why
        assert "Client.http" not in elsewhere.stderr and "session_id=" not in elsewhere.stderr  # in CLI terms
        with mt.Client.http(server.url) as releaser:
            releaser.call_tool("release")
        waited = run(*resume[1:], "--json", cwd=tmp_path)
        assert waited.returncode == cli.EXIT_OK, waited.stderr
        assert json.loads(waited.stdout)["content"][0]["text"] == "held done"
    finally:
        server.close()
