"""Streamable HTTP over real sockets on 127.0.0.1: the header rules both ways, SSE answers,
error bodies, sessions, auth and cookies."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
import requests

import mcp_tasks as mt
from mcp_tasks.server import HttpServer, McpWsgiApp, serve_http
from tests.fixtures.servers import make_server

ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
}
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
}


class Recorder:
    """A WSGI middleware that keeps the headers of every request it passes on."""

    def __init__(self, app: McpWsgiApp) -> None:
        self.app = app
        self.path = app.path
        self.seen: list[dict[str, str]] = []

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        self.seen.append({k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")})
        self.seen[-1]["content-type"] = environ.get("CONTENT_TYPE", "")
        return self.app(environ, start_response)

    def close(self) -> None:
        self.app.close()


@pytest.fixture
def server() -> Iterator[Any]:
    server = make_server()
    yield server
    server.close()


@pytest.fixture
def recorded(server: Any) -> Iterator[tuple[Recorder, str]]:
    recorder = Recorder(McpWsgiApp(server))
    with HttpServer(recorder) as http:
        yield recorder, http.url


@pytest.fixture
def url(server: Any) -> Iterator[str]:
    with serve_http(server) as http:
        yield http.url


def post(url: str, method: str, params: dict[str, Any], **headers: str) -> requests.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": ENVELOPE}}
    merged = {**HEADERS, "Mcp-Method": method, **headers}
    return requests.post(url, data=json.dumps(body), headers={k: v for k, v in merged.items() if v}, timeout=10)


# -- what the client sends ---------------------------------------------------------------------


def test_the_client_sends_every_header(recorded: tuple[Recorder, str]) -> None:
    recorder, url = recorded
    with mt.Client.http(url) as client:
        status = mt.call_tool(client, "slow_compute", {"block": True})
        assert isinstance(status, mt.Status)
        mt.get_task(client, status)
        mt.update_task(client, status, {})
        client.call_tool("release")
        mt.cancel_task(client, status)
        with client.listen({"toolsListChanged": True}):
            pass
    first = recorder.seen[0]
    assert first["accept"] == "application/json, text/event-stream"
    assert first["content-type"] == "application/json"
    assert first["mcp-protocol-version"] == "2026-07-28"
    by_method = {(h["mcp-method"], h.get("mcp-name")) for h in recorder.seen}
    assert ("tools/call", "slow_compute") in by_method
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        assert (method, status.task_id) in by_method
    assert ("subscriptions/listen", None) in by_method


def test_a_non_ascii_task_id_travels_in_the_base64_form(recorded: tuple[Recorder, str]) -> None:
    """Scenario 52: the sentinel form is accepted; the task is unknown, so -32602 (not -32020)."""
    recorder, url = recorded
    with mt.Client.http(url) as client:
        for call in (mt.get_task, mt.cancel_task):
            with pytest.raises(mt.McpError) as unknown:
                call(client, "task/with unicode ✓")
            assert unknown.value.code == -32602
    assert recorder.seen[-1]["mcp-name"] == "=?base64?dGFzay93aXRoIHVuaWNvZGUg4pyT?="


# -- what the server checks --------------------------------------------------------------------


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_the_server_checks_mcp_name_on_task_methods(url: str, method: str) -> None:
    """Scenario 51: missing or mismatched Mcp-Name -> 400/-32020; matching and unknown -> 400/-32602."""
    params = {"taskId": "unknown-task", "inputResponses": {}}
    missing = post(url, method, params)
    assert (missing.status_code, missing.json()["error"]["code"]) == (400, -32020)
    wrong = post(url, method, params, **{"Mcp-Name": "another-task"})
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (400, -32020)
    right = post(url, method, params, **{"Mcp-Name": "unknown-task"})
    assert (right.status_code, right.json()["error"]["code"]) == (400, -32602)
    encoded = post(url, method, params, **{"Mcp-Name": "=?base64?dW5rbm93bi10YXNr?="})
    assert encoded.json()["error"]["code"] == -32602


def test_the_server_checks_the_other_headers(url: str) -> None:
    no_method = post(url, "tools/list", {}, **{"Mcp-Method": ""})
    assert (no_method.status_code, no_method.json()["error"]["code"]) == (400, -32020)
    wrong_method = post(url, "tools/list", {}, **{"Mcp-Method": "tools/call"})
    assert wrong_method.json()["error"]["code"] == -32020
    no_name = post(url, "tools/call", {"name": "greet", "arguments": {"name": "x"}})
    assert no_name.json()["error"]["code"] == -32020
    version = post(url, "tools/list", {}, **{"MCP-Protocol-Version": "2025-11-25"})
    assert (version.status_code, version.json()["error"]["code"]) == (400, -32020)
    no_version = post(url, "tools/list", {}, **{"MCP-Protocol-Version": ""})
    assert no_version.json()["error"]["code"] == -32020
    bad_base64 = post(url, "tasks/get", {"taskId": "x"}, **{"Mcp-Name": "=?base64?***?="})
    assert bad_base64.json()["error"]["code"] == -32020
    ok = post(url, "tools/list", {})
    assert ok.status_code == 200 and ok.headers["Content-Type"] == "application/json"


def test_the_server_checks_the_http_layer(url: str) -> None:
    assert post(url, "tools/list", {}, Accept="application/json").status_code == 406
    assert post(url, "tools/list", {}, **{"Content-Type": "text/plain"}).status_code == 415
    assert requests.get(url, timeout=10).status_code == 405
    assert post(url.replace("/mcp", "/other"), "tools/list", {}).status_code == 404
    assert post(url, "tools/list", {}, Origin="https://evil.example").status_code == 403
    assert post(url, "tools/list", {}, Origin="http://localhost:3000").status_code == 200
    garbage = requests.post(url, data=b"{not json", headers={**HEADERS, "Mcp-Method": "x"}, timeout=10)
    assert (garbage.status_code, garbage.json()["error"]["code"]) == (400, -32700)


def test_notifications_get_202(url: str) -> None:
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99, "_meta": ENVELOPE}}
    response = requests.post(
        url, data=json.dumps(body), headers={**HEADERS, "Mcp-Method": "notifications/cancelled"}, timeout=10
    )
    assert (response.status_code, response.content) == (202, b"")


def test_error_statuses_follow_the_code(url: str) -> None:
    assert post(url, "no/such", {}).status_code == 404
    undeclared = {**ENVELOPE, "io.modelcontextprotocol/clientCapabilities": {}}
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "failing_job", "_meta": undeclared}}
    )
    refused = requests.post(
        url, data=body, headers={**HEADERS, "Mcp-Method": "tools/call", "Mcp-Name": "failing_job"}, timeout=10
    )
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, -32021)


# -- SSE answers, error bodies -----------------------------------------------------------------


def test_an_sse_answer_to_an_ordinary_request(server: Any) -> None:
    with serve_http(server, sse_responses=True) as http, mt.Client.http(http.url) as client:
        undeclared = {**ENVELOPE, "io.modelcontextprotocol/clientCapabilities": {}}
        call = {"name": "slow_compute", "arguments": {}, "_meta": undeclared}
        raw = requests.post(
            http.url,
            data=json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": call}),
            headers={**HEADERS, "Mcp-Method": "tools/call", "Mcp-Name": "slow_compute"},
            timeout=10,
        )
        assert raw.headers["Content-Type"] == "text/event-stream"
        events = [json.loads(line[6:]) for line in raw.text.splitlines() if line.startswith("data: ")]
        assert [e.get("method", "response") for e in events] == ["notifications/message", "response"]
        # The client reads past the request-scoped notification to the response.
        assert client.call_tool("slow_compute", {"label": "sse"})["structuredContent"]["label"] == "sse"
        assert mt.call_and_await(client, "confirm_delete", input=lambda s: {"confirmation": {"action": "accept"}})
        with pytest.raises(mt.McpError) as unknown:
            mt.get_task(client, "nope")
        assert unknown.value.code == -32602


def answer(request_id: object, **member: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, **member}).encode()


def rogue_app(status: str, content_type: str, body: bytes) -> Callable[..., Iterable[bytes]]:
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        headers = [("Content-Type", content_type), ("Content-Length", str(len(body)))]
        start_response(status, headers)
        return [body]

    return app


@pytest.mark.parametrize(
    ("status", "content_type", "body", "match"),
    [
        ("500 Internal Server Error", "text/plain", b"boom", "HTTP 500"),
        ("502 Bad Gateway", "text/html", b"<html>bad gateway</html>", "HTTP 502"),
        ("404 Not Found", "application/json", b'{"detail": "not here"}', "HTTP 404"),
        ("200 OK", "application/json", b"[1, 2]", "without a JSON-RPC message"),
        ("200 OK", "text/plain", b"", "without a JSON-RPC message"),
    ],
)
def test_error_bodies_that_are_not_json_rpc(status: str, content_type: str, body: bytes, match: str) -> None:
    with HttpServer(rogue_app(status, content_type, body)) as http, mt.Client.http(http.url) as client:
        with pytest.raises(mt.McpError, match=match) as error:
            client.call_tool("anything")
        # An HTTP error is the connection's failure; a 200 without a JSON-RPC message breaks the protocol.
        assert error.value.kind == ("protocol" if status.startswith("200") else "transport")
        assert isinstance(error.value, mt.ProtocolError if status.startswith("200") else mt.TransportError)
        if status.startswith("5") or status.startswith("404"):
            assert error.value.data["status"] == int(status[:3])  # (and "attempts" after retries)


def test_a_json_rpc_error_body_becomes_that_error() -> None:
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        asked = json.loads(environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"])))
        error = {"code": -32020, "message": "Header mismatch"}
        return rogue_app("400 Bad Request", "application/json", answer(asked["id"], error=error))(
            environ, start_response
        )

    with (
        HttpServer(app) as http,
        mt.Client.http(http.url) as client,
        pytest.raises(mt.McpError) as error,
    ):
        client.call_tool("anything")
    assert (error.value.code, error.value.message) == (-32020, "Header mismatch")


def test_a_server_that_is_not_there() -> None:
    with mt.Client.http("http://127.0.0.1:9/mcp", timeout=5) as client, pytest.raises(mt.TransportError):
        client.call_tool("anything")


def test_a_bad_url_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        mt.Client.http("ftp://example.com")


def test_annotated_arguments_travel_in_mcp_param_headers(recorded: tuple[Recorder, str]) -> None:
    recorder, url = recorded
    with mt.Client.http(url) as client:
        client.list_tools()
        arguments = {"region": "Hello, 世界", "priority": 42, "verbose": False, "note": "not a header"}
        assert client.call_tool("routed", arguments)["structuredContent"] == {"arguments": arguments}
        sent = recorder.seen[-1]
        assert sent["mcp-param-region"] == "=?base64?SGVsbG8sIOS4lueVjA==?="
        assert (sent["mcp-param-priority"], sent["mcp-param-verbose"]) == ("42", "false")
        assert not [h for h in sent if h.startswith("mcp-param-") and "note" in h]
        client.call_tool("routed", {"region": "us west 1", "verbose": None})
        sent = recorder.seen[-1]
        assert sent["mcp-param-region"] == "us west 1"
        assert "mcp-param-verbose" not in sent and "mcp-param-priority" not in sent


def test_a_call_the_server_refuses_for_a_missing_param_header_is_retried_after_listing(
    recorded: tuple[Recorder, str],
) -> None:
    recorder, url = recorded
    with mt.Client.http(url) as client:
        assert client.call_tool("routed", {"region": "eu"})["structuredContent"] == {"arguments": {"region": "eu"}}
    methods = [h["mcp-method"] for h in recorder.seen]
    assert methods == ["server/discover", "tools/call", "tools/list", "tools/call"]
    assert recorder.seen[-1]["mcp-param-region"] == "eu"


def test_the_server_checks_param_headers(url: str) -> None:
    call = {"name": "routed", "arguments": {"region": "eu"}}
    missing = post(url, "tools/call", call, **{"Mcp-Name": "routed"})
    assert (missing.status_code, missing.json()["error"]["code"]) == (400, -32020)
    wrong = post(url, "tools/call", call, **{"Mcp-Name": "routed", "Mcp-Param-Region": "us"})
    assert wrong.json()["error"]["code"] == -32020
    right = post(url, "tools/call", call, **{"Mcp-Name": "routed", "Mcp-Param-Region": "=?base64?ZXU=?="})
    assert right.status_code == 200


# -- sessions, auth, cookies -------------------------------------------------------------------


def test_a_session_you_pass_is_used_and_not_closed(recorded: tuple[Recorder, str]) -> None:
    recorder, url = recorded
    session = requests.Session()
    session.headers["X-Team"] = "blue"
    closed: list[bool] = []
    original = session.close
    session.close = lambda: closed.append(True) or original()  # type: ignore[method-assign]
    with mt.Client.http(url, session=session, headers={"X-Extra": "1"}, auth=("ada", "secret")) as client:
        client.call_tool("greet", {"name": "x"})
    assert closed == []
    seen = recorder.seen[-1]
    assert seen["x-team"] == "blue"
    assert seen["x-extra"] == "1"
    assert seen["authorization"].startswith("Basic ")
    session.close()


def test_cookies_the_server_sets_are_sent_back() -> None:
    jar: list[str] = []

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        jar.append(environ.get("HTTP_COOKIE", ""))
        asked = json.loads(environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"])))
        result = {"supportedVersions": ["2026-07-28"]} if asked["method"] == "server/discover" else {"content": []}
        body = answer(asked["id"], result=result)
        start_response(
            "200 OK",
            [("Content-Type", "application/json"), ("Content-Length", str(len(body))), ("Set-Cookie", "route=b7")],
        )
        return [body]

    with HttpServer(app) as http, mt.Client.http(http.url) as client:
        client.call_tool("one")
        client.call_tool("two")
    assert jar == ["", "route=b7", "route=b7"]  # the server/discover probe, then the two calls


def test_the_authorization_header_scopes_tasks(server: Any, url: str) -> None:
    """Scenario 69 over HTTP: another credential cannot see, update or cancel the task."""
    with (
        mt.Client.http(url, headers={"Authorization": "Bearer alice"}) as alice,
        mt.Client.http(url, headers={"Authorization": "Bearer bob"}) as bob,
    ):
        status = mt.call_tool(alice, "slow_compute", {"block": True})
        assert isinstance(status, mt.Status)
        for call in (mt.get_task, mt.cancel_task):
            with pytest.raises(mt.McpError) as hidden:
                call(bob, status)
            assert hidden.value.code == -32602
        assert mt.get_task(alice, status).status is mt.TaskState.WORKING
        mt.cancel_task(alice, status)
        assert mt.get_task(alice, status).status is mt.TaskState.CANCELLED
