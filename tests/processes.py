"""Real processes for the tests: a Python script run on this tree's mcp_tasks, what it prints read
line by line, and the reference server over HTTP that such processes talk to, its tools held at a
gate until a test opens it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from types import TracebackType
from typing import Any, TypeVar

from mcp_tasks.server import Server, serve_http
from tests.conftest import ROOT

G = TypeVar("G", bound="GatedReference")


def python(
    script: str, *args: str, env: dict[str, str] | None = None, stdin: bool = False, stdout: bool = True
) -> subprocess.Popen[str]:
    """Run `script` (``python -c``) with `args` on this tree's mcp_tasks, `env` added to the
    environment; its stderr, and its stdin and stdout as asked, are text pipes (an unpiped stdout
    is the test's own).
    """
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE if stdin else None,
        stdout=subprocess.PIPE if stdout else None,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def line_of(process: subprocess.Popen[str], prefix: str) -> str:
    """Read `process`'s stdout up to its line starting with `prefix`; that line."""
    assert process.stdout is not None
    while True:
        line = process.stdout.readline()
        assert line, process.communicate()[1]
        if line.startswith(prefix):
            return line.strip()


def lines_before(process: subprocess.Popen[str], wanted: str, *, failing_on: str | None = None) -> list[str]:
    """Read `process`'s stdout up to its line `wanted`; the lines before it. The test fails, with the
    process's stderr, when the process ends first, or prints the line `failing_on` first.
    """
    assert process.stdout is not None
    before: list[str] = []
    while (line := process.stdout.readline()) != f"{wanted}\n":
        assert line and line != f"{failing_on}\n", process.communicate()[1]
        before.append(line.rstrip("\n"))
    return before


class GatedReference:
    """The reference server over HTTP (polling every 20 ms) at `url`; its tools wait in `held` for
    `gate`. Closing it opens the gate, then stops the HTTP server and the server.
    """

    def __init__(self) -> None:
        self.server = Server(poll_interval=0.02)
        self.gate = threading.Event()
        self.http = serve_http(self.server)
        self.url = self.http.url

    def noted_updates(self) -> list[dict[str, Any]]:
        """From now on, note the ``inputResponses`` of each tasks/update the server gets; the list
        they go in."""
        updates: list[dict[str, Any]] = []
        self.server.on_request = lambda method, params: (
            updates.append(params["inputResponses"]) if method == "tasks/update" else None
        )
        return updates

    def held(self, ctx: Any) -> None:
        """In a tool: wait until the gate opens or the task is cancelled."""
        while not self.gate.is_set() and not ctx.cancelled:
            ctx.sleep(0.01)

    def close(self) -> None:
        """Open the gate, stop the HTTP server and the server."""
        self.gate.set()
        self.http.close()
        self.server.close()

    def __enter__(self: G) -> G:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


class GatedJobs(GatedReference):
    """A `GatedReference` with ``job(n)``: a task that ends, with ``{"n": n}``, when the gate opens."""

    def __init__(self) -> None:
        super().__init__()

        @self.server.tool(task="required")
        def job(ctx: Any, n: int) -> dict[str, Any]:
            self.held(ctx)
            return {"n": n}
