"""The command line and the task store: ``call --store`` records, ``mcp-tasks tasks`` lists what
is unfinished, and ``mcp-tasks wait TASK_ID`` (no TARGET) finds the endpoint in the store and
resumes, in a pseudo-terminal as a person uses it. Also `mt.resume` from Python.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import mcp_tasks as mt
from mcp_tasks import cli
from mcp_tasks._redact import short_id
from tests.cli.server import served_over_http
from tests.cli.test_commands import Terminal
from tests.conftest import ROOT
from tests.pg import PASSWORD, Cluster
from tests.store.test_postgres import closed_port


@pytest.fixture
def http_url() -> Iterator[str]:
    with served_over_http() as url:
        yield url


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_tasks", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def test_the_cli_lists_the_store_and_resumes_a_task_by_a_prefix(http_url: str, tmp_path: Path) -> None:
    store = str(tmp_path / "tasks.sqlite3")
    started = run("call", http_url, "ask_name", "--no-wait", "--store", store)
    assert started.returncode == 0, started.stderr
    task_id = started.stdout.strip()
    listed = Terminal(tmp_path, "tasks", "--store", store)
    code, out, shown = listed.finish()
    assert code == 0, shown
    header, row = out.splitlines()
    assert header.split() == ["TASK", "TOOL", "ENDPOINT", "AGE", "STATUS"]
    assert row.split()[:3] == [short_id(task_id), "ask_name", http_url] and row.split()[-1] == "working"
    assert task_id not in out  # a bearer credential: both ends of it only
    term = Terminal(tmp_path, "wait", task_id[:8], "--store", store)  # a prefix still works
    term.expect("What is your name?")
    term.expect("(empty to decline): ")
    term.send(b"Ada\r")
    code, out, shown = term.finish()
    assert code == 0, shown
    assert '"hello": "Ada"' in out
    assert "no unfinished tasks" in run("tasks", env={"MCP_TASKS_STORE": store}).stdout


def test_the_cli_says_what_it_cannot_resume(tmp_path: Path, http_url: str) -> None:
    store = tmp_path / "tasks.sqlite3"
    kept = mt.SqliteTaskStore(store)
    kept.record(mt.TaskRef("python -m my_server", "stdio-task-0123456789", tool="t"))
    kept.record(mt.TaskRef(http_url, "http-task-aaaa", tool="t"))
    kept.record(mt.TaskRef(http_url, "http-task-bbbb", tool="t"))
    gone = run("wait", "stdio-task", "--store", str(store))
    assert gone.returncode == cli.EXIT_USAGE and "lived in the process that started it" in gone.stderr
    ambiguous = run("wait", "http-task", "--store", str(store)).stderr
    assert "2 tasks in" in ambiguous and "http…aaaa, http…bbbb; give one of these, or more of the id" in ambiguous
    assert "no task 'nothing'" in run("wait", "nothing", "--store", str(store)).stderr
    bad = tmp_path / "notes.txt"
    bad.write_text("not a store\n" * 100)
    broken = run("tasks", "--store", str(bad))
    assert broken.returncode == cli.EXIT_ERROR and "notes.txt" in broken.stderr and "Traceback" not in broken.stderr
    assert run("wait", "--store", str(store)).returncode == cli.EXIT_USAGE


def test_resume_from_python(http_url: str, tmp_path: Path) -> None:
    store = mt.SqliteTaskStore(tmp_path / "tasks.sqlite3")
    with mt.Client.http(http_url, store=store) as client:
        task = mt.call_tool(client, "ask_name")
    assert isinstance(task, mt.Status)
    (ref,) = store.unfinished()
    handlers = mt.InputHandlers(form=lambda params: {"action": "accept", "content": {"name": "Lin"}})
    with mt.Client.http(http_url, input_handlers=handlers) as client:
        result = mt.resume(ref, client=client, store=store, timeout=60)
    assert result["structuredContent"] == {"hello": "Lin", "action": "accept"}
    assert store.unfinished() == []
    with pytest.raises(ValueError, match=r"lived in the process that started it.*client="):
        mt.resume(mt.TaskRef("direct:x", "abc"), timeout=1)
    with pytest.raises(ValueError, match="is not known"):
        mt.resume("no-such-task", store=store)
    with pytest.raises(TypeError):
        mt.resume(42)  # type: ignore[arg-type]


def test_the_listing_shows_endpoints_without_their_query_or_userinfo(tmp_path: Path) -> None:
    store = tmp_path / "tasks.sqlite3"
    secret = "https://ada:hunter2@tasks.example:8443/mcp?api_key=sk-live-0123456789#frag"
    mt.SqliteTaskStore(store).record(mt.TaskRef(secret, "task-0123456789abcdef", tool="export"))
    listed = run("tasks", "--store", str(store))
    assert listed.returncode == 0, listed.stderr
    assert "https://tasks.example:8443/mcp" in listed.stdout
    for hidden in ("hunter2", "ada", "api_key", "sk-live", "frag"):
        assert hidden not in listed.stdout
    assert secret in run("tasks", "--json", "--store", str(store)).stdout  # whole where it is data


def test_the_cli_takes_libpq_key_value_pairs_and_never_shows_the_password(
    pg_cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MCP_TASKS_STORE", raising=False)
    database = pg_cluster.new_database()
    pairs = f"host=127.0.0.1 port={pg_cluster.port} user=postgres password='{PASSWORD}' dbname={database}"
    server = f"PostgreSQL 127.0.0.1:{pg_cluster.port}/{database}"

    def said(*argv: str, code: int = 0) -> str:
        assert cli.main(list(argv)) == code
        out, err = capsys.readouterr()
        assert PASSWORD not in out + err and "Traceback" not in err
        return out + err

    for location in (pairs, pg_cluster.url(database)):
        assert said("tasks", "--store", location) == f"no unfinished tasks in {server}\n"
        assert f"no task 'nothing' in {server}" in said("wait", "nothing", "--store", location, code=cli.EXIT_USAGE)
    with mt.open_store(pairs) as store:
        store.record(mt.TaskRef("http://127.0.0.1:9/mcp", "task-0123456789abcdef", tool="export"))
    for location in (pairs, pg_cluster.url(database)):
        assert short_id("task-0123456789abcdef") in said("tasks", "--store", location)
        assert '"taskId": "task-0123456789abcdef"' in said("tasks", "--json", "--store", location)
    monkeypatch.setenv("MCP_TASKS_STORE", pairs)
    assert "export" in said("tasks")
    assert list(tmp_path.iterdir()) == []  # no SQLite file named after the string


def test_the_cli_refuses_a_location_it_cannot_read_without_showing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MCP_TASKS_STORE", raising=False)
    secret = "s3cret-Kv9-pw"
    for location in (f"hots=db password={secret}", f"mysql://ada:{secret}@db/app"):
        assert cli.main(["tasks", "--store", location]) == cli.EXIT_ERROR
        err = capsys.readouterr().err
        assert err.count("--store: ") == 1 and "key=value" in err and secret not in err
        monkeypatch.setenv("MCP_TASKS_STORE", location)
        assert cli.main(["tasks"]) == cli.EXIT_ERROR
        err = capsys.readouterr().err
        assert "$MCP_TASKS_STORE: " in err and secret not in err
        monkeypatch.delenv("MCP_TASKS_STORE")
    port = closed_port()
    unreachable = f"host=127.0.0.1 port={port} user=ada password={secret} dbname=inventory"
    assert cli.main(["tasks", "--store", unreachable]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert f"127.0.0.1:{port}/inventory" in err and secret not in err
    assert list(tmp_path.iterdir()) == []


def test_reading_commands_never_make_a_store(
    http_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped --store (or $MCP_TASKS_STORE) is an error naming its path for a command that only
    reads the store, never an empty store made there; ``call --store`` makes it. The default file,
    not made yet, has no tasks.
    """
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("MCP_TASKS_STORE", raising=False)
    typo = tmp_path / "typo" / "dir" / "x.sqlite3"
    for command in (["tasks"], ["tasks", "--json"], ["wait", "e294…b175"], ["get", http_url, "e294…b175"]):
        assert cli.main([*command, "--store", str(typo)]) == cli.EXIT_USAGE, command
        assert f"--store: there is no task store at {typo}" in capsys.readouterr().err, command
    monkeypatch.setenv("MCP_TASKS_STORE", str(typo))
    assert cli.main(["tasks"]) == cli.EXIT_USAGE
    assert f"$MCP_TASKS_STORE: there is no task store at {typo}" in capsys.readouterr().err
    assert not (tmp_path / "typo").exists()
    monkeypatch.delenv("MCP_TASKS_STORE")
    assert cli.main(["tasks"]) == cli.EXIT_OK  # the default file: no task kept yet
    assert "no unfinished tasks in " in capsys.readouterr().out and not (tmp_path / "data").exists()
    assert cli.main(["call", http_url, "shout", '{"text": "hi"}', "--store", str(typo)]) == cli.EXIT_OK
    assert typo.exists()  # the command that records makes the store
    capsys.readouterr()
    assert cli.main(["tasks", "--store", str(typo)]) == cli.EXIT_OK
    assert capsys.readouterr().out == f"no unfinished tasks in {typo}\n"
