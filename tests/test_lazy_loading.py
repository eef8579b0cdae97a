"""`import mcp_tasks` loads what a program uses, on first use: no OAuth, PostgreSQL, OpenTelemetry,
cryptography or prompt for a program that never asks for them, none of the client for
``mcp-tasks --help``; and what used to happen at import (the notebook renderer, the prompt, the
log filter, the tasks code on a session) still happens when it is needed.

Each check runs in a fresh interpreter: a test process has loaded everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import mcp_tasks as mt
from tests.conftest import ROOT

NOT_ON_IMPORT = (
    "psycopg",
    "psycopg_pool",
    "opentelemetry",
    "cryptography",
    "mcp_tasks._oauth",
    "mcp_tasks._store._postgres",
    "mcp_tasks._people._prompt",
    "mcp_tasks._people._asking",
    "mcp_tasks._tracing._otel",
)
"""Loaded only by what asks for them (a package stands for all its modules)."""


def _fresh(code: str) -> str:
    """Run `code` in a new interpreter; its stdout."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _loaded(code: str) -> list[str]:
    """The modules of `NOT_ON_IMPORT` loaded after running `code` in a new interpreter."""
    shown = _fresh(f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))")
    modules = json.loads(shown.splitlines()[-1])
    return [m for m in modules if any(m == name or m.startswith(name + ".") for name in NOT_ON_IMPORT)]


def test_import_loads_none_of_what_a_call_may_need() -> None:
    assert _loaded("import mcp_tasks") == []


def test_the_help_loads_none_of_it_either() -> None:
    code = (
        "import contextlib, io\nfrom mcp_tasks.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['call', '--help'])"
    )
    assert _loaded(code) == []


def test_a_client_and_its_waits_load_no_oauth_postgres_or_tracing() -> None:
    """What a plain script uses (the prompt is for `InputHandlers.interactive` alone)."""
    code = "import mcp_tasks as mt\nmt.Client, mt.call_and_await, mt.submit, mt.wait_all, mt.SqliteTaskStore, mt.Status"
    assert _loaded(code) == []


def test_every_public_name_resolves_in_a_fresh_process() -> None:
    code = (
        "import mcp_tasks as mt\n"
        "assert set(mt.__all__) <= set(dir(mt)), set(mt.__all__) - set(dir(mt))\n"
        "for name in mt.__all__:\n"
        "    exec(f'from mcp_tasks import {name}')\n"
        "    assert getattr(mt, name) is not None, name\n"
        "print('ok')"
    )
    assert _fresh(code).strip() == "ok"


def test_the_errors_name_the_package_before_any_name_is_used() -> None:
    """A traceback (the command's --debug, a program that never touched a public name) says
    ``mcp_tasks.TaskFailed``, as it did when importing the package loaded everything.
    """
    code = "import mcp_tasks._errors as e\nprint(e.TaskFailed.__module__, e.McpError.__module__)"
    assert _fresh(code).split() == ["mcp_tasks", "mcp_tasks"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="'mcp_tasks' has no attribute 'wait_tasks'"):
        mt.wait_tasks  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(ImportError):
        exec("from mcp_tasks import wait_tasks")


def test_what_import_did_still_happens_when_needed() -> None:
    """A fresh process that imported `mcp_tasks` alone: a status and an error show as tables,
    the interactive handlers ask through the prompt, log lines are escaped, and the tasks code
    runs on a client's session (a task made, followed and its result read).
    """
    code = """
import logging
import mcp_tasks as mt
from mcp_tasks.server import Server

status = mt.Status.from_map({"taskId": "task-0123456789", "status": "working", "statusMessage": "row 2"})
page = status._repr_html_()
assert "<table" in page and "row 2" in page, page
assert "<table" in mt.TaskTimeout("task-0123456789", 1, status)._repr_html_()

handlers = mt.InputHandlers.interactive()
assert handlers.form is not None and handlers.url is not None

assert logging.getLogger("mcp_tasks").filters, "the log filter is installed on import"

server = Server(poll_interval=0.01)
server.add_tool(lambda ctx: {"done": True}, name="export", task="required")
with mt.Client.direct(server) as client:
    created = mt.call_tool(client, "export")
    assert isinstance(created, mt.Status), created
    assert mt.await_task(client, created, timeout=60)["structuredContent"] == {"done": True}
    future = mt.submit(client, "export")
    assert future.result(timeout=60)["structuredContent"] == {"done": True}
server.close()
try:
    raise mt.TaskCancelled(status)
except mt.TaskCancelled as exc:
    assert type(exc).__module__ == "mcp_tasks", type(exc).__module__
print("ok")
"""
    assert _fresh(code).strip() == "ok"
