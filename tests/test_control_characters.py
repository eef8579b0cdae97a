"""A server's control characters (ESC sequences, carriage returns, NUL, bidi overrides) reach
neither the text of an error (``str(error)``, what a plain traceback prints) nor the library's log
lines, while the error's `message` and `data` keep what the server sent, exactly.

The server is a socket-level one (`tests.foreign.http_servers`, no mcp_tasks code). Before the
fix, ``str(error)`` was the server's message as sent, and each log line below quoted it raw.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._logs import LOGGERS, EscapeControls
from mcp_tasks._printable import printable
from tests.foreign.http_servers import Conn, ForeignServer, Request, created, result, task

# Clear the screen, set the window's title, return the cursor, a NUL, and reverse what follows.
HOSTILE = "\x1b[2J\x1b]0;owned\x07refused\rall is well\x00 \u202eevil"
SHOWN = printable(HOSTILE)
TASK_ID = "task-hostile-0123456789"


def error(request: Request, message: str = HOSTILE) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.id, "error": {"code": -32603, "message": message, "data": {"why": message}}}


def assert_printable(exc: BaseException) -> None:
    """What a plain traceback shows of `exc` (and `str`) holds no raw control character."""
    assert str(exc).isprintable()
    for line in "".join(traceback.format_exception(exc)).splitlines():
        assert line.isprintable(), line


def logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Every captured line of the library's loggers, each checked for raw control characters."""
    lines = [record.getMessage() for record in caplog.records if record.name.startswith("mcp_tasks")]
    for line in lines:
        assert line.isprintable(), line
    return lines


def test_a_servers_error_message_is_kept_exact_and_shown_and_logged_escaped(caplog: pytest.LogCaptureFixture) -> None:
    """A 503 whose body is hostile (retried: the retry's log line quotes it), then an SSE answer
    with a log notification and a JSON-RPC error that are hostile.
    """
    busy = [True]

    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "tools/list" and busy and busy.pop():
            conn.body(f"busy {HOSTILE} busy".encode(), "503 Service Unavailable", [("Content-Type", "text/plain")])
        elif request.rpc_method == "tools/list":
            conn.sse_head()
            log = {"level": "warning", "logger": "tools", "data": HOSTILE}
            conn.event({"jsonrpc": "2.0", "method": "notifications/message", "params": log})
            conn.event(error(request))
            conn.sse_end()
        else:
            conn.empty()

    caplog.set_level(logging.DEBUG, logger="mcp_tasks")
    retry = mt.Retry(2, backoff=0.01, jitter=0.0)
    with (
        ForeignServer(handler) as server,
        mt.Client.http(server.url, protocol="2026-07-28", retries=retry) as client,
        pytest.raises(mt.McpError) as raised,
    ):
        client.request("tools/list", timeout=30)
    exc = raised.value
    assert exc.message == HOSTILE and exc.data == {"why": HOSTILE}  # the server's text as sent
    assert exc.to_wire()["message"] == HOSTILE
    assert_printable(exc)
    assert str(exc) == SHOWN
    assert repr(exc).isprintable()
    lines = logged(caplog)
    assert any("retry 1 of 2" in line and "busy" in line and "\\x1b[2J" in line for line in lines), lines
    assert SHOWN in lines, lines  # the server's log notification, escaped


def test_a_failed_or_cancelled_tasks_text_is_shown_escaped() -> None:
    outcome = ["failed"]

    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "tools/call":
            conn.json(created(request, TASK_ID))
        elif request.rpc_method == "tasks/get" and outcome[0] == "failed":
            failed = task(TASK_ID, "failed", error={"code": -32603, "message": HOSTILE})
            conn.json(result(request, failed))
        elif request.rpc_method == "tasks/get":
            conn.json(result(request, task(TASK_ID, "cancelled", statusMessage=HOSTILE)))
        else:
            conn.empty()

    with ForeignServer(handler) as server, mt.Client.http(server.url, protocol="2026-07-28", retries=0) as client:
        with pytest.raises(mt.TaskFailed) as failed:
            mt.call_and_await(client, "job", timeout=30)
        outcome[0] = "cancelled"
        with pytest.raises(mt.TaskCancelled) as cancelled:
            mt.call_and_await(client, "job", timeout=30)
    assert failed.value.message == HOSTILE and failed.value.status.error == {"code": -32603, "message": HOSTILE}
    assert_printable(failed.value)
    assert SHOWN in str(failed.value)
    assert cancelled.value.status.status_message == HOSTILE
    assert_printable(cancelled.value)
    assert SHOWN in str(cancelled.value)


def test_a_refused_cancel_after_a_timeout_is_logged_escaped(caplog: pytest.LogCaptureFixture) -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.rpc_method == "tasks/get":
            conn.json(result(request, task(TASK_ID, "working", statusMessage=HOSTILE)))
        elif request.rpc_method == "tasks/cancel":
            conn.json(error(request))
        else:
            conn.empty()

    caplog.set_level(logging.WARNING, logger="mcp_tasks")
    with (
        ForeignServer(handler) as server,
        mt.Client.http(server.url, protocol="2026-07-28", retries=0) as client,
        pytest.raises(mt.TaskTimeout) as raised,
    ):
        mt.wait_task(client, TASK_ID, timeout=0.2, cancel_on_timeout=True)
    assert raised.value.cancelled is False and raised.value.status is not None
    assert raised.value.status.status_message == HOSTILE
    assert_printable(raised.value)
    lines = logged(caplog)
    assert any(line.startswith("could not cancel task") and line.endswith(SHOWN) for line in lines), lines


def test_every_logger_of_the_library_escapes_its_lines() -> None:
    """Each logger the package's modules log on carries the filter (a logger's filters see only
    what is logged on it, not what its children log)."""
    import pathlib
    import re

    package = pathlib.Path(mt.__file__).parent
    named = {
        name
        for path in package.rglob("*.py")
        for name in re.findall(r"""getLogger\(\s*["']([^"']+)["']""", path.read_text(encoding="utf-8"))
    }
    assert named and named <= set(LOGGERS), named - set(LOGGERS)
    for name in LOGGERS:
        assert any(isinstance(f, EscapeControls) for f in logging.getLogger(name).filters), name


def test_a_line_without_control_characters_is_left_as_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcp_tasks")
    logging.getLogger("mcp_tasks").info("task %s is %s", "ab…yz", "working")
    logging.getLogger("mcp_tasks.server_stderr").info("%s", "line\r\x1b[1Aover")
    plain, hostile = caplog.records[-2:]
    assert (plain.msg, plain.args) == ("task %s is %s", ("ab…yz", "working"))  # for handlers that group by msg
    assert hostile.getMessage() == "line\\r\\x1b[1Aover"
