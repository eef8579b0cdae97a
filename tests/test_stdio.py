"""What only the stdio transport does: a subprocess, its stderr, its death."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

import mcp_tasks as mt
from tests.conftest import ROOT, STDIO_SERVER, Background, eventually, stdio_env


def start(**opts: object) -> mt.Client:
    return mt.Client.stdio(sys.executable, STDIO_SERVER, env=stdio_env(), cwd=ROOT, **opts)  # type: ignore[arg-type]


def test_a_server_killed_mid_request_fails_it_without_a_hang() -> None:
    with start(timeout=60) as client:
        client.call_tool("greet", {"name": "warm"})
        caller = Background(lambda: client.call_tool("stall"))
        # The stall and this stats call itself: the stall is running on the server.
        eventually(lambda: len(client.call_tool("stats", {"method": "tools/call"})["structuredContent"]["times"]) >= 3)
        os.kill(client.transport.pid, signal.SIGKILL)  # type: ignore[attr-defined]
        with pytest.raises(mt.TransportError) as killed:
            caller.result(30)
        assert killed.value.kind == "transport"
        with pytest.raises(mt.TransportError, match="exited"):
            client.call_tool("greet", {"name": "after"})


def test_a_server_that_exits_during_a_call_fails_it() -> None:
    with start() as client, pytest.raises(mt.TransportError, match="exit code 3"):
        client.call_tool("crash")


def test_a_chatty_server_never_blocks_on_its_stderr() -> None:
    with start() as client:
        assert client.call_tool("noisy", {"lines": 5000})["structuredContent"] == {"lines": 5000}


def test_stderr_can_go_to_a_file(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with log.open("wb") as sink, start(stderr=sink) as client:
        client.call_tool("noisy", {"lines": 3})
    assert "noise line 2" in log.read_text()


def test_a_command_that_does_not_exist_is_a_transport_error() -> None:
    with pytest.raises(mt.TransportError, match="cannot start"):
        mt.Client.stdio("/no/such/server")


def test_args_must_be_a_sequence_not_a_string() -> None:
    with pytest.raises(TypeError):
        mt.Client.stdio(sys.executable, "-m mcp_tasks.server")


def test_connect_takes_a_stdio_tuple() -> None:
    with mt.Client.connect(("stdio", sys.executable, STDIO_SERVER), env=stdio_env(), cwd=ROOT) as client:
        assert client.call_tool("greet", {"name": "tuple"})["content"][0]["text"] == "Hello, tuple!"


def test_repr_names_the_process() -> None:
    with start() as client:
        assert f"pid={client.transport.pid}" in repr(client)  # type: ignore[attr-defined]
