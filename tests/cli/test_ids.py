"""Task ids at the command line: listed in the reprs' both-ends form (``e294…b175``, widened where
two would look alike), taken in that form (or ``...``, or a unique prefix) by ``wait``, ``get`` and
``cancel``, an ambiguous one answered with the candidates in short form; ``tasks --json`` one JSON
array with every time in ISO 8601 UTC, ``--jsonl`` a line per task. Against a foreign server whose
ids all start alike (as mcp 1.30's do within a session).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import mcp_tasks as mt
from mcp_tasks import cli
from mcp_tasks._redact import short_id
from mcp_tasks.cli._ids import is_short_form, matching, pick, shown_ids
from tests.conftest import ROOT
from tests.foreign.modern_http_tasks import ModernHttpTasksServer

PREFIX = "a1b2c3d4e5f6-"


def run(*args: str, env: dict[str, str] | None = None, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_tasks", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


@pytest.fixture
def alike() -> Iterator[ModernHttpTasksServer]:
    server = ModernHttpTasksServer(id_prefix=PREFIX)
    server.start()
    yield server
    server.close()


def test_shown_ids_are_both_ends_widened_only_where_two_look_alike() -> None:
    ids = ["e294aaaa0000b175", "e294bbbb1111b175", "ffff00001234abcd", "short"]
    shown = shown_ids(ids)
    assert shown["ffff00001234abcd"] == "ffff…abcd" == short_id("ffff00001234abcd")
    assert shown["short"] == short_id("short")
    assert shown["e294aaaa0000b175"] == "e294aa…b175" and shown["e294bbbb1111b175"] == "e294bb…b175"
    assert all(task_id not in form for task_id, form in shown.items() if len(task_id) >= 8)
    assert len(set(shown.values())) == len(ids)


def test_a_short_form_or_a_prefix_picks_one_task() -> None:
    ids = ["e294aaaa0000b175", "e294bbbb1111b176", "ffff00001234abcd"]
    assert is_short_form("e294…b175") and is_short_form("e294...b175") and not is_short_form("e294")
    assert pick("e294…b175", ids, str, "here") == "e294aaaa0000b175"
    assert pick("e294...b176", ids, str, "here") == "e294bbbb1111b176"
    assert pick("ffff", ids, str, "here") == "ffff00001234abcd"
    assert matching("e294aaaa0000b175", ids, str) == ["e294aaaa0000b175"]
    with pytest.raises(ValueError, match=r"2 tasks in here match 'e294': e294…b175, e294…b176; give one of these"):
        pick("e294", ids, str, "here")
    with pytest.raises(ValueError, match=r"no task 'zz…zz' in here"):
        pick("zz…zz", ids, str, "here")
    assert matching("e294…b175x", ids, str) == []  # both ends must match, not just one


def test_ids_sharing_a_prefix_are_listed_apart_and_taken_in_short_form(
    alike: ModernHttpTasksServer, tmp_path: Path
) -> None:
    store = str(tmp_path / "tasks.sqlite3")
    started = [run("call", alike.url, "hold", "--no-wait", "--store", store) for _ in range(2)]
    assert [s.returncode for s in started] == [0, 0], [s.stderr for s in started]
    first, second = (s.stdout.strip() for s in started)
    assert first[:8] == second[:8]  # the old 8-character listing could not tell them apart
    listed = run("tasks", "--store", store)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split()[0] for line in listed.stdout.splitlines()[1:]]
    assert rows == [short_id(first), short_id(second)] and rows[0] != rows[1]
    assert first not in listed.stdout and second not in listed.stdout

    got = run("get", alike.url, short_id(second), "--store", store)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["taskId"] == second
    ascii_form = short_id(first).replace("…", "...")
    assert json.loads(run("get", alike.url, ascii_form, "--store", store).stdout)["taskId"] == first
    waited = run("wait", short_id(first), "--store", store, "--timeout", "0.2")  # no TARGET: the store says
    assert waited.returncode == cli.EXIT_TIMEOUT, waited.stderr
    assert f"Task hold {short_id(first)} did not finish" in waited.stderr  # named by its kept call

    ambiguous = run("get", alike.url, PREFIX[:8], "--store", store)
    assert ambiguous.returncode == cli.EXIT_USAGE
    assert f"2 tasks in {store} (on {alike.url}) match" in ambiguous.stderr
    assert f"{short_id(first)}, {short_id(second)}; give one of these, or more of the id" in ambiguous.stderr
    assert "Traceback" not in ambiguous.stderr
    unknown = run("cancel", alike.url, "zzzz…zzzz", "--store", store)
    assert unknown.returncode == cli.EXIT_USAGE
    assert f"no task 'zzzz…zzzz' in {store} (on {alike.url})" in unknown.stderr
    assert "the server needs the whole id" in unknown.stderr
    cancelled = run("cancel", alike.url, short_id(second), "--store", store)  # resolved, then sent to the server
    assert cancelled.returncode == cli.EXIT_ERROR and "tasks/cancel" in cancelled.stderr  # which has no cancel
    # A full id the store does not know goes to the server as it is.
    elsewhere = run("get", alike.url, "not-in-the-store-0123456789", "--store", store)
    assert elsewhere.returncode == cli.EXIT_NO_TASK


def test_tasks_json_is_one_array_with_iso_times_and_jsonl_a_line_each(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    store = mt.SqliteTaskStore(path)
    status = mt.Status.from_map(
        {"taskId": "task-one-0123456789", "status": "working", "createdAt": "2026-07-28T09:30:00+02:00"}
    )
    store.record(mt.TaskRef("http://127.0.0.1:9/mcp", "task-one-0123456789", tool="t", created_at=1785222000.25))
    store.update("task-one-0123456789", status)
    store.record(mt.TaskRef("http://127.0.0.1:9/mcp", "task-two-0123456789", tool="t"))
    as_json = run("tasks", "--json", "--store", str(path))
    assert as_json.returncode == 0, as_json.stderr
    listed = json.loads(as_json.stdout)
    assert isinstance(listed, list) and [t["taskId"] for t in listed] == ["task-one-0123456789", "task-two-0123456789"]
    assert listed[0]["createdAt"] == "2026-07-28T07:00:00.250Z"
    assert listed[0]["lastStatus"]["createdAt"] == "2026-07-28T07:30:00.000Z"  # the server's time, in UTC
    assert all(t["createdAt"].endswith("Z") for t in listed)
    tool = subprocess.run(
        [sys.executable, "-m", "json.tool"], input=as_json.stdout, capture_output=True, text=True, timeout=60
    )
    assert tool.returncode == 0, tool.stderr
    lines = run("tasks", "--jsonl", "--store", str(path)).stdout.splitlines()
    assert [json.loads(line) for line in lines] == listed
    missing = run("tasks", "--json", "--store", str(tmp_path / "empty.sqlite3"))  # never made by a listing
    assert missing.returncode == cli.EXIT_USAGE and "no task store at" in missing.stderr
    assert not (tmp_path / "empty.sqlite3").exists()
    both = run("tasks", "--json", "--jsonl", "--store", str(path))
    assert both.returncode == cli.EXIT_USAGE and "not allowed with" in both.stderr


def test_a_whole_id_needs_no_store(alike: ModernHttpTasksServer, tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "mcp_tasks").mkdir(parents=True)
    (data / "mcp_tasks" / "tasks.sqlite3").write_text("not a store\n" * 100)  # the default store, unreadable
    env = {"XDG_DATA_HOME": str(data), "MCP_TASKS_STORE": ""}
    started = run("call", alike.url, "hold", "--no-wait", env=env)
    assert started.returncode == 0, started.stderr
    task_id = started.stdout.strip()
    got = run("get", alike.url, task_id, env=env)
    assert got.returncode == 0, got.stderr
    short = run("get", alike.url, short_id(task_id), env=env)  # only the store can make it whole
    assert short.returncode == cli.EXIT_ERROR and "tasks.sqlite3" in short.stderr and "Traceback" not in short.stderr
