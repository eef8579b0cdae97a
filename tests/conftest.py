"""Shared fixtures: the reference server over direct, stdio and HTTP, and the thread check."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import mcp_tasks as mt
from mcp_tasks.server import HttpServer, Server, serve_http
from tests.fixtures.servers import make_server
from tests.foreign.slow_link import SlowLink
from tests.pg import Cluster, running_cluster

ROOT = Path(__file__).resolve().parent.parent

# A suite started as a background job (`cmd &` in a shell without job control, as CI wrappers and
# nohup do) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt: the Ctrl-C
# tests, and the processes they start, need Python's own handler back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
TRANSPORTS = ("direct", "stdio", "http")
STDIO_SERVER = ["-m", "mcp_tasks.server", "tests.fixtures.servers:from_env"]


def stdio_env(**server_options: Any) -> dict[str, str]:
    """The environment for a stdio test server with these options."""
    env = dict(os.environ)
    env["MCP_TASKS_TEST_SERVER"] = json.dumps(server_options)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def mcp_threads() -> list[str]:
    """The names of this library's threads that are alive."""
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("mcp_tasks-"))


@pytest.fixture(autouse=True)
def no_leftover_threads() -> Iterator[None]:
    """Every test ends with no mcp_tasks- thread alive (closing joins them, so no waiting)."""
    yield
    assert mcp_threads() == []


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """A real PostgreSQL for the session (tests/pg.py), started at the first test that needs it."""
    with running_cluster() as cluster:
        yield cluster


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> str:
    """The URL of a fresh database of the session's PostgreSQL."""
    return pg_cluster.url(pg_cluster.new_database())


@pytest.fixture
def pg_slow_link(pg_url: str) -> Iterator[SlowLink]:
    """A link to `pg_url`'s server whose delay the test sets (none at first); `url_of(pg_url)`
    reaches the database through it."""
    where = urlsplit(pg_url)
    assert where.port is not None
    with SlowLink(("127.0.0.1", where.port), 0.0) as link:
        yield link


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[mt.PostgresTaskStore]:
    """A `PostgresTaskStore` in a fresh database, closed after."""
    with mt.PostgresTaskStore(pg_url) as store:
        yield store


STREAM_GONE = 30.0
"""How long a test gives the reference server to notice that a client closed its listen stream:
over HTTP a server sees it only when a write fails, at its next keep-alive (every 5 s) or the one
after, as real servers do."""


def lease_elsewhere(client: mt.Client, store: mt.TaskStore, task_id: str, holder: str, ttl: float = 600.0) -> bool:
    """Give `holder` (another process's wait) the lease of a task `client` started: the lease its
    record came with (the client's starter's) is freed first, as if that wait had taken over.
    """
    from mcp_tasks._tasks._starts import starts_of

    store.release(task_id, starts_of(client.channel).holder)
    return store.acquire(task_id, holder, ttl)


def eventually(check: Callable[[], Any], timeout: float = 10.0, message: str = "condition") -> Any:
    """Re-check a condition until it holds (for state in another process); fails after `timeout`."""
    end = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"{message} did not hold within {timeout}s")
        time.sleep(0.01)


class Background:
    """A call running in a thread of its own: `result()` joins it and returns its value, or raises
    what it raised."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self._thread.start()

    def _run(self, call: Callable[[], Any]) -> None:
        try:
            self._value = call()
        except BaseException as exc:
            self._error = exc

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def result(self, timeout: float = 60.0) -> Any:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the call did not return"
        if self._error is not None:
            raise self._error
        return self._value


def open_streams(client: mt.Client) -> int:
    """How many listen streams the test server has open."""
    count: int = client.call_tool("listeners")["structuredContent"]["open"]
    return count


class Harness:
    """Starts the test server on one transport and makes clients of it; closes all at the end."""

    def __init__(self, transport: str) -> None:
        self.transport = transport
        self.server: Server | None = None
        self._http: list[HttpServer] = []
        self._servers: list[Server] = []
        self._clients: list[mt.Client] = []

    def client(self, server: dict[str, Any] | None = None, **client_opts: Any) -> mt.Client:
        """A client of a new test server made with the `server` options."""
        options = dict(server or {})
        if self.transport == "stdio":
            client = mt.Client.stdio(sys.executable, STDIO_SERVER, env=stdio_env(**options), cwd=ROOT, **client_opts)
        else:
            self.server = make_server(**options)
            self._servers.append(self.server)
            if self.transport == "direct":
                client = mt.Client.direct(self.server, **client_opts)
            else:
                http = serve_http(self.server)
                self._http.append(http)
                client = mt.Client.http(http.url, **client_opts)
        self._clients.append(client)
        return client

    def close(self) -> None:
        for client in self._clients:
            client.close()
        for http in self._http:
            http.close()
        for server in self._servers:
            server.close()


@pytest.fixture(params=TRANSPORTS)
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    """The test server over each transport in turn."""
    h = Harness(request.param)
    yield h
    h.close()


@pytest.fixture
def client(harness: Harness) -> mt.Client:
    """A client of the test server, with no input handlers."""
    return harness.client()


def release(client: mt.Client, gate: str = "slow") -> None:
    """Let the tool bodies waiting on `gate` go on."""
    client.call_tool("release", {"gate": gate})


def accept_form(params: dict[str, Any]) -> dict[str, Any]:
    """A form handler that accepts with confirmed: true."""
    return {"action": "accept", "content": {"confirmed": True}}
