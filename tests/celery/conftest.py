"""Fixtures of the Celery tests: a real redis-server on a free port of 127.0.0.1 (skipped only when
the binary is absent), the reference server over HTTP with counted tools, and real prefork
`celery worker` processes, shared by the tests of a module.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from celery import states

from mcp_tasks._errors import McpError
from mcp_tasks._store import open_store
from mcp_tasks.server import Server, serve_http
from tests.conftest import ROOT, mcp_threads

REDIS = shutil.which("redis-server")
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _until(process: subprocess.Popen[str], stream: Any, wanted: str, seen: list[str]) -> None:
    """Read `stream` line by line (kept in `seen`) up to a line containing `wanted`."""
    while True:
        line = stream.readline()
        assert line, f"the process ended ({process.poll()}) before saying {wanted!r}:\n" + "".join(seen[-40:])
        seen.append(line)
        if wanted in line:
            return


def _drain(stream: Any, seen: list[str]) -> None:
    for line in iter(stream.readline, ""):
        seen.append(line)


class Redis:
    """A redis-server of the tests' own, in a temporary directory: nothing saved, or (`persist`)
    every write appended to its file, so that a restart keeps the broker's messages and results.
    """

    def __init__(self, where: Path, *, persist: bool = False) -> None:
        assert REDIS is not None
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.args = [REDIS, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(where)]
        self.args += ["--save", "", "--daemonize", "no"]
        self.args += ["--appendonly", "yes", "--appendfsync", "always"] if persist else ["--appendonly", "no"]
        self.lines: list[str] = []
        self._start()

    def _start(self) -> None:
        self.process = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        _until(self.process, self.process.stdout, "Ready to accept connections", self.lines)
        self.reader = threading.Thread(target=_drain, args=(self.process.stdout, self.lines), daemon=True)
        self.reader.start()

    def restart(self) -> None:
        """Stop the server (a clean shutdown) and start it again on its port and files."""
        self.close()
        self._start()

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(30)
        self.reader.join(10)
        assert self.process.stdout is not None
        self.process.stdout.close()


class Served:
    """The reference server over HTTP; each tool call counted by (tool, n), each input answer by key."""

    def __init__(self) -> None:
        self.server = Server(poll_interval=0.02)
        self.http = serve_http(self.server)
        self.url = self.http.url
        self.lock = threading.Condition()
        self.calls: Counter[tuple[str, int]] = Counter()
        self.cancelled: set[int] = set()
        self.updates: Counter[str] = Counter()
        self.gets = 0
        self.gets_of: Counter[str] = Counter()  # tasks/get by task id
        self.listens = 0
        self.task_ids: set[str] = set()
        self.server.on_request = self._noted
        self._tools()

    def _noted(self, method: str, params: dict[str, Any]) -> None:
        with self.lock:
            if method == "tasks/update":
                self.updates.update(list(params.get("inputResponses", {})))
            if method == "tasks/get":
                self.gets += 1
                self.gets_of[params["taskId"]] += 1
                self.task_ids.add(params["taskId"])
            if method == "subscriptions/listen":
                self.listens += 1
            self.lock.notify_all()

    def _count(self, tool: str, n: int) -> None:
        with self.lock:
            self.calls[(tool, n)] += 1
            self.lock.notify_all()

    def until(self, test: Any, timeout: float = 120.0) -> None:
        """Wait until `test()` holds (checked whenever the server hears something)."""
        with self.lock:
            assert self.lock.wait_for(test, timeout), "the server never saw what the test waits for"

    def _tools(self) -> None:
        @self.server.tool(task="required")
        def work(ctx: Any, n: int, seconds: float) -> dict[str, Any]:
            self._count("work", n)
            try:
                ctx.sleep(seconds)
            except BaseException:
                with self.lock:
                    self.cancelled.add(n)
                    self.lock.notify_all()
                raise
            return {"n": n}

        @self.server.tool(task="required")
        def boom(ctx: Any, n: int) -> dict[str, Any]:
            self._count("boom", n)
            raise McpError(-32001, "the export was refused", {"why": "closed"})

        @self.server.tool(task="required")
        def ask(ctx: Any, n: int) -> dict[str, Any]:
            self._count("ask", n)
            answer = ctx.elicit(f"name-{n}", "Who answers?", SCHEMA)
            return {"n": n, "name": answer["content"]["name"]}

        @self.server.tool(task="required")
        def form(ctx: Any, n: int) -> dict[str, Any]:
            """Two keys asked at once, then a third."""
            self._count("form", n)
            params = {"mode": "form", "message": "Who?", "requestedSchema": SCHEMA}
            asked = {"method": "elicitation/create", "params": params}
            first = ctx.ask_all({f"a-{n}": asked, f"b-{n}": asked})
            last = ctx.elicit(f"c-{n}", "And then?", SCHEMA)
            names = [first[f"a-{n}"], first[f"b-{n}"], last]
            return {"n": n, "names": [answer["content"]["name"] for answer in names]}

    def close(self) -> None:
        self.http.close()
        self.server.close()


class Worker:
    """A real `celery worker` (prefork, concurrency 2) on the tests' app, in its own session."""

    def __init__(
        self, name: str, env: dict[str, str], queue: str = "celery", app: str = "tests.celery.worker_app"
    ) -> None:
        args = [sys.executable, "-m", "celery", "-A", app, "worker", "-P", "prefork", "-c", "2"]
        self.node = f"{name}@{socket.gethostname()}"
        args += ["-n", self.node, "-Q", queue, "-l", "info", "--without-gossip", "--without-mingle"]
        args += ["--without-heartbeat"]
        self.process = subprocess.Popen(
            args,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), **env},
            start_new_session=True,
        )
        self.lines: list[str] = []
        _until(self.process, self.process.stderr, " ready.", self.lines)
        self.reader = threading.Thread(target=_drain, args=(self.process.stderr, self.lines), daemon=True)
        self.reader.start()

    def kill(self) -> None:
        """SIGKILL the worker and its pool processes at once."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)
        self.reader.join(10)
        assert self.process.stderr is not None
        self.process.stderr.close()

    def close(self) -> None:
        """A warm shutdown, as a deployment stops a worker: SIGTERM to its main process, which
        lets its pool finish the runs in hand (a SIGTERM to the whole group would kill them
        mid-run, and log a WorkerLostError the tests would take for a fault); then anything left
        of its group is killed.
        """
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)
        self.reader.join(10)
        assert self.process.stderr is not None
        self.process.stderr.close()


class Fleet:
    """Redis, the served tools, and the workers on them (their environment in `env`)."""

    def __init__(self, where: Path) -> None:
        self.redis = Redis(where)
        self.served = Served()
        self.env = {"MCP_CELERY_REDIS": self.redis.url, "MCP_CELERY_STORE": str(where / "tasks.sqlite3")}
        os.environ.update(self.env)  # the tests' own app (tests.celery.worker_app) reads them too
        # Made before the workers start, as a deployment would (processes that make a new SQLite
        # store at the same instant can see each other's half-made schema).
        open_store(self.env["MCP_CELERY_STORE"]).close()
        self.workers = [Worker("a", self.env), Worker("b", self.env)]

    def close(self) -> None:
        for worker in self.workers:
            worker.close()
        self.served.close()
        self.redis.close()


def app_of(fleet: Fleet) -> ModuleType:
    """The tests' own Celery app (a client of the fleet's broker and backend): read again when an
    earlier module's fleet (another Redis) made it.
    """
    module = importlib.import_module("tests.celery.worker_app")
    if fleet.redis.url != module.REDIS:
        module = importlib.reload(module)
    return module


def task_id_of(fleet: Fleet, endpoint: str, result: Any) -> str:
    """The MCP task id the call of `result` to `endpoint` started, as the fleet's store keeps it."""
    store = open_store(fleet.env["MCP_CELERY_STORE"])
    try:
        intent = store.get_intent(endpoint, result.id)
    finally:
        store.close()
    assert intent is not None and intent.task_id is not None, "the call's task id is not recorded"
    return intent.task_id


def state_becomes(result: Any, state: str) -> None:
    """Read the result's state (a backend read every 50 ms) until it is `state`; fail if it ends first."""
    while (now := result.state) != state:
        assert now not in states.READY_STATES, f"the result ended {now} ({result.result!r}) before it was {state}"
        threading.Event().wait(0.05)


@pytest.fixture(autouse=True)
def no_leftover_threads() -> Iterator[None]:
    """As the suite's own, but the module's reference server (shared by its tests) keeps its threads
    until the module ends; every other mcp_tasks- thread is gone after each test.
    """
    yield
    assert [name for name in mcp_threads() if not name.startswith("mcp_tasks-server")] == []


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    if REDIS is None:
        pytest.skip("redis-server is not installed (python3 .ci/dev.py setup installs it on Debian)")
    where = tmp_path_factory.mktemp("celery")
    fleet = Fleet(where)
    try:
        yield fleet
    finally:
        fleet.close()
        shutil.rmtree(where, ignore_errors=True)
