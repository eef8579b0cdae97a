"""What the command says, in the command line's terms: the library's Python-side advice
(``timeout=None``, ``Client.http(url, session_id=...)``, ``update_task``) said as ``--timeout``,
``--session``, ``mcp-tasks wait``; a TARGET that is a URL without its scheme answered with "did you
mean http://…?"; a tool's own error (``isError: true``) exits 1 with the tool's text on stderr and
the result on stdout.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

import mcp_tasks as mt
from mcp_tasks import cli
from mcp_tasks._redact import short_id
from mcp_tasks.cli._hints import in_cli_terms
from mcp_tasks.cli._parser import UsageError
from mcp_tasks.cli._target import check_target
from tests.cli.server import served_over_http
from tests.cli.test_commands import run
from tests.foreign.modern_http_tasks import ModernHttpTasksServer

ROOT = Path(__file__).resolve().parents[2]

# What a Python caller is told and a person at the shell cannot use.
PYTHON_TERMS = re.compile(
    r"\b[a-z_]+=(None|True|False|[a-z_.]+)|Client\.\w+\(|\bupdate_task\b|\bget_task\b|\bcancel_on_timeout\b"
    r"|\binput handlers?\b|No input handler"
)


@pytest.fixture
def http_url() -> Iterator[str]:
    with served_over_http() as url:
        yield url


def _status(state: str, **fields: object) -> mt.Status:
    return mt.Status.from_map({"taskId": "task-0123456789abcdef", "status": state, **fields})


def library_messages() -> list[str]:
    """The library's own messages that carry advice for Python callers, made by the library."""
    made: list[str] = [
        str(mt.TaskTimeout("task-0123456789abcdef", 0.3, _status("working"))),
        str(mt.TaskTimeout("task-0123456789abcdef", 0.3, _status("working"), cancelled=True)),
        str(mt.InputRequired(_status("input_required", inputRequests={"k": {"method": "elicitation/create"}}))),
    ]
    for state in (mt.TaskState.COMPLETED, mt.TaskState.FAILED):  # as a creation result may be: no payload
        status = attrs.evolve(_status("working"), status=state)
        with pytest.raises(ValueError) as caught:
            mt.outcome(status)
        made.append(str(caught.value))
    return made


def test_every_library_hint_the_command_shows_is_in_cli_terms() -> None:
    messages = library_messages()
    assert all(PYTHON_TERMS.search(message) for message in messages), messages  # they do speak Python
    for message in messages:
        said = in_cli_terms(message)
        assert not PYTHON_TERMS.search(said), said
    assert "without --timeout it waits as long as it takes" in in_cli_terms(messages[0])
    assert "mcp-tasks wait" in in_cli_terms(messages[2]) and "mcp-tasks get" in in_cli_terms(messages[3])
    # Made where a server asks what no handler answers (_channel.py), and on a legacy unknown task.
    source = (ROOT / "mcp_tasks" / "_session" / "_channel.py").read_text()
    assert "No input handler for the server's" in source
    said = in_cli_terms("No input handler for the server's sampling request")
    assert said == "mcp-tasks cannot answer the server's sampling request (it answers form and URL questions)"
    assert "session_id=status.session_id" in (ROOT / "mcp_tasks" / "_tasks" / "_legacy.py").read_text()
    said = in_cli_terms("it only: join that session with Client.http(url, session_id=status.session_id))")
    assert said == "it only: join that session with --session SESSION_ID (printed with the task's id))"


def test_an_answer_stdin_cannot_give_is_said_as_the_command(http_url: str) -> None:
    done = run("call", http_url, "ask_name", stdin="")  # stdin closed before the question
    assert done.returncode == cli.EXIT_INPUT
    assert "mcp-tasks could not answer task " in done.stderr and "no answer: stdin is closed" in done.stderr
    assert not PYTHON_TERMS.search(done.stderr), done.stderr


def test_an_unknown_task_has_the_same_hint_from_the_api_and_the_command(http_url: str) -> None:
    """A bare id the server does not know: the API's error carries what the command says (one
    wording, the library's), after the server's own text.
    """
    hint = "no such task on this server: expired, mistyped, or another session's"
    with mt.Client.http(http_url) as client:
        for ask in (mt.get_task, mt.cancel_task, mt.wait_task):
            with pytest.raises(mt.McpError) as raised:
                ask(client, "nope-0123456789")
            assert raised.value.code == -32602
            said = raised.value.message
            assert said == f"Unknown or inaccessible taskId ({hint})", (ask, said)
    done = run("get", http_url, "nope-0123456789")
    assert done.returncode == cli.EXIT_NO_TASK
    assert f"task nope…6789: Unknown or inaccessible taskId ({hint}) (error -32602)" in done.stderr


def test_a_timeout_over_http_says_what_to_type(http_url: str) -> None:
    done = run("call", http_url, "hold", "--timeout", "0.2")
    assert done.returncode == cli.EXIT_TIMEOUT
    assert "(without --timeout it waits as long as it takes)" in done.stderr
    assert done.stderr.count("Resume with: mcp-tasks wait") == 1, done.stderr  # printed once, at its creation
    assert done.stderr.rstrip().endswith("or cancel it, as printed above"), done.stderr
    assert not PYTHON_TERMS.search(done.stderr), done.stderr
    created = done.stderr.split("Task created: ", 1)[1].split()[0]
    waited = run("wait", http_url, created, "--timeout", "0.2")  # nothing printed before: said here
    assert waited.returncode == cli.EXIT_TIMEOUT
    assert waited.stderr.count(f"Resume with: mcp-tasks wait {http_url} {created}") == 1, waited.stderr


@pytest.mark.parametrize(
    ("target", "meant"),
    [
        ("127.0.0.1:8000/mcp", "http://127.0.0.1:8000/mcp"),
        ("localhost:8765", "http://localhost:8765"),
        ("[::1]:8000/mcp", "http://[::1]:8000/mcp"),
        ("mcp.example.com:443/mcp", "http://mcp.example.com:443/mcp"),
        ("localhost/mcp", "http://localhost/mcp"),
        ("mcp.example.com/mcp", "https://mcp.example.com/mcp"),
    ],
)
def test_a_url_without_its_scheme_is_answered_with_did_you_mean(target: str, meant: str) -> None:
    with pytest.raises(UsageError, match=re.escape(f"did you mean {meant}?")):
        check_target(target)
    for command in (("call", target, "tool"), ("get", target, "some-task-id"), ("tools", target)):
        done = run(*command)
        assert done.returncode == cli.EXIT_USAGE, done.stderr
        assert f"did you mean {meant}?" in done.stderr
        assert "No module named" not in done.stderr and "Traceback" not in done.stderr


def test_targets_that_are_not_urls_are_left_alone(tmp_path: Path) -> None:
    assert check_target("my_server:server") == "module"
    assert check_target("pkg.mod:make_server") == "module"
    assert check_target("python -m my_server") == "stdio"
    assert check_target("./server.py") == "stdio"
    assert check_target("http://127.0.0.1:8000/mcp") == "http"
    script = tmp_path / "run.example.sh"
    script.write_text("#!/bin/sh\n")
    assert check_target(str(script)) == "stdio"  # an existing file is a command, dots and all
    with pytest.raises(UsageError, match="the TARGET is empty"):
        check_target("  ")


def test_a_tools_own_error_exits_1_with_its_text(http_url: str) -> None:
    done = run("call", http_url, "refuse")  # a task that completes with isError: true
    assert done.returncode == cli.EXIT_TOOL_ERROR
    result = json.loads(done.stdout)
    assert result["isError"] is True  # the result is still printed, for scripts
    created = done.stderr.split("Task created: ", 1)[1].split()[0]
    assert f"mcp-tasks: Tool 'refuse' (task {short_id(created)}) reported an error: no such report" in done.stderr
    as_json = run("call", http_url, "refuse", "--json")
    last = json.loads(as_json.stderr.splitlines()[-1])
    assert last["event"] == "error" and last["exit"] == cli.EXIT_TOOL_ERROR and "no such report" in last["message"]


def test_a_tools_own_error_without_a_task_exits_1_too() -> None:
    server = ModernHttpTasksServer()  # a foreign server answering isError at once, as for a misspelt name
    server.start()
    try:
        done = run("call", server.url, "refuse")
    finally:
        server.close()
    assert done.returncode == cli.EXIT_TOOL_ERROR
    assert json.loads(done.stdout)["isError"] is True
    assert "mcp-tasks: Tool 'refuse' reported an error: no such report" in done.stderr


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--private-key", "key.pem"], "--private-key authenticates a pre-registered client: pass its --client-id"),
        (["--grant", "jwt_bearer", "--client-id", "x"], "--grant jwt_bearer and --assertion-file go together"),
        (
            ["--grant", "enterprise_managed", "--client-id", "x"],
            "--grant enterprise_managed needs --id-token-file, --idp-token-endpoint and --client-id",
        ),
    ],
)
def test_oauth_options_that_do_not_go_together_are_named_by_their_flags(flags: list[str], said: str) -> None:
    done = run("call", "http://127.0.0.1:9/mcp", "tool", "--oauth", *flags)
    assert done.returncode == cli.EXIT_USAGE
    assert f"mcp-tasks: {said}\n" in done.stderr
    assert not PYTHON_TERMS.search(done.stderr) and "client_id" not in done.stderr, done.stderr
