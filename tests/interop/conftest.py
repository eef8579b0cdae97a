"""Fixtures for the interop tests: an independent Tasks server (fastmcp-tasks, from .venv-peers)
over stdio and over HTTP, and the conformance runner (from .npm-peers).

`python .ci/peers.py install` puts both in place (`.ci/dev.py test` runs it). A peer that is
missing fails the test rather than skipping it: CI must never pass without having talked to it.
Skip the whole set locally with ``-m "not interop"``.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from tests.conftest import ROOT, mcp_threads

HERE = Path(__file__).resolve().parent
PEERS_BIN = ROOT / ".venv-peers" / ("Scripts" if os.name == "nt" else "bin")
PEER_PYTHON = PEERS_BIN / "python"
PEER_SERVER = HERE / "fastmcp_server.py"
HOST = "127.0.0.1"
STARTUP_DEADLINE = 60.0
INSTALL_HINT = "run `python .ci/peers.py install` first (or skip the interop tests with -m 'not interop')"


def require(path: Path, what: str) -> Path:
    """`path`, or a test failure that says how to install `what`."""
    if not path.exists():
        pytest.fail(f"{what} is not installed ({path} is missing): {INSTALL_HINT}", pytrace=False)
    return path


def tail(path: Path, lines: int = 40) -> str:
    """The end of a log file, for a failure message."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# The pids of stdio peer servers whose client a module shares (see `shared_stdio_client`).
SHARED_STDIO_PIDS: set[int] = set()


@pytest.fixture(autouse=True)
def no_leftover_threads() -> Iterator[None]:
    """The check of tests/conftest.py, less the two threads of the stdio client a module shares
    (its reader and stderr drain, named after its server's pid): that fixture checks them at its end."""
    yield
    shared = tuple(f"-{pid}" for pid in SHARED_STDIO_PIDS)
    assert [name for name in mcp_threads() if not name.endswith(shared)] == []


def stdio_client(**opts: Any) -> mt.Client:
    """A client of a new stdio peer server process."""
    opts.setdefault("timeout", 30.0)
    python = require(PEER_PYTHON, "the fastmcp-tasks peer")
    return mt.Client.stdio(str(python), [str(PEER_SERVER), "stdio"], cwd=ROOT, **opts)


@pytest.fixture(scope="module")
def shared_stdio_client() -> Iterator[mt.Client]:
    """One stdio peer server for a module's tests that need no client options (it takes ~2 s to
    start). Module scope: it is closed before any other module's thread check runs."""
    client = stdio_client()
    pid: int = getattr(client.transport, "pid")  # noqa: B009 (StdioTransport only)
    SHARED_STDIO_PIDS.add(pid)
    try:
        yield client
    finally:
        client.close()
        SHARED_STDIO_PIDS.discard(pid)
        assert [name for name in mcp_threads() if name.endswith(f"-{pid}")] == []


class PeerHttpServer:
    """The peer server as a subprocess serving Streamable HTTP on 127.0.0.1 (a port it picks)."""

    def __init__(self, log: Path) -> None:
        python = require(PEER_PYTHON, "the fastmcp-tasks peer")
        self.log = log
        self._log_file = log.open("wb")
        self.process = subprocess.Popen(
            [str(python), str(PEER_SERVER), "http", "0"],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
        )
        self.url = ""

    def start(self) -> str:
        """Wait until the server answers ``server/discover``; returns its URL."""
        deadline = time.monotonic() + STARTUP_DEADLINE
        port = self._read_port(deadline)
        self.url = f"http://{HOST}:{port}/mcp"
        while True:
            self._check_alive()
            try:
                with mt.Client.http(self.url, timeout=2.0) as probe:
                    probe.discover()
                return self.url
            except mt.McpError as exc:
                if time.monotonic() > deadline:
                    self._fail(f"did not answer server/discover at {self.url} in {STARTUP_DEADLINE:.0f}s: {exc}")
            time.sleep(0.05)

    def _read_port(self, deadline: float) -> int:
        """The port from the server's first stdout line (``listening on PORT``)."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                self._fail("did not say which port it listens on")
            ready, _, _ = select.select([fd], [], [], min(left, 0.5))
            if ready:
                chunk = os.read(fd, 256)
                if not chunk:
                    self._fail("closed its stdout before saying which port it listens on")
                line += chunk
        words = line.decode().split()
        if words[:2] != ["listening", "on"] or len(words) != 3 or not words[2].isdigit():
            self._fail(f"said {line!r} instead of its port")
        return int(words[2])

    def _check_alive(self) -> None:
        if self.process.poll() is not None:
            self._fail(f"exited with code {self.process.returncode}")

    def _fail(self, what: str) -> Any:
        self.stop()
        pytest.fail(f"the peer HTTP server {what}; its log:\n{tail(self.log)}", pytrace=False)

    def stop(self) -> None:
        """Terminate the server (kill it if it lingers) and close its pipes."""
        stop_process(self.process, self._log_file)


def stop_process(process: subprocess.Popen[bytes], log_file: Any) -> None:
    """End a peer server process: terminate, kill if it lingers, and close its stdout and log."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
    if process.stdout is not None:
        process.stdout.close()
    log_file.close()


@pytest.fixture(scope="module")
def peer_http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of one peer HTTP server shared by a module's tests (their tasks are independent)."""
    server = PeerHttpServer(tmp_path_factory.mktemp("peer") / "fastmcp-http.log")
    try:
        yield server.start()
    finally:
        server.stop()


class Peer:
    """Makes clients of the peer server over one transport; closes the ones it made at the end."""

    def __init__(self, request: pytest.FixtureRequest, transport: str) -> None:
        self.transport = transport
        self._request = request
        self._clients: list[mt.Client] = []

    def client(self, **opts: Any) -> mt.Client:
        """A client of the peer. Over HTTP a new client of the session's server; over stdio the
        session's shared client when `opts` are empty, else a new server process."""
        if self.transport == "stdio" and not opts:
            shared: mt.Client = self._request.getfixturevalue("shared_stdio_client")
            return shared
        if self.transport == "stdio":
            client = stdio_client(**opts)
        else:
            opts.setdefault("timeout", 30.0)
            client = mt.Client.http(self._request.getfixturevalue("peer_http_url"), **opts)
        self._clients.append(client)
        return client

    def close(self) -> None:
        for client in self._clients:
            with contextlib.suppress(mt.McpError):
                client.close()


@pytest.fixture(params=["stdio", "http"])
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    """The peer server over stdio and over HTTP in turn."""
    made = Peer(request, request.param)
    yield made
    made.close()
