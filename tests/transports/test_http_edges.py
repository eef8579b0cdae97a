"""The HTTP transport against foreign servers (tests/foreign/http_servers.py): real-world habits
that our own reference server does not have. Each test here failed on 816a4a3."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import requests
from requests.auth import AuthBase, HTTPDigestAuth

import mcp_tasks as mt
from mcp_tasks._clock import MIN_STEP
from tests.foreign.http_servers import (
    Conn,
    ForeignServer,
    Hangup,
    Request,
    completed,
    created,
    reset,
    result,
    task,
    tool_result,
    trickle,
)

TASK = "task-0001-foreign"


def ack(request: Request) -> dict[str, Any]:
    notifications = request.params.get("notifications", {})
    meta = {"io.modelcontextprotocol/subscriptionId": request.id}
    return {
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {"notifications": notifications, "_meta": meta},
    }


def pushed(request: Request, status: dict[str, Any]) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/subscriptionId": request.id}
    return {"jsonrpc": "2.0", "method": "notifications/tasks", "params": {**status, "_meta": meta}}


class TaskServer:
    """A foreign tasks server: one task that completes when `done` is set; listen streams that
    stay quiet (or send keep-alive comments every `comments` seconds) until then."""

    def __init__(self, comments: float | None = None, quiet: float = 0.0) -> None:
        self.comments = comments
        self.quiet = quiet
        self.done = threading.Event()
        self.comment_sent = threading.Event()

    def __call__(self, request: Request, conn: Conn) -> None:
        method = request.rpc_method
        if method == "tools/call":
            conn.json(created(request, TASK))
        elif method == "tasks/get":
            conn.json(result(request, completed(TASK) if self.done.is_set() else task(TASK)))
        elif method == "subscriptions/listen":
            conn.sse_head()
            conn.event(ack(request))
            start = time.monotonic()
            while True:
                if self.comments is not None:
                    time.sleep(self.comments)
                    conn.comment()
                    self.comment_sent.set()
                else:
                    time.sleep(self.quiet)
                if time.monotonic() - start >= self.quiet and (self.comments is None or self.comment_sent.is_set()):
                    break
            self.done.set()
            conn.event(pushed(request, completed(TASK)))
            conn.wait_hangup()
            raise Hangup
        else:
            conn.json({"jsonrpc": "2.0", "id": request.id, "error": {"code": -32601, "message": "Method not found"}})


@pytest.mark.parametrize(
    ("comments", "quiet"),
    [(5.0, 0.0), (None, 1.5)],
    ids=["keepalive-comments-every-5s", "no-comments-at-all"],
)
def test_a_listen_wait_stays_on_its_stream_through_silence(comments: float | None, quiet: float) -> None:
    server = TaskServer(comments, quiet)
    with ForeignServer(server) as http, mt.Client.http(http.url) as client:
        started = time.monotonic()
        outcome = mt.call_and_await(client, "work", listen=True, timeout=30)
        assert outcome["content"][0]["text"] == "done"
        assert time.monotonic() - started >= quiet  # the stream really was quiet that long
        assert http.count("subscriptions/listen") == 1
        assert http.count("tasks/get") <= 2  # the stream did it, not polling


def test_gzip_and_deflate_bodies_are_decoded() -> None:
    encodings = iter(["gzip", "deflate", "gzip"])

    def handler(request: Request, conn: Conn) -> None:
        conn.json(tool_result(request, "squeezed " * 50), encoding=next(encodings))

    with ForeignServer(handler) as http, mt.Client.http(http.url) as client:
        for _ in range(3):
            assert client.call_tool("zip")["content"][0]["text"].startswith("squeezed")
    assert http.seen[0].headers.get("accept-encoding") == "gzip, deflate"


def test_a_listen_stream_asks_for_identity() -> None:
    server = TaskServer(None, 0.0)
    with ForeignServer(server) as http, mt.Client.http(http.url) as client:
        mt.call_and_await(client, "work", listen=True, timeout=30)
    listens = [r for r in http.seen if r.rpc_method == "subscriptions/listen"]
    assert listens[0].headers["accept-encoding"] == "identity"


def test_each_header_goes_once_and_a_messages_own_replace_the_clients() -> None:
    """The plain path keeps the head it writes before a message's own headers: those (the
    2026-07-28 ones, ``Accept-Encoding`` on a listen stream) replace a header of the same name,
    whatever its case, and no header goes twice, on every request of a connection.
    """
    server = TaskServer(None, 0.0)
    headers = {"mcp-method": "not-this", "X-Trace": "abc", "accept-encoding": "br"}
    with ForeignServer(server) as http, mt.Client.http(http.url, headers=headers) as client:
        mt.call_and_await(client, "work", listen=True, timeout=30)
        mt.call_and_await(client, "work", timeout=30)
    assert len(http.seen) >= 4
    for request in http.seen:
        assert sorted(request.names) == sorted(set(request.names)), request.names
        assert request.headers["mcp-method"] == request.rpc_method
        assert request.headers["x-trace"] == "abc"
        assert request.headers["content-length"] == str(len(request.body))
    listens = [r for r in http.seen if r.rpc_method == "subscriptions/listen"]
    assert listens and all(r.headers["accept-encoding"] == "identity" for r in listens)
    others = [r for r in http.seen if r.rpc_method != "subscriptions/listen"]
    assert all(r.headers["accept-encoding"] == "br" for r in others)


def test_sse_priming_events_are_skipped() -> None:
    def handler(request: Request, conn: Conn) -> None:
        conn.sse_head()
        conn.sse_raw(b"id: prime-1\ndata:\n\n")
        conn.sse_raw(b"id: prime-2\ndata: \n\n")
        conn.event(tool_result(request, "after priming"), event_id="3")
        conn.sse_end()

    with ForeignServer(handler) as http, mt.Client.http(http.url) as client:
        assert client.call_tool("prime")["content"][0]["text"] == "after priming"


def test_a_body_trickled_a_byte_at_a_time_cannot_stretch_the_call() -> None:
    stop = threading.Event()

    def handler(request: Request, conn: Conn) -> None:
        body = b'{"jsonrpc": "2.0", "id": %d, "result": {"content": []}}' % request.id
        conn.head("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body) * 100))])
        trickle(conn, body * 100, 0.02, stop)  # would take over a minute

    with ForeignServer(handler) as http, mt.Client.http(http.url, retries=0) as client:
        started = time.monotonic()
        with pytest.raises(mt.RequestTimeout):
            client.call_tool("slowly", timeout=1.0)
        # the timeout ended it, not the trickle (less than MIN_STEP left is no time: _clock.py)
        assert time.monotonic() - started >= 1.0 - MIN_STEP
        stop.set()


def test_keepalive_comments_before_the_acknowledgement_do_not_extend_listen() -> None:
    hung_up = threading.Event()

    def handler(request: Request, conn: Conn) -> None:
        conn.sse_head()
        try:
            while not hung_up.is_set():
                conn.comment()
                time.sleep(0.05)
        except OSError:
            hung_up.set()
        raise Hangup

    with ForeignServer(handler) as http, mt.Client.http(http.url) as client:
        with pytest.raises(mt.RequestTimeout):
            client.listen({"toolsListChanged": True}, timeout=0.5)
        assert hung_up.wait(30), "the client gave the stream up"


def test_a_close_delimited_listen_stream_closes_at_once() -> None:
    hung_up = threading.Event()

    def handler(request: Request, conn: Conn) -> None:
        conn.sse_head(close_delimited=True)
        conn.event(ack(request))
        if conn.wait_hangup(60):
            hung_up.set()
        raise Hangup

    with ForeignServer(handler) as http, mt.Client.http(http.url) as client:
        subscription = client.listen({"toolsListChanged": True}, timeout=10)
        subscription.close()
        assert hung_up.wait(30)
        assert isinstance(subscription.next(timeout=5), mt.Closed)


def test_connections_are_reused_after_sse_answers_and_202s() -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.id is None:
            conn.empty()
            return
        conn.sse_head()
        conn.event({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}})
        conn.event(tool_result(request))
        conn.sse_end()

    with ForeignServer(handler) as http, mt.Client.http(http.url) as client:
        for _ in range(24):
            client.call_tool("sse")
        client.transport.notify({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        client.call_tool("sse")
    assert http.connections == 1


def test_connections_dropped_when_reused_after_idle_are_retried() -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.number == 2:
            raise Hangup  # the server timed the idle connection out as the request arrived
        if request.rpc_method == "tools/call":
            conn.json(created(request, TASK))
        else:
            conn.json(result(request, task(TASK)))

    with ForeignServer(handler) as http, mt.Client.http(http.url) as client:
        status = mt.call_tool(client, "work", follow=False)  # the reads below are the only ones
        assert isinstance(status, mt.Status)
        for _ in range(4):
            assert mt.get_task(client, status).status is mt.TaskState.WORKING
    assert http.count("tasks/get") == 8  # each sent on a connection the server dropped, then again


def test_a_reset_connection_is_retried() -> None:
    def handler(request: Request, conn: Conn) -> None:
        if http.count("tasks/get") == 1:
            reset(conn)
        conn.json(result(request, task(TASK)))

    with ForeignServer(handler) as http, mt.Client.http(http.url) as client:
        assert mt.get_task(client, TASK).status is mt.TaskState.WORKING
    assert http.count("tasks/get") == 2


def test_a_tools_call_answered_then_lost_is_not_sent_again() -> None:
    def handler(request: Request, conn: Conn) -> None:
        raise Hangup

    with ForeignServer(handler) as http, mt.Client.http(http.url) as client, pytest.raises(mt.TransportError):
        client.call_tool("once")
    assert http.count("tools/call") == 1


def test_a_refused_connection_is_retried_even_for_tools_call() -> None:
    listener = ForeignServer(lambda request, conn: conn.json(tool_result(request)))
    port = listener.port
    listener.close()  # nothing listens there now
    with (
        mt.Client.http(f"http://127.0.0.1:{port}/mcp", retries=mt.Retry(2, backoff=0.01)) as client,
        pytest.raises(mt.TransportError) as refused,
    ):
        client.call_tool("anything")
    assert refused.value.retryable and not refused.value.sent
    assert refused.value.data["attempts"] == 3


def statuses(*answers: tuple[str, list[tuple[str, str]]]) -> Callable[[Request, Conn], None]:
    """A handler that answers with these error statuses first, then with the result."""
    queue = list(answers)

    def handler(request: Request, conn: Conn) -> None:
        if queue:
            status, headers = queue.pop(0)
            conn.body(b"busy", status, [("Content-Type", "text/plain"), *headers])
        else:
            conn.json(result(request, task(TASK)))

    return handler


@pytest.mark.parametrize(
    "answers",
    [
        [("502 Bad Gateway", [])],
        [("503 Service Unavailable", [("Retry-After", "1")])],
        [("429 Too Many Requests", [("Retry-After", "Thu, 01 Jan 1970 00:00:00 GMT")])],
        [("504 Gateway Timeout", []), ("503 Service Unavailable", [])],
    ],
    ids=["502-once", "503-retry-after-seconds", "429-retry-after-date", "504-then-503"],
)
def test_retryable_statuses_are_retried(answers: list[tuple[str, list[tuple[str, str]]]]) -> None:
    with ForeignServer(statuses(*answers)) as http, mt.Client.http(http.url) as client:
        started = time.monotonic()
        assert mt.get_task(client, TASK).status is mt.TaskState.WORKING
        if any(h == [("Retry-After", "1")] for _, h in answers):
            assert time.monotonic() - started >= 1.0
    assert http.count("tasks/get") == len(answers) + 1


def test_a_503_for_a_tools_call_is_not_sent_again() -> None:
    with ForeignServer(statuses(("503 Service Unavailable", []))) as http, mt.Client.http(http.url) as client:
        with pytest.raises(mt.TransportError) as error:
            client.call_tool("once")
        assert error.value.data == {"status": 503}
    assert http.count("tools/call") == 1


def test_an_answer_to_another_id_is_an_error() -> None:
    def handler(request: Request, conn: Conn) -> None:
        conn.json({"jsonrpc": "2.0", "id": request.id + 1000, "result": {"content": []}})

    with ForeignServer(handler) as http, mt.Client.http(http.url) as client:
        with pytest.raises(mt.ProtocolError, match="another request") as error:
            client.call_tool("x")
        assert error.value.kind == "protocol"


def test_a_protocol_violation_is_not_sent_again_even_when_idempotent() -> None:
    def handler(request: Request, conn: Conn) -> None:
        conn.body(b"[1, 2]", "200 OK", [("Content-Type", "application/json")])

    with (
        ForeignServer(handler) as http,
        mt.Client.http(http.url, protocol="2026-07-28") as client,
        pytest.raises(mt.ProtocolError, match="without a JSON-RPC message"),
    ):
        client.request("tasks/get", {"taskId": TASK})
    assert http.count("tasks/get") == 1


def test_a_404_names_the_url() -> None:
    def handler(request: Request, conn: Conn) -> None:
        conn.body(b"no such page", "404 Not Found", [("Content-Type", "text/plain")])

    with (
        ForeignServer(handler) as http,
        mt.Client.http(http.url + "?key=secret") as client,
        pytest.raises(mt.TransportError) as error,
    ):
        client.call_tool("x")
    assert http.url in error.value.message
    assert "secret" not in error.value.message
    assert error.value.data == {"status": 404}


CHALLENGE = 'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"'


def test_a_401_without_auth_is_an_authorization_error() -> None:
    def handler(request: Request, conn: Conn) -> None:
        conn.body(b"", "401 Unauthorized", [("WWW-Authenticate", CHALLENGE)])

    with ForeignServer(handler) as http, mt.Client.http(http.url) as client, pytest.raises(mt.McpError) as error:
        client.call_tool("x")
    assert error.value.kind == "authorization"
    assert http.url in error.value.message and CHALLENGE in error.value.message
    assert error.value.data == {"status": 401, "wwwAuthenticate": CHALLENGE}


def digest_handler(user: str, password: str) -> Callable[[Request, Conn], None]:
    realm, nonce = "mcp", "n0nce"

    def handler(request: Request, conn: Conn) -> None:
        header = request.headers.get("authorization", "")
        if header.startswith("Digest "):
            fields = dict(part.strip().split("=", 1) for part in header[len("Digest ") :].split(",") if "=" in part)
            fields = {k: v.strip('"') for k, v in fields.items()}
            ha1 = hashlib.md5(f"{user}:{realm}:{password}".encode()).hexdigest()
            ha2 = hashlib.md5(f"{request.method}:{fields['uri']}".encode()).hexdigest()
            expected = hashlib.md5(
                f"{ha1}:{nonce}:{fields['nc']}:{fields['cnonce']}:{fields['qop']}:{ha2}".encode()
            ).hexdigest()
            if fields.get("response") == expected:
                conn.json(tool_result(request, "let in"))
                return
        challenge = f'Digest realm="{realm}", nonce="{nonce}", qop="auth", algorithm=MD5'
        conn.body(b"", "401 Unauthorized", [("WWW-Authenticate", challenge)])

    return handler


def test_http_digest_auth_answers_the_401() -> None:
    with (
        ForeignServer(digest_handler("ada", "secret")) as http,
        mt.Client.http(http.url, auth=HTTPDigestAuth("ada", "secret")) as client,
    ):
        assert client.call_tool("x")["content"][0]["text"] == "let in"
        assert client.call_tool("y")["content"][0]["text"] == "let in"
    with (
        ForeignServer(digest_handler("ada", "secret")) as http,
        mt.Client.http(http.url, auth=HTTPDigestAuth("ada", "wrong")) as client,
        pytest.raises(mt.McpError) as refused,
    ):
        client.call_tool("x")
    assert refused.value.kind == "authorization"


class TokenOn401(AuthBase):
    """A custom auth: on a 401 it fetches a token (here: counts) and sends the request again."""

    def __init__(self) -> None:
        self.token: str | None = None
        self.refreshes = 0

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        if self.token:
            r.headers["Authorization"] = f"Bearer {self.token}"
        r.register_hook("response", self.on_response)
        return r

    def on_response(self, response: requests.Response, **kwargs: Any) -> requests.Response:
        if response.status_code != 401 or self.refreshes:
            return response
        self.refreshes += 1
        self.token = "t0ken"
        response.content  # noqa: B018 - read it so the connection can go back
        again = response.request.copy()
        again.headers["Authorization"] = f"Bearer {self.token}"
        retried: requests.Response = response.connection.send(again, **kwargs)
        return retried


def test_a_custom_auth_with_a_response_hook_gets_its_401() -> None:
    def handler(request: Request, conn: Conn) -> None:
        if request.headers.get("authorization") == "Bearer t0ken":
            conn.json(tool_result(request, "token accepted"))
        else:
            conn.body(b"", "401 Unauthorized", [("WWW-Authenticate", 'Bearer realm="mcp"')])

    auth = TokenOn401()
    session = requests.Session()
    with ForeignServer(handler) as http, mt.Client.http(http.url, auth=auth) as client:
        assert client.call_tool("x")["content"][0]["text"] == "token accepted"
        assert client.call_tool("y")["content"][0]["text"] == "token accepted"
    assert auth.refreshes == 1
    session.auth = TokenOn401()
    with ForeignServer(handler) as http, mt.Client.http(http.url, session=session) as client:
        assert client.call_tool("x")["content"][0]["text"] == "token accepted"
    session.close()


def test_session_hooks_verify_and_adapters_reach_requests() -> None:
    sent: list[dict[str, Any]] = []
    hooked: list[int] = []

    class Recording(requests.adapters.HTTPAdapter):
        def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
            sent.append(kwargs)
            return super().send(request, **kwargs)

    def handler(request: Request, conn: Conn) -> None:
        conn.json(tool_result(request))

    session = requests.Session()
    session.mount("http://", Recording())
    session.verify = "/nonexistent/ca.pem"
    session.hooks["response"].append(lambda r, **kw: hooked.append(r.status_code))
    with ForeignServer(handler) as http, mt.Client.http(http.url, session=session) as client:
        client.call_tool("x")
        session.get(http.url.replace("/mcp", "/plain"), timeout=5)
    probe, ours, theirs = sent  # the era probe (server/discover), the call, then plain requests
    assert ours["verify"] == theirs["verify"] == probe["verify"]  # the session's, or the environment's
    assert ours["proxies"] == theirs["proxies"] and ours["cert"] == theirs["cert"]
    assert hooked == [200, 200, 200]
    session.close()


def test_the_pool_holds_every_concurrent_connection(caplog: pytest.LogCaptureFixture) -> None:
    concurrent = 64
    arrived = threading.Barrier(concurrent, timeout=30)

    def handler(request: Request, conn: Conn) -> None:
        if request.number == 1 and http.connections <= concurrent:
            arrived.wait()  # every request is in flight at once
        conn.json(result(request, task(TASK)))

    caplog.set_level(logging.WARNING, logger="urllib3")
    with ForeignServer(handler) as http, mt.Client.http(http.url) as client:
        assert client.era == "modern"  # the probe first, on one connection the first round reuses
        for _round in range(2):
            threads = [threading.Thread(target=mt.get_task, args=(client, TASK)) for _ in range(concurrent)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
        assert http.connections == concurrent  # the second round reused them all
    assert not [r for r in caplog.records if "pool is full" in r.getMessage()]
