"""What only the stdio transport does: a subprocess, its stderr, its death."""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._clock import Deadline
from mcp_tasks.transports.stdio import StdioTransport
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


# -- against foreign servers (tests/foreign_stdio): stdio that never hangs ----------------------

FOREIGN = ROOT / "tests" / "foreign_stdio"
SERVER = str(FOREIGN / "server.py")
WRAPPER = str(FOREIGN / "wrapper.py")
TOKEN = "tok3n0123456789abcdefABCDEF9876543210"  # what the foreign server prints when it dies


def children() -> set[int]:
    """This process' child processes (from /proc, no psutil)."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            found.update(int(pid) for pid in (task / "children").read_text().split())
    return found


def gone(pid: int) -> bool:
    """Whether process `pid` has ended (a zombie has: it is only waiting to be reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] == "Z"


@pytest.fixture(autouse=True)
def no_child_left() -> Iterator[None]:
    """Every test here ends with no child process of the test runner left running."""
    before = children()
    yield
    eventually(lambda: not [pid for pid in children() - before if not gone(pid)], message="no child process left")


def foreign(*flags: str) -> mt.Client:
    return mt.Client.stdio(sys.executable, [SERVER, *flags])


def text_of(result: dict[str, Any]) -> Any:
    return json.loads(result["content"][0]["text"])


def whoami(client: mt.Client) -> tuple[int, int, int]:
    pid, pgid, sid = text_of(client.call_tool("whoami"))
    return pid, pgid, sid


def closed_in_bounded_time(client: mt.Client) -> None:
    """close() returns (a hang guard, not a timing bound: a hang fails the test instead of the run)."""
    Background(client.close).result(60)


skip_off_posix = pytest.mark.skipif(os.name != "posix", reason="process groups and /proc are POSIX")


@skip_off_posix
def test_the_server_runs_in_a_session_of_its_own() -> None:
    with foreign() as client:
        pid, pgid, sid = whoami(client)
        assert pid == pgid == sid == client.transport.pid  # type: ignore[attr-defined]
        assert sid != os.getsid(0)


@skip_off_posix
def test_a_write_to_a_server_that_stopped_reading_times_out_and_close_does_not_hang() -> None:
    client = foreign("--stop-reading")
    pid = client.transport.pid  # type: ignore[attr-defined]
    try:
        assert text_of(client.call_tool("echo", {"n": 1})) == {"n": 1}  # then it reads no more
        call = Background(lambda: client.call_tool("echo", {"blob": "x" * 200_000}, timeout=1.0))
        with pytest.raises(mt.RequestTimeout):
            call.result(60)
    finally:
        closed_in_bounded_time(client)
    assert gone(pid)


WRAPPERS = {
    "sh-c": lambda flags: ["sh", "-c", " ".join([sys.executable, SERVER, *flags]) + "; exit $?"],
    "python-launcher": lambda flags: [sys.executable, WRAPPER, SERVER, *flags],
}


@skip_off_posix
@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
def test_close_ends_a_server_behind_a_wrapper_whose_grandchild_holds_stdout(wrapper: str) -> None:
    command, *args = WRAPPERS[wrapper](["--ignore-eof"])
    client = mt.Client.stdio(command, args)
    launcher = client.transport.pid  # type: ignore[attr-defined]
    try:
        server, pgid, _ = whoami(client)
        assert server != launcher and pgid == launcher  # a grandchild, in the group close() ends
    finally:
        closed_in_bounded_time(client)
    eventually(lambda: gone(server) and gone(launcher), message="the wrapper and its server ended")


@skip_off_posix
def test_close_ends_a_server_that_ignores_the_end_of_stdin_and_sigterm() -> None:
    client = foreign("--ignore-eof", "--ignore-sigterm")
    pid = client.transport.pid  # type: ignore[attr-defined]
    client.call_tool("echo")
    closed_in_bounded_time(client)
    assert gone(pid)


def test_a_server_that_exits_says_its_last_stderr_lines_redacted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_tasks.server_stderr")
    with foreign() as client, pytest.raises(mt.TransportError) as exited:
        client.call_tool("die")
    message = str(exited.value)
    assert "exit code 4" in message
    assert "fatal: cannot open the task store for task tok3…3210" in message and message.endswith("giving up")
    assert "starting step 29" in message and "starting step 0\n" not in message  # the last lines only
    assert TOKEN not in message
    forwarded = [r.getMessage() for r in caplog.records if r.name == "mcp_tasks.server_stderr"]
    assert any("fatal: cannot open" in line for line in forwarded)
    assert not [line for line in forwarded if TOKEN in line]


def test_the_reader_survives_a_line_nested_too_deep() -> None:
    with foreign() as client:
        assert text_of(client.call_tool("deep", timeout=30)) == "after the deep line"
        assert text_of(client.call_tool("echo", {"next": True}, timeout=30)) == {"next": True}


def test_a_server_request_answered_slowly_does_not_block_the_reader() -> None:
    transport = StdioTransport(sys.executable, [SERVER])
    answering = threading.Event()
    release = threading.Event()

    def receiver(message: dict[str, Any], origin: object) -> dict[str, Any] | None:
        answering.set()
        release.wait(60)
        return {"jsonrpc": "2.0", "id": message["id"], "result": {"answered": message["method"]}}

    transport.attach(receiver=receiver)
    try:
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask"}}
        assert text_of(transport.request(call, Deadline(30))["result"]) == "asked"
        assert answering.wait(30)
        release.set()

        def asked() -> Any:
            message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "asked"}}
            return text_of(transport.request(message, Deadline(30))["result"])

        answers = eventually(asked, message="the server got the answer")
        assert answers == [{"jsonrpc": "2.0", "id": "srv-1", "result": {"answered": "ping"}}]
    finally:
        release.set()
        transport.close()


def test_an_argument_the_wire_cannot_carry_is_refused_and_the_client_goes_on() -> None:
    with foreign() as client:
        with pytest.raises(ValueError, match="JSON"):
            client.call_tool("echo", {"s": "\ud800"})
        assert text_of(client.call_tool("echo", {"s": "ok"})) == {"s": "ok"}


CTRL_C_CLIENT = """
import json, sys, time
import mcp_tasks as mt
client = mt.Client.stdio(sys.executable, [sys.argv[1]])
client.call_tool("echo")
try:
    print("ready", flush=True)
    while True:
        time.sleep(0.05)
except KeyboardInterrupt:
    pass
print(json.dumps(client.call_tool("echo", {"after": "ctrl-c"})["content"][0]["text"]), flush=True)
client.close()
"""


@skip_off_posix
def test_ctrl_c_in_the_caller_does_not_kill_the_server() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    caller = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_CLIENT, SERVER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # a terminal's foreground group, which Ctrl-C signals as a whole
    )
    try:
        assert caller.stdout is not None
        assert caller.stdout.readline().strip() == "ready"
        os.killpg(caller.pid, signal.SIGINT)
        out, err = caller.communicate(timeout=60)
    finally:
        if caller.poll() is None:
            caller.kill()
            caller.wait()
    assert caller.returncode == 0, err
    assert json.loads(json.loads(out)) == {"after": "ctrl-c"}


def test_an_unclosed_client_ends_its_server_when_collected() -> None:
    client = foreign("--ignore-eof")
    pid = client.transport.pid  # type: ignore[attr-defined]
    client.call_tool("echo")
    with pytest.warns(ResourceWarning, match="unclosed stdio transport"):
        del client
        gc.collect()
    assert gone(pid)


UNCLOSED_CLIENT = """
import sys
import mcp_tasks as mt
client = mt.Client.stdio(sys.executable, [sys.argv[1], "--ignore-eof"])
print(client.call_tool("whoami")["content"][0]["text"], flush=True)
"""


@skip_off_posix
def test_an_unclosed_client_ends_its_server_at_interpreter_exit() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(
        [sys.executable, "-W", "default::ResourceWarning", "-c", UNCLOSED_CLIENT, SERVER],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    pid = json.loads(done.stdout)[0]
    try:
        assert done.returncode == 0, done.stderr
        assert "ResourceWarning: unclosed stdio transport" in done.stderr
        eventually(lambda: gone(pid), message="the server ended")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
