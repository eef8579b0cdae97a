"""Regression tests for issue 15 (one session layer between the client and its transport), each
against a server of the tests' own written at the pipe or socket level with no mcp_tasks code:

- tests/foreign/legacy_stdio_tasks.py: 2025-11-25 over stdio, experimental tasks (mcp 1.30's habits);
- tests/foreign/legacy_http_tasks.py: 2025-11-25 over Streamable HTTP with ``Mcp-Session-Id``
  sessions, tasks bound to the session that created them (as mcp 1.30 binds them);
- tests/foreign/modern_http_tasks.py: 2026-07-28 with the Tasks extension.

Each test names the failure it guards against. The tests synchronise on what the servers report
(their journals), never on sleeps, and assert no upper bound on any duration: a timeout that must
be a total is checked by its outcome (a slow handshake plus a slow call inside one short timeout
must time out).
"""

from __future__ import annotations

import _thread
import json
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import mcp_tasks as mt
from tests.conftest import ROOT, Background
from tests.foreign.legacy_http_tasks import LegacyHttpTasksServer
from tests.foreign.legacy_stdio_tasks import Reports
from tests.foreign.legacy_tasks_core import Journal
from tests.foreign.modern_http_tasks import ModernHttpTasksServer

TRANSPORTS = ("stdio", "http")
STDIO_SERVER = ["-m", "tests.foreign.legacy_stdio_tasks"]
LEGACY = "2025-11-25"
SEEDED = "0123456789abcdef0123456789abcdef:5eeded00-0000-4000-8000-000000000001"
"""A completed task a stdio server starts with (a server with a durable store)."""

PERSON_SECONDS = 2.0
"""How long the person answering an elicitation takes: longer than the client's 1 s timeout."""

DECLINE = mt.InputHandlers(form=lambda params: {"action": "decline"})
"""The client's own input handlers in the routing tests: they decline."""


def accept_all(status: mt.Status) -> dict[str, Any]:
    """A wait's input strategy that accepts every pending request."""
    return {key: {"action": "accept", "content": {"name": "Ada"}} for key in status.input_requests}


def text(result: dict[str, Any] | mt.Status) -> str:
    assert isinstance(result, dict), f"a task where a result was expected: {result!r}"
    value: str = result["content"][0]["text"]
    return value


class Legacy:
    """A legacy tasks server of our own over one transport, and the clients made of it (each stdio
    client starts a server process of its own; HTTP clients share one server).
    """

    def __init__(self, transport: str, **options: Any) -> None:
        self.transport = transport
        self.clients: list[mt.Client] = []
        self.http: LegacyHttpTasksServer | None = None
        self.reports: Reports | None = None
        self.args: list[str] = []
        if transport == "http":
            self.http = LegacyHttpTasksServer(**options)
            self.http.start()
            self.journal: Journal = self.http.journal
            return
        self.reports = Reports()
        self.journal = self.reports.journal
        for seed in options.pop("seeds", ()):
            self.args += ["--seed-completed", seed]
        if options.pop("tasks_capability", True) is False:
            self.args.append("--no-tasks-capability")
        for name in ("init_delay", "get_delay"):
            if name in options:
                self.args += [f"--{name.replace('_', '-')}", str(options.pop(name))]
        assert not options, f"options a stdio server does not take: {options}"
        self.args += ["--report", str(self.reports.port)]

    @property
    def server(self) -> LegacyHttpTasksServer:
        assert self.http is not None
        return self.http

    def client(self, **options: Any) -> mt.Client:
        if self.http is not None:
            client = mt.Client.http(self.http.url, **options)
        else:
            client = mt.Client.stdio(sys.executable, [*STDIO_SERVER, *self.args], cwd=ROOT, **options)
        self.clients.append(client)
        return client

    def close(self) -> None:
        for client in self.clients:
            client.close()
        if self.http is not None:
            self.http.close()
        if self.reports is not None:
            self.reports.close()


@pytest.fixture
def servers() -> Iterator[Callable[..., Legacy]]:
    made: list[Legacy] = []

    def make(transport: str, **options: Any) -> Legacy:
        legacy = Legacy(transport, **options)
        made.append(legacy)
        return legacy

    yield make
    for legacy in made:
        legacy.close()


@pytest.fixture
def modern() -> Iterator[Callable[..., ModernHttpTasksServer]]:
    made: list[ModernHttpTasksServer] = []

    def make(**options: Any) -> ModernHttpTasksServer:
        server = ModernHttpTasksServer(**options)
        server.start()
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


def requested(method: str, task_id: str | None = None) -> Callable[[dict[str, Any]], bool]:
    """A journal match: the server received a `method` request (about `task_id`)."""
    return lambda e: e["event"] == "request" and e["method"] == method and (task_id is None or e["taskId"] == task_id)


# -- 1. routing: a server request reaches a wait only when it names the wait's task -------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_elicitation_naming_no_task_goes_to_the_client_handlers_not_to_a_running_wait(
    servers: Callable[..., Legacy], transport: str
) -> None:
    """Issue 15: such a request went to "the only wait running"; another thread's synchronous
    call got the wait's accept although the client's handler said decline.
    """
    legacy = servers(transport)
    client = legacy.client(input_handlers=DECLINE, timeout=10)
    task = mt.call_tool(client, "hold")
    assert isinstance(task, mt.Status)
    mark = legacy.journal.mark()
    waiting = Background(lambda: mt.wait_task(client, task, timeout=30, input=accept_all))
    try:
        legacy.journal.wait_for(requested("tasks/get", task.task_id), after=mark, what="the wait's tasks/get")
        answered = client.call_tool("ask_plain")  # thread B, while thread A waits on the task
        asked = legacy.journal.wait_for(lambda e: e["event"] == "ask_plain_answer", after=mark)
    finally:
        client.call_tool("release")
        final = waiting.result()
    assert asked["answer"].get("result") == {"action": "decline"}
    assert text(answered) == "answer: decline"
    assert final.status is mt.TaskState.COMPLETED


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_elicitation_naming_the_task_goes_to_that_wait_s_strategy(
    servers: Callable[..., Legacy], transport: str
) -> None:
    legacy = servers(transport)
    client = legacy.client(input_handlers=DECLINE, timeout=10)
    task = mt.call_tool(client, "ask_task")
    assert isinstance(task, mt.Status)
    final = mt.wait_task(client, task, timeout=30, input=accept_all)
    assert final.status is mt.TaskState.COMPLETED
    assert text(mt.outcome(final)) == "hello Ada (accept)"
    asked = legacy.journal.wait_for(lambda e: e["event"] == "ask_task_answer")
    assert asked["answer"]["result"]["action"] == "accept"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_wait_from_a_task_id_uses_its_own_strategy_for_its_first_request(
    servers: Callable[..., Legacy], transport: str
) -> None:
    """Issue 15: a wait started from an id ignored its `input=` for the first request (the
    client's handlers answered it).
    """
    legacy = servers(transport)
    client = legacy.client(input_handlers=DECLINE, timeout=10)
    task = mt.call_tool(client, "ask_task")  # input_required from the start
    assert isinstance(task, mt.Status)
    final = mt.wait_task(client, task.task_id, timeout=30, input=accept_all)
    assert text(mt.outcome(final)) == "hello Ada (accept)"


# -- 2. resuming a legacy task by id on a fresh client -------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_await_task_by_id_as_a_fresh_client_s_first_call_returns_the_legacy_result(
    servers: Callable[..., Legacy], transport: str
) -> None:
    """Issue 15: the era was read before it was negotiated, and the legacy task decoded by the
    modern rules: "invalid task: result must be an object".
    """
    if transport == "stdio":
        legacy = servers("stdio", seeds=[SEEDED])
        task_id, expected = SEEDED, "seeded done"
    else:
        legacy = servers("http", bind_tasks=False)  # a server whose tasks outlive their session
        creator = legacy.client(timeout=10)
        created = mt.call_tool(creator, "quick")
        assert isinstance(created, mt.Status)
        task_id, expected = created.task_id, "quick done"
        creator.close()
    fresh = legacy.client(timeout=10)
    assert text(mt.await_task(fresh, task_id, timeout=30)) == expected


# -- 3. one deadline per public call -------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_handshake_and_the_call_share_call_tool_s_timeout(servers: Callable[..., Legacy], transport: str) -> None:
    """Issue 15: the first helper call negotiated under one timeout and then called under a fresh
    one (``call_tool(timeout=1.0)`` returned after 1.6 s). A 0.6 s handshake and a 0.6 s tool do
    not fit in one second.
    """
    legacy = servers(transport, init_delay=0.6)
    client = legacy.client(timeout=30)
    with pytest.raises(mt.RequestTimeout):
        mt.call_tool(client, "slow_plain", {"seconds": 0.6}, timeout=1.0)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_handshake_and_the_read_share_get_task_s_timeout(servers: Callable[..., Legacy], transport: str) -> None:
    if transport == "stdio":
        legacy = servers("stdio", init_delay=0.6, get_delay=0.6, seeds=[SEEDED])
        task_id = SEEDED
    else:
        legacy = servers("http", init_delay=0.6, get_delay=0.6, bind_tasks=False)
        created = mt.call_tool(legacy.client(timeout=30), "quick")
        assert isinstance(created, mt.Status)
        task_id = created.task_id
    fresh = legacy.client(timeout=30)
    with pytest.raises(mt.RequestTimeout):
        mt.get_task(fresh, task_id, timeout=1.0)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_person_slower_than_the_request_timeout_does_not_fail_a_legacy_wait(
    servers: Callable[..., Legacy], transport: str
) -> None:
    """Issue 15: a person who took longer than the client's request timeout to answer an
    elicitation (sent inside the pending ``tasks/result``) killed ``wait_task(timeout=30)`` with
    a bare RequestTimeout. A person's time counts against the wait's deadline only.
    """
    legacy = servers(transport)
    person = threading.Event()  # set only to let a failing test end sooner

    def form(params: dict[str, Any]) -> dict[str, Any]:
        person.wait(PERSON_SECONDS)  # reading the question, typing the answer
        return {"action": "accept", "content": {"name": "Ada"}}

    client = legacy.client(input_handlers=mt.InputHandlers(form=form), timeout=1.0)
    task = mt.call_tool(client, "ask_task")
    assert isinstance(task, mt.Status)
    try:
        final = mt.wait_task(client, task, timeout=30)
    finally:
        person.set()
    assert final.status is mt.TaskState.COMPLETED
    assert text(mt.outcome(final)) == "hello Ada (accept)"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_request_timeout_none_means_no_limit_per_request(servers: Callable[..., Legacy], transport: str) -> None:
    """Issue 15: ``request_timeout=None`` meant "the client's timeout" where None means "no limit"
    everywhere else. Each ``tasks/get`` here takes 1.5 s, longer than the client's 1 s timeout.
    """
    if transport == "stdio":
        legacy = servers("stdio", get_delay=1.5, seeds=[SEEDED])
        task_id, expected = SEEDED, "seeded done"
    else:
        legacy = servers("http", get_delay=1.5)
        task_id, expected = "", "quick done"
    client = legacy.client(timeout=1.0)
    if not task_id:
        created = mt.call_tool(client, "quick")
        assert isinstance(created, mt.Status)
        task_id = created.task_id
    assert client.era == "legacy"  # negotiated: the wait's own requests are what is timed
    assert text(mt.await_task(client, task_id, timeout=30, request_timeout=None)) == expected


# -- 4. Ctrl-C during a request ------------------------------------------------------------------


def test_ctrl_c_during_a_stdio_request_tells_the_server_and_the_client_goes_on(servers: Callable[..., Legacy]) -> None:
    """Issue 15: a KeyboardInterrupt during a request left its pending entry and never sent
    ``notifications/cancelled``, so a long synchronous tool kept running.
    """
    legacy = servers("stdio")
    client = legacy.client(timeout=30)
    assert text(client.call_tool("echo", {"n": 1})) == '{"n": 1}'  # negotiated before the interrupted call
    mark = legacy.journal.mark()
    done = threading.Event()

    def interrupt_when_the_server_has_it() -> None:
        try:
            legacy.journal.wait_for(lambda e: e["event"] == "block", after=mark, what="the blocking call")
        except AssertionError:
            return
        if not done.is_set():
            _thread.interrupt_main()  # as Ctrl-C: the main thread is inside client.request

    helper = threading.Thread(target=interrupt_when_the_server_has_it, name="test-interrupter", daemon=True)
    helper.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            client.request("tools/call", {"name": "block", "arguments": {}})
    finally:
        done.set()
        helper.join(30)
    [blocked] = legacy.journal.events(lambda e: e["event"] == "block", after=mark)
    legacy.journal.wait_for(
        lambda e: e["event"] == "cancelled" and e["requestId"] == blocked["id"],
        after=mark,
        what="notifications/cancelled for the interrupted request",
    )
    legacy.journal.wait_for(lambda e: e["event"] == "block_cancelled", after=mark)
    assert text(client.call_tool("echo", {"n": 2})) == '{"n": 2}'


# -- 5. the handshake is atomic ------------------------------------------------------------------


@pytest.mark.parametrize("body", ["json", "text"])
def test_a_failed_initialized_notification_is_followed_by_a_whole_new_handshake(
    servers: Callable[..., Legacy], body: str
) -> None:
    """Issue 15: the era was published before ``notifications/initialized`` had gone through; a
    failure between the two steps left a client broken for good. The server answers the first
    ``notifications/initialized`` with HTTP 500 (``json``: with a JSON-RPC error body, as mcp
    1.30 answers a POST it failed to handle; ``text``: Starlette's plain body) and does not take it.
    """
    legacy = servers("http", fail_first_initialized=body)
    server = legacy.server
    client = legacy.client(timeout=10)
    with pytest.raises(mt.McpError):
        mt.call_tool(client, "plain")
    mark = legacy.journal.mark()
    assert text(mt.call_tool(client, "plain")) == "ran plain"
    assert server.initializes == 2, "initialize was not sent again"
    second = server.session_order[1]
    assert [e["session"] for e in legacy.journal.events(lambda e: e["event"] == "initialized")] == [second]
    calls = server.requests_of("tools/call", after=mark)
    assert calls
    for call in calls:
        assert call["session"] == second
        assert call["headers"].get("mcp-protocol-version") == LEGACY
    legacy.journal.wait_for(
        lambda e: e["event"] == "get_stream" and e["session"] == second, what="the new session's GET stream"
    )


def test_no_request_goes_out_before_the_handshake_is_complete(servers: Callable[..., Legacy]) -> None:
    """Issue 15: another thread saw the era as soon as ``initialize`` was answered and sent its
    request before ``notifications/initialized`` had gone through (mcp 1.30 refuses it).
    """
    legacy = servers("http", hold_first_initialized=True)
    client = legacy.client(timeout=10)
    first = Background(lambda: mt.call_tool(client, "plain"))
    legacy.journal.wait_for(lambda e: e["event"] == "initialized_held", what="the first notifications/initialized")
    second = client.call_tool("echo", {"n": 2})  # this thread's first request, while the handshake ends
    assert text(second) == '{"n": 2}'
    assert text(first.result()) == "ran plain"
    assert legacy.journal.events(lambda e: e["event"] == "premature") == []
    assert legacy.server.initializes == 1


# -- 6. hostile answers are protocol errors -------------------------------------------------------

HOSTILE = ("list", "object", "number", "other_id")
WHERE = ("legacy-stdio", "legacy-http", "modern-http")


def _hostile_client(
    where: str, servers: Callable[..., Legacy], modern: Callable[..., ModernHttpTasksServer]
) -> mt.Client:
    if where == "modern-http":
        return mt.Client.http(modern().url, timeout=10)
    legacy = servers(where.split("-")[1])
    return legacy.client(timeout=10)


def _is_protocol_error(error: BaseException) -> None:
    assert isinstance(error, mt.McpError)
    assert error.kind == "protocol", f"kind {error.kind!r}: {error!r}"
    assert isinstance(error, mt.ProtocolError)
    assert not isinstance(error, mt.TransportError)


@pytest.mark.parametrize("mode", HOSTILE)
@pytest.mark.parametrize("where", WHERE)
def test_a_task_that_does_not_decode_is_a_protocol_error(
    servers: Callable[..., Legacy], modern: Callable[..., ModernHttpTasksServer], where: str, mode: str
) -> None:
    """Issue 15: a status that is a list or an object raised ``TypeError: unhashable type``; a
    ``tasks/get`` answering for another task was a TransportError.
    """
    client = _hostile_client(where, servers, modern)
    try:
        task = mt.call_tool(client, "hostile", {"mode": mode})
        assert isinstance(task, mt.Status)
        with pytest.raises(mt.McpError) as read:
            mt.get_task(client, task, timeout=10)
        _is_protocol_error(read.value)
        with pytest.raises(mt.McpError) as waited:
            mt.wait_task(client, task.task_id, timeout=10)
        _is_protocol_error(waited.value)
    finally:
        client.close()


@pytest.mark.parametrize("where", ["legacy-http", "modern-http"])
def test_an_answer_for_another_request_is_a_protocol_error(
    servers: Callable[..., Legacy], modern: Callable[..., ModernHttpTasksServer], where: str
) -> None:
    client = _hostile_client(where, servers, modern)
    try:
        with pytest.raises(mt.McpError) as answered:
            client.call_tool("wrong_id")
        _is_protocol_error(answered.value)
    finally:
        client.close()


def test_the_delete_that_ends_a_legacy_session_carries_the_protocol_version(servers: Callable[..., Legacy]) -> None:
    """Issue 15: the DELETE had no ``MCP-Protocol-Version`` (mcp 1.30, fastmcp 3, server-everything
    expect it on every request of the session).
    """
    legacy = servers("http")
    client = legacy.client(timeout=10)
    assert text(client.call_tool("plain")) == "ran plain"
    client.close()
    [delete] = legacy.server.deletes
    assert delete.get("mcp-session-id") == legacy.server.session_order[0]
    assert delete.get("mcp-protocol-version") == LEGACY


# -- 7. resume on a server that binds tasks to their session ---------------------------------------
#
# Closing a client DELETEs its session, and mcp 1.30 keeps a task reachable only from the session
# that created it: so the creating client stays open here (as a process that was killed without
# closing, or one still running elsewhere, leaves its session alive), and a second client joins
# that session by id. The joined session is not the joiner's to end: closing it sends no DELETE.


@pytest.mark.parametrize("protocol", ["auto", LEGACY])
def test_a_saved_legacy_http_status_resumes_from_a_client_that_joins_its_session(
    servers: Callable[..., Legacy], protocol: str
) -> None:
    """Issue 15: "Resume with: mcp-tasks wait URL ID" and ``await_task(fresh_client, id)`` failed
    with "Task not found" on mcp 1.30, which binds a task to the session that created it.
    """
    legacy = servers("http")
    server = legacy.server
    creator = legacy.client(timeout=10)
    task = mt.call_tool(creator, "hold")
    assert isinstance(task, mt.Status)
    [session_id] = server.session_order
    with pytest.raises(mt.McpError):  # the server's rule: another session cannot see the task
        mt.get_task(legacy.client(timeout=10), task.task_id)
    assert task.session_id == session_id
    saved = json.dumps(task.to_map())

    reloaded = mt.Status.from_map(json.loads(saved))
    assert reloaded.era == "legacy"
    assert reloaded.session_id == session_id
    assert reloaded.task_id == task.task_id
    initializes = server.initializes
    mark = legacy.journal.mark()
    options: dict[str, Any] = {} if protocol == "auto" else {"protocol": protocol}
    joined = legacy.client(timeout=10, session_id=reloaded.session_id, **options)
    given: mt.Status | str = reloaded if protocol == "auto" else reloaded.task_id
    waiting = Background(lambda: mt.await_task(joined, given, timeout=30))
    try:
        legacy.journal.wait_for(requested("tasks/get", task.task_id), after=mark, what="the joined client's read")
    finally:
        creator.call_tool("release")
    assert text(waiting.result()) == "held done"
    assert server.initializes == initializes, "the joining client started a session of its own"
    reads = [e for e in server.requests_of("tasks/get", after=mark)]
    assert reads and all(e["session"] == session_id for e in reads)
    joined.close()
    assert server.deletes == [], "the joining client ended a session that is not its own"
    assert text(creator.call_tool("plain")) == "ran plain"


# -- 8. small truths -------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_server_supports_is_true_on_a_legacy_server_that_runs_tasks(
    servers: Callable[..., Legacy], transport: str
) -> None:
    client = servers(transport).client(timeout=10)
    assert mt.server_supports(client) is True


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_server_supports_is_false_on_a_legacy_server_without_the_tasks_capability(
    servers: Callable[..., Legacy], transport: str
) -> None:
    client = servers(transport, tasks_capability=False).client(timeout=10)
    assert mt.server_supports(client) is False


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_may_create_task_follows_the_capability_and_each_tool_s_task_support(
    servers: Callable[..., Legacy], transport: str
) -> None:
    client = servers(transport).client(timeout=10)
    assert mt.may_create_task(client, "hold") is True  # optional
    assert mt.may_create_task(client, "must_task") is True  # required
    assert mt.may_create_task(client, "plain") is False  # no execution.taskSupport
    assert mt.may_create_task(client, "forbidden_tool") is False
    # fastmcp 4 on a handshake: taskSupport shown, no capabilities.tasks, and no task ever made
    bare = servers(transport, tasks_capability=False).client(timeout=10)
    assert mt.may_create_task(bare, "hold") is False
    assert isinstance(mt.call_tool(bare, "hold"), dict)


@pytest.mark.parametrize("advertise", [True, False])
def test_may_create_task_on_a_modern_server_follows_its_advertisement(
    modern: Callable[..., ModernHttpTasksServer], advertise: bool
) -> None:
    with mt.Client.http(modern(advertise=advertise).url, timeout=10) as client:
        assert mt.may_create_task(client, "hold") is advertise
        assert isinstance(mt.call_tool(client, "hold"), mt.Status) is advertise


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_to_map_keeps_the_era_and_the_session(servers: Callable[..., Legacy], transport: str) -> None:
    """Issue 15: ``Status.to_map()`` dropped ``era``, so a saved legacy status reloaded as modern."""
    legacy = servers(transport)
    task = mt.call_tool(legacy.client(timeout=10), "hold")
    assert isinstance(task, mt.Status)
    assert task.era == "legacy"
    expected = legacy.server.session_order[0] if transport == "http" else None
    assert task.session_id == expected
    reloaded = mt.Status.from_map(json.loads(json.dumps(task.to_map())))
    assert reloaded.era == "legacy"
    assert reloaded.session_id == expected
    assert reloaded.task_id == task.task_id


def _never_whole(task_ids: tuple[str, ...], *shown: str) -> None:
    for text_shown in shown:
        for task_id in task_ids:
            assert task_id not in text_shown, f"a whole task id in {text_shown!r}"


def test_two_ids_sharing_the_session_prefix_look_different_and_are_never_shown_whole(
    servers: Callable[..., Legacy], caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 15: on mcp 1.30 every id starts with the session's hex, so every task showed as the
    same ``ed3581…``. Where the library shows an id (reprs, HTML, messages, its log records) two
    tasks must look different, and neither whole.
    """
    caplog.set_level(logging.DEBUG, logger="mcp_tasks")
    legacy = servers("http")
    client = legacy.client(timeout=10)
    first, second = mt.call_tool(client, "stuck"), mt.call_tool(client, "stuck")
    assert isinstance(first, mt.Status) and isinstance(second, mt.Status)
    ids = (first.task_id, second.task_id)
    assert ids[0][:33] == ids[1][:33] and ids[0] != ids[1]  # the server's ids: one 32-hex prefix
    assert repr(first) != repr(second)
    _never_whole(ids, repr(first), repr(second), first._repr_html_(), second._repr_html_())

    errors: list[mt.TaskTimeout] = []
    warnings: list[list[str]] = []
    for task in (first, second):
        start = len(caplog.records)
        with pytest.raises(mt.TaskTimeout) as late:  # its cancel is refused: a warning says so
            mt.await_task(client, task, timeout=0.2, cancel_on_timeout=True)
        errors.append(late.value)
        records = caplog.records[start:]
        warnings.append(
            [r.getMessage() for r in records if r.name.startswith("mcp_tasks") and r.levelno >= logging.WARNING]
        )
    assert str(errors[0]) != str(errors[1])
    _never_whole(ids, *(str(e) for e in errors), *(repr(e) for e in errors), *(e._repr_html_() for e in errors))
    assert warnings[0] and warnings[1], "no warning that the cancel failed"
    assert warnings[0] != warnings[1]
    _never_whole(ids, *(r.getMessage() for r in caplog.records if r.name.startswith("mcp_tasks")))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_server_text_embedding_the_task_id_does_not_show_it_whole(
    servers: Callable[..., Legacy], transport: str
) -> None:
    """Issue 15: server error texts went into messages verbatim (a failed task's statusMessage
    naming its id, as servers write them).
    """
    client = servers(transport).client(timeout=10)
    task = mt.call_tool(client, "fail_with_id")
    assert isinstance(task, mt.Status)
    with pytest.raises(mt.TaskFailed) as failed:
        mt.await_task(client, task, timeout=10)
    _never_whole((task.task_id,), str(failed.value), repr(failed.value), failed.value._repr_html_())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_input_keys_embedding_the_task_id_do_not_show_it_whole(servers: Callable[..., Legacy], transport: str) -> None:
    """Issue 15: input keys embed the task id (mcp 1.30's requests are ``task-<taskId>-<n>``) and
    went into InputRequired's message whole.
    """
    client = servers(transport).client(timeout=10)
    task = mt.call_tool(client, "ask_task")
    assert isinstance(task, mt.Status)
    with pytest.raises(mt.InputRequired) as needed:
        mt.await_task(client, task, timeout=10, input="return")
    assert any(task.task_id in key for key in needed.value.status.input_requests)  # the server's keys
    _never_whole((task.task_id,), str(needed.value), repr(needed.value), repr(needed.value.status))
