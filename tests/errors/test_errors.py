"""The error types: codes, kinds, builtins they also are, and the message of each error the library
raises (it names the task, the method, the URL, the limit or the reason).
"""

from __future__ import annotations

import http.server
import socketserver
import threading
import traceback
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._errors import (
    AUTHORIZATION_FAILED,
    CONNECTION_CLOSED,
    PROTOCOL_VIOLATION,
    REQUEST_TIMEOUT,
    SERVER_ERROR,
    SessionExpired,
)
from mcp_tasks._redact import short_id
from mcp_tasks._tasks import invalid_task
from mcp_tasks._wire import malformed


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (-32700, "json_rpc"),
        (-32600, "json_rpc"),
        (-32601, "protocol"),
        (-32602, "protocol"),
        (-32603, "execution"),
        (-32021, "protocol"),
        (-32000, "protocol"),
        (42, "protocol"),
    ],
)
def test_kind_follows_the_code(code: int, kind: str) -> None:
    assert mt.McpError.from_wire({"code": code, "message": "m"}).kind == kind


def test_from_wire_keeps_code_message_data() -> None:
    error = mt.McpError.from_wire({"code": -32602, "message": "bad", "data": {"x": 1}})
    assert (error.code, error.message, error.data, str(error)) == (-32602, "bad", {"x": 1}, "bad")
    assert error.to_wire() == {"code": -32602, "message": "bad", "data": {"x": 1}}


@pytest.mark.parametrize(
    "bad", [None, "oops", {"code": "1", "message": "m"}, {"code": 1}, {"code": True, "message": "m"}]
)
def test_a_malformed_error_object_is_a_protocol_error(bad: object) -> None:
    error = mt.McpError.from_wire(bad)
    assert isinstance(error, mt.ProtocolError) and not isinstance(error, mt.TransportError)
    assert (error.code, error.kind) == (PROTOCOL_VIOLATION, "protocol")
    assert error.cause == bad


def test_timeouts_are_timeout_errors_and_print_only_their_message() -> None:
    request = mt.RequestTimeout(1.5)
    assert isinstance(request, TimeoutError) and isinstance(request, mt.TransportError)
    assert (request.code, request.kind, request.retryable) == (-32001, "transport", False)
    assert str(request) == "No answer within 1.5 s"
    assert request.data == {"timeoutMs": 1500}
    assert request.errno is None
    task = mt.TaskTimeout("task-123456789", 2.0, None)
    assert isinstance(task, TimeoutError)
    assert str(task) == (
        "Task task…6789 did not finish within 2 s; it is still running on the server: wait for it again by its id "
        "(timeout=None waits as long as it takes), or cancel it"
    )
    assert task.data == {"taskId": "task-123456789", "timeoutMs": 2000}
    assert "task-123456789" not in repr(task) + str(task)
    assert task.kind == "extension" and not isinstance(task, mt.TransportError)  # the wait's deadline, not the link's


def test_every_error_has_one_repr_shape() -> None:
    status = mt.Status.from_map(
        {
            "taskId": "task-123456789",
            "status": "failed",
            "createdAt": "2026-07-28T00:00:00Z",
            "ttlMs": None,
            "error": {"code": -32603, "message": "disk full"},
        }
    )
    assert (
        repr(mt.TaskFailed(status))
        == "TaskFailed(message='disk full', code=-32603, kind='execution', task='task…6789')"
    )
    needs = mt.Status.from_map(
        {**status.to_map(), "status": "input_required", "inputRequests": {"k": {"method": "elicitation/create"}}}
    )
    assert repr(mt.InputRequired(needs)) == (
        "InputRequired(message=\"Task task…6789 needs input this wait did not answer ('k'): answer it with "
        "update_task, or wait with input handlers that can\", task='task…6789')"
    )
    assert repr(mt.TaskTimeout("task-123456789", 2.0, None)).startswith(
        "TaskTimeout(message='Task task…6789 did not finish within 2 s; "
    ) and repr(mt.TaskTimeout("task-123456789", 2.0, None)).endswith("code=-32001, kind='extension')")
    assert repr(mt.McpError(-32602, "bad")) == "McpError(message='bad', code=-32602, kind='protocol')"
    assert repr(mt.InputError("user said no")) == "InputError(message='user said no')"


def test_transport_errors_are_connection_errors() -> None:
    error = mt.TransportError("gone")
    assert isinstance(error, ConnectionError)
    assert (error.code, error.kind, str(error)) == (-32000, "transport", "gone")


def test_task_failed_takes_its_error_from_the_status() -> None:
    status = mt.Status.from_map(
        {"taskId": "t-abcdefgh", "status": "failed", "error": {"code": -32050, "message": "nope", "data": [1]}}
    )
    failed = mt.TaskFailed(status)
    assert (failed.code, failed.message, failed.data, failed.kind) == (-32050, "nope", [1], "protocol")
    assert failed.cause == ("task_failed", status)


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError):
        mt.McpError(1, "m", kind="weird")


# -- what each error says ---------------------------------------------------------------------------

TASK_ID = "task-secret-0123456789"


def status(**fields: Any) -> mt.Status:
    return mt.Status.from_map({"taskId": TASK_ID, **fields})


def test_task_errors_name_the_task_and_what_happened() -> None:
    working = status(status="working")
    assert str(mt.TaskTimeout(TASK_ID, 0.25, working)) == (
        "Task task…6789 did not finish within 0.25 s (last seen working); it is still running on the server: "
        "wait for it again by its id (timeout=None waits as long as it takes), or cancel it"
    )
    assert str(mt.TaskTimeout(TASK_ID, 90, working, cancelled=True)).endswith(
        "within 90 s (last seen working); it was cancelled (cancel_on_timeout)"
    )
    failed = mt.TaskFailed(status(status="failed", error={"code": -32050, "message": "disk full"}))
    assert str(failed) == "Task task…6789 failed: disk full (error -32050)"
    assert failed.message == "disk full"  # the task's own message, as the server sent it
    cancelled = mt.TaskCancelled(status(status="cancelled", statusMessage="stopped by admin"))
    assert str(cancelled) == "Task task…6789 was cancelled: stopped by admin"
    needs = mt.InputRequired(status(status="input_required", inputRequests={"confirm": {"method": "roots/list"}}))
    assert str(needs) == (
        "Task task…6789 needs input this wait did not answer ('confirm'): answer it with update_task, "
        "or wait with input handlers that can"
    )
    with pytest.raises(mt.InvalidStatus) as invalid:
        mt.Status.from_map({"taskId": TASK_ID, "status": "completed", "result": []})
    assert str(invalid.value) == "invalid task: result must be an object"
    for error in (failed, cancelled, needs, mt.TaskTimeout(TASK_ID, 1, working)):
        assert TASK_ID not in str(error) + repr(error)


def _input_server() -> Any:
    from mcp_tasks.server import Server

    server = Server(poll_interval=0.01)

    @server.tool(task="optional")
    def confirm(ctx: Any) -> dict[str, Any]:
        return {"answer": ctx.elicit("confirm", "Sure?", {"type": "object", "properties": {}})}

    return server


@pytest.mark.parametrize(
    ("handler", "why"),
    [
        (lambda params: (_ for _ in ()).throw(mt.InputError("user said no")), "user said no"),
        (lambda params: True, "it returned True, not a response dict"),
        (lambda params: {"action": "yes"}, "its action must be 'accept', 'decline' or 'cancel', got 'yes'"),
        (lambda params: "secret-answer", "it returned str, not a response dict"),
    ],
)
def test_an_input_failure_says_why(handler: Any, why: str) -> None:
    server = _input_server()
    with mt.Client.direct(server, input_handlers=mt.InputHandlers(form=handler)) as client:
        task = mt.call_tool(client, "confirm")
        assert isinstance(task, mt.Status)
        with pytest.raises(mt.McpError) as failed:
            mt.await_task(client, task, timeout=10)
    server.close()
    prefix = short_id(task.task_id)
    assert str(failed.value) == f"The input handler for task {prefix}'s form request 'confirm' could not answer: {why}"
    assert (failed.value.code, failed.value.kind) == (-32603, "execution")
    assert "secret-answer" not in str(failed.value)


class _BareServer:
    """A foreign in-process server that answers every request with a bare -32601."""

    def handle(self, message: dict[str, Any], exchange: Any) -> dict[str, Any] | None:
        if "id" not in message:
            return None
        return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}}


def test_method_not_found_names_the_method() -> None:
    with mt.Client.direct(_BareServer(), protocol="2026-07-28") as client, pytest.raises(mt.McpError) as missing:
        client.request("tasks/get", {"taskId": TASK_ID})
    assert str(missing.value) == "Method not found: the server has no method 'tasks/get'"
    assert missing.value.code == -32601


def test_a_request_timeout_names_the_method() -> None:
    from mcp_tasks.server import Server

    server = Server(latency={"tasks/get": 5.0})
    with mt.Client.direct(server) as client, pytest.raises(mt.RequestTimeout) as late:
        client.request("tasks/get", {"taskId": TASK_ID}, timeout=0.2)
    server.close()
    assert str(late.value) == "tasks/get: No answer within 0.2 s"


class _NotFound(http.server.BaseHTTPRequestHandler):
    """A web server with no MCP endpoint: 404 for every POST."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b"no such page"
        self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_an_http_error_names_the_url_without_its_secrets() -> None:
    with socketserver.TCPServer(("127.0.0.1", 0), _NotFound) as httpd:
        thread = threading.Thread(target=httpd.serve_forever, name="test-404", daemon=True)
        thread.start()
        port = httpd.server_address[1]
        url = f"http://user:pw@127.0.0.1:{port}/wrong/path?token=hunter2"
        try:
            with mt.Client.http(url, retries=0) as client, pytest.raises(mt.TransportError) as refused:
                client.request("tools/list")
        finally:
            httpd.shutdown()
            thread.join()
    message = str(refused.value)
    assert message == f"HTTP 404 Not Found from http://127.0.0.1:{port}/wrong/path: no such page"
    assert refused.value.data["status"] == 404


def test_the_server_says_which_capacity_ran_out_and_how_to_raise_it() -> None:
    from mcp_tasks.server import Server

    server = Server(max_tasks=1)
    server.add_tool(lambda ctx: ctx.sleep(30), name="hold", task="optional")
    with mt.Client.direct(server) as client:
        first = mt.call_tool(client, "hold")
        with pytest.raises(mt.McpError) as full:
            mt.call_tool(client, "hold")
        mt.cancel_task(client, first)  # type: ignore[arg-type]
    server.close()
    assert "max_tasks" in str(full.value) and "Server(max_tasks=...)" in str(full.value)


def test_every_transport_kind_error_is_a_transport_error() -> None:
    made = [
        mt.RequestTimeout(1),
        SessionExpired(),
    ]
    for error in made:
        assert error.kind == "transport"
        assert isinstance(error, mt.TransportError), error


def test_protocol_violations_are_protocol_errors_of_their_own_code() -> None:
    made = [
        mt.McpError.from_wire("garbage"),
        malformed("bad", {"x": 1}),
        mt.ProtocolError("odd"),
        invalid_task({"status": 3}, mt.InvalidStatus("status", "must be a string")),
    ]
    for error in made:
        assert isinstance(error, mt.ProtocolError) and isinstance(error, mt.McpError)
        assert not isinstance(error, (mt.TransportError, ConnectionError)), error
        assert (error.code, error.kind) == (PROTOCOL_VIOLATION, "protocol")
    assert made[1].cause == {"x": 1}
    assert str(made[1]) == "bad"


def test_each_code_this_client_makes_says_what_it_is() -> None:
    assert mt.TransportError("gone").code == CONNECTION_CLOSED == -32000
    assert mt.OAuthError("no token").code == AUTHORIZATION_FAILED
    assert mt.ProtocolError("odd").code == PROTOCOL_VIOLATION
    made = {CONNECTION_CLOSED, REQUEST_TIMEOUT, PROTOCOL_VIOLATION, AUTHORIZATION_FAILED}
    assert len(made) == 4  # no two kinds of failure share a code
    spec = {-32700, -32600, -32601, -32602, -32603, -32002, -32020, -32021, -32022, -32042}
    assert not made & spec  # nor one of JSON-RPC's or MCP's own
    assert all(-32099 <= code <= -32000 for code in made)  # JSON-RPC's implementation-defined range
    assert SERVER_ERROR == -32000  # what servers answer for their own failures


def test_public_classes_report_the_package_as_their_module() -> None:
    for name in mt.__all__:
        public = getattr(mt, name)
        if isinstance(public, type):
            assert public.__module__ == "mcp_tasks", name
    shown = "".join(traceback.format_exception_only(mt.TaskCancelled(status(status="cancelled"))))
    assert shown.startswith("mcp_tasks.TaskCancelled: Task task…6789 was cancelled")


def test_an_option_typo_names_the_public_function() -> None:
    server = _input_server()
    with mt.Client.direct(server) as client:
        for call in (
            lambda: mt.await_task(client, TASK_ID, timout=5),  # type: ignore[call-arg]
            lambda: mt.wait_task(client, TASK_ID, timout=5),  # type: ignore[call-arg]
            lambda: mt.call_and_await(client, "confirm", timout=5),  # type: ignore[call-arg]
        ):
            with pytest.raises(TypeError, match=r"^(await_task|wait_task|call_and_await)\(\) got an unexpected"):
                call()
        with pytest.raises(TypeError, match=r"call_and_await\(\): unknown call_opts 'timout'"):
            mt.call_and_await(client, "confirm", call_opts={"timout": 5})  # type: ignore[arg-type]
    server.close()


def test_errors_and_statuses_display_richly() -> None:
    class Printer:
        def __init__(self) -> None:
            self.out: list[str] = []

        def text(self, text: str) -> None:
            self.out.append(text)

        def break_(self) -> None:
            self.out.append("\n")

    shown = status(status="working", statusMessage="row 2 of 3 <b>", createdAt="2026-07-28T10:00:00Z")
    printer = Printer()
    shown._repr_pretty_(printer, False)
    text = "".join(printer.out)
    assert text.splitlines()[0] == "Status" and "working" in text and "row 2 of 3" in text and "task…6789" in text
    page = shown._repr_html_()
    assert "row 2 of 3 &lt;b&gt;" in page and "2026-07-28T10:00:00Z" in page and TASK_ID not in page
    timed_out = mt.TaskTimeout(TASK_ID, 1, shown)
    printer = Printer()
    timed_out._repr_pretty_(printer, False)
    assert "".join(printer.out).startswith("mcp_tasks.TaskTimeout\n  message")
    assert "mcp_tasks.TaskTimeout" in timed_out._repr_html_() and TASK_ID not in timed_out._repr_html_()
