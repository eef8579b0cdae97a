"""No full task id in any message about a task a server does not know: for every "not found" shape
of the peers (fastmcp-tasks 4.1.4, mcp 1.30, fastmcp 3, server-everything; see
shared/reference/peers.md, and generic ones) served by the tests' own socket-level servers, in both eras, and for the
reference server: not in ``str(exc)``, ``repr(exc)``, the log, nor the ``mcp-tasks`` command's output.
An expired id was a bearer token.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import pytest

import mcp_tasks as mt
from mcp_tasks import cli
from mcp_tasks._redact import short_id
from mcp_tasks.server import Server, serve_http
from tests.cli.test_commands import run
from tests.foreign.legacy_http_tasks import LegacyHttpTasksServer
from tests.foreign.listen_tasks import ListenTasksServer
from tests.foreign.modern_http_tasks import ModernHttpTasksServer

LONG = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"  # the id of the report
UUID = str(uuid.UUID(int=0x2C1ACAC3DAA349D4A28CF1DDCC435A06))
SCOPED = "9f86d081884c7d659a2fea0c55ad015a:" + UUID  # a 2025-era <session>:<uuid> id
LETTERS = "qwertyuiopasdfghjklzxcvbnm"  # no digit: only the id itself says it is one
IDS = [LONG, UUID, SCOPED, LETTERS]

MODERN_SHAPES = [
    "Task {id} not found",  # fastmcp-tasks 4.1.4
    "Unknown or inaccessible taskId",  # the Tasks reference behaviour
    "Task with ID {id} not found",
]
LEGACY_SHAPES = [
    "Task not found: {id}",  # mcp 1.30
    "Task not found: {scope}:{id}",  # a server that keys its tasks by <session>:<id>
    "Invalid taskId: {id} not found",  # fastmcp 3's Docket task protocol
    "Task {id} not found",
    "MCP error -32602: Failed to retrieve task: Task not found",  # server-everything
    "Failed to retrieve task: Task not found",
]


def secrets(task_id: str) -> list[str]:
    """The id, and each long part of a <session>:<uuid> id."""
    return [task_id, *(part for part in task_id.split(":") if len(part) >= 8)]


def assert_hidden(text: str, task_id: str, *more: str) -> None:
    for secret in (*secrets(task_id), *more):
        assert secret not in text, (secret, text)


@pytest.fixture(scope="module")
def modern() -> Iterator[ModernHttpTasksServer]:
    server = ModernHttpTasksServer()
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def legacy() -> Iterator[LegacyHttpTasksServer]:
    server = LegacyHttpTasksServer()
    server.start()
    yield server
    server.close()


@pytest.fixture
def reference() -> Iterator[str]:
    server = Server(poll_interval=0.02)
    with serve_http(server) as http:
        yield http.url
    server.close()


def _each_helper(client: mt.Client, task_id: str, caplog: pytest.LogCaptureFixture, *more: str) -> None:
    """get, wait and cancel an unknown task: each raises an error that hides the id, and the log too."""
    calls = [
        lambda: mt.get_task(client, task_id, timeout=30),
        lambda: mt.await_task(client, task_id, timeout=30, poll_interval=0.01),
        lambda: mt.cancel_task(client, task_id, timeout=30),
    ]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="mcp_tasks"):
        for call in calls:
            with pytest.raises(mt.McpError) as raised:
                call()
            assert raised.value.code == -32602, raised.value
            assert_hidden(str(raised.value), task_id, *more)
            assert_hidden(repr(raised.value), task_id, *more)
    assert_hidden(caplog.text, task_id, *more)


@pytest.mark.parametrize("shape", MODERN_SHAPES)
def test_a_modern_servers_not_found_never_shows_the_id(
    modern: ModernHttpTasksServer, shape: str, caplog: pytest.LogCaptureFixture
) -> None:
    modern.not_found = shape
    with mt.Client.http(modern.url) as client:
        for task_id in IDS:
            _each_helper(client, task_id, caplog)
            with pytest.raises(mt.McpError) as raised:
                mt.get_task(client, task_id, timeout=30)
            if "{id}" in shape:  # the server's text is still there, with the id in its short form
                assert shape.format(id=short_id(task_id)) in str(raised.value)


@pytest.mark.parametrize("shape", LEGACY_SHAPES)
def test_a_legacy_servers_not_found_never_shows_the_id_nor_the_session(
    legacy: LegacyHttpTasksServer, shape: str, caplog: pytest.LogCaptureFixture
) -> None:
    legacy.core.not_found = shape
    with mt.Client.http(legacy.url) as client:
        client.list_tools()  # the handshake: the session starts
        scope = max(legacy.core.sessions)  # this client's session (its id is the scope)
        for task_id in IDS:
            _each_helper(client, task_id, caplog, scope)


def test_the_reference_servers_not_found_never_shows_the_id(reference: str, caplog: pytest.LogCaptureFixture) -> None:
    with mt.Client.http(reference) as client:
        for task_id in IDS:
            _each_helper(client, task_id, caplog)


@pytest.mark.parametrize(
    ("era", "shape"), [("modern", "Task {id} not found"), ("legacy", "Task not found: {scope}:{id}")], ids=str
)
def test_the_command_says_no_such_task_without_the_id(
    modern: ModernHttpTasksServer, legacy: LegacyHttpTasksServer, era: str, shape: str
) -> None:
    if era == "modern":
        modern.not_found, url = shape, modern.url
    else:
        legacy.core.not_found, url = shape, legacy.url
    for task_id in (LONG, SCOPED):
        for command in ("get", "wait", "cancel"):
            done = run(command, url, task_id)
            assert done.returncode == cli.EXIT_NO_TASK, (command, done.stderr)
            assert f"task {short_id(task_id)}: " in done.stderr and "(no such task on this server:" in done.stderr
            assert_hidden(done.stderr + done.stdout, task_id)
            with_json = run(command, url, task_id, "--json")
            assert with_json.returncode == cli.EXIT_NO_TASK, (command, with_json.stderr)
            assert_hidden(with_json.stderr + with_json.stdout, task_id)


def test_the_command_against_the_reference_server(reference: str) -> None:
    done = run("get", reference, LONG)
    assert done.returncode == cli.EXIT_NO_TASK, done.stderr
    assert_hidden(done.stderr, LONG)


def test_a_refused_listen_that_quotes_the_ids_never_shows_them(caplog: pytest.LogCaptureFixture) -> None:
    server = ListenTasksServer(refuse=frozenset({LONG, SCOPED}))
    server.refusal = "Unknown or inaccessible taskId: {ids}"
    server.start()
    try:
        with caplog.at_level(logging.DEBUG, logger="mcp_tasks"), mt.Client.http(server.url) as client:
            with pytest.raises(mt.McpError) as raised:
                client.listen({"taskIds": [LONG, SCOPED]}, timeout=30)
            assert str(raised.value).startswith("Unknown or inaccessible taskId: ")  # the server's text is kept
            for task_id in (LONG, SCOPED):
                assert_hidden(str(raised.value), task_id)
                assert_hidden(repr(raised.value), task_id)
                with pytest.raises(mt.McpError) as waited:  # a wait that listens: refused, then polled
                    mt.wait_task(client, task_id, timeout=30, listen=True)
                assert_hidden(str(waited.value), task_id)
        for task_id in (LONG, SCOPED):
            assert_hidden(caplog.text, task_id)
    finally:
        server.close()
