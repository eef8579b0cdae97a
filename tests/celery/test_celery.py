"""MCP calls as Celery tasks, with real parts: a redis-server, prefork `celery worker` processes
and the reference server over HTTP (never task_always_eager). Results arrive, failures carry
their fields, a revoke cancels on the server, the call's timeout ends the follow, input is
answered by the workers' handlers or from another process, and a worker SIGKILLed mid-follow
loses nothing and calls nothing twice; a result backend failing as a check sends the next
loses nothing either; and against an independent server (fastmcp-tasks) a result arrives and a
revoke cancels.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery, states
from celery.exceptions import TaskRevokedError

import mcp_tasks as mt
from mcp_tasks.celery import McpTasks, TaskError
from mcp_tasks.server import Server, serve_http
from tests.celery.conftest import Fleet, Redis, Worker, app_of, state_becomes, task_id_of
from tests.conftest import ROOT, eventually
from tests.foreign.legacy_http_tasks import LegacyHttpTasksServer
from tests.interop.conftest import PeerHttpServer

# One Redis and one pair of workers for the module: its tests run on one xdist worker.
pytestmark = pytest.mark.xdist_group("celery")


def test_a_result_arrives_and_its_tool_is_called_once(fleet: Fleet) -> None:
    mcp = app_of(fleet).mcp
    listens = fleet.served.listens
    result = mcp.call.delay(fleet.served.url, "work", {"n": 1, "seconds": 1.0})
    assert result.get(timeout=120)["structuredContent"] == {"n": 1}
    assert result.state == "SUCCESS"
    assert fleet.served.calls[("work", 1)] == 1
    # The worker process heard the end on its client's listen stream.
    assert fleet.served.listens > listens


def test_a_failing_tool_is_a_task_error_with_its_fields(fleet: Fleet) -> None:
    mcp = app_of(fleet).mcp
    result = mcp.call.delay(fleet.served.url, "boom", {"n": 2})
    with pytest.raises(TaskError) as raised:
        result.get(timeout=120)
    error = raised.value
    assert (error.code, error.message, error.data) == (-32001, "the export was refused", {"why": "closed"})
    assert error.short_task_id is not None and "…" in error.short_task_id
    assert result.state == "FAILURE"


def test_a_revoke_cancels_the_mcp_task_and_the_result_is_revoked(fleet: Fleet) -> None:
    mcp = app_of(fleet).mcp
    served = fleet.served
    result = mcp.call.delay(served.url, "work", {"n": 3, "seconds": 600})
    served.until(lambda: served.calls[("work", 3)] == 1)
    result.revoke()
    served.until(lambda: 3 in served.cancelled)
    with pytest.raises(TaskRevokedError):
        result.get(timeout=120)
    assert result.state == "REVOKED"


def test_the_timeout_keyword_ends_the_follow_and_leaves_the_task_running(fleet: Fleet) -> None:
    mcp = app_of(fleet).mcp
    served = fleet.served
    result = mcp.call.delay(served.url, "work", {"n": 4, "seconds": 600}, timeout=1)
    with pytest.raises(TaskError) as raised:
        result.get(timeout=120)
    assert raised.value.data == {"timeoutMs": 1000}
    assert "still running on the server" in raised.value.message
    assert 4 not in served.cancelled
    cancelled = mcp.call.delay(served.url, "work", {"n": 5, "seconds": 600}, timeout=1, cancel_on_timeout=True)
    with pytest.raises(TaskError, match="cancelled"):
        cancelled.get(timeout=120)
    served.until(lambda: 5 in served.cancelled)


def test_celerys_time_limits_bound_each_run_not_the_follow(fleet: Fleet) -> None:
    # A task that held its slot for the whole MCP task (the naive one) would be killed by them.
    mcp = app_of(fleet).mcp
    served = fleet.served
    result = mcp.call.apply_async((served.url, "work", {"n": 8, "seconds": 3.0}), time_limit=2, soft_time_limit=1)
    assert result.get(timeout=120)["structuredContent"] == {"n": 8}
    assert served.calls[("work", 8)] == 1


def test_input_is_answered_by_the_workers_handlers(fleet: Fleet) -> None:
    mcp = app_of(fleet).mcp
    answering = Worker("answering", {**fleet.env, "MCP_CELERY_HANDLERS": "1"}, queue="answering")
    try:
        result = mcp.call.apply_async((fleet.served.url, "ask", {"n": 6}), queue="answering")
        assert result.get(timeout=120)["structuredContent"] == {"n": 6, "name": "the worker"}
    finally:
        answering.close()
    assert fleet.served.updates["name-6"] == 1


@pytest.mark.parametrize("form", ["mapping", "callable"])
def test_an_endpoints_auth_and_headers_reach_it_and_its_client_is_closed_at_shutdown(fleet: Fleet, form: str) -> None:
    mcp = app_of(fleet).mcp
    with LegacyHttpTasksServer() as peer:
        env = {**fleet.env, "MCP_CELERY_PEER": peer.url, "MCP_CELERY_OPTIONS": form}
        worker = Worker(f"options-{form}", env, queue=f"options-{form}")
        try:
            result = mcp.call.apply_async((peer.url, "plain", {}), queue=f"options-{form}")
            assert result.get(timeout=120)["content"][0]["text"] == "ran plain"
            assert peer.deletes == []  # the worker's client stays open between calls
        finally:
            worker.close()  # a warm shutdown: the worker process closes its clients
        posts = peer.journal.events(lambda e: e["event"] == "http" and e["verb"] == "POST")
        basic = "Basic " + base64.b64encode(b"svc:pw-of-the-worker").decode()
        assert posts and all(e["headers"].get("x-team") == "shop" for e in posts)
        assert all(e["headers"].get("authorization") == basic for e in posts)
        sessions = {e["session"] for e in posts if e["session"]}
        assert len(sessions) == 1  # one client for the endpoint in the worker process
        assert [d.get("mcp-session-id") for d in peer.deletes] == list(sessions)  # closed at its shutdown
        assert all(d.get("x-team") == "shop" for d in peer.deletes)


def test_checks_go_to_the_check_queue_and_a_worker_consuming_it_finishes_the_call(fleet: Fleet) -> None:
    mcp = app_of(fleet).mcp
    env = {**fleet.env, "MCP_CELERY_CHECKS": "checks-q"}
    starting = Worker("starting", env, queue="calls-q")  # takes the calls only, never a check
    checking: Worker | None = None
    try:
        result = mcp.call.apply_async((fleet.served.url, "work", {"n": 50, "seconds": 0.1}), queue="calls-q")
        with redis.Redis.from_url(f"{fleet.redis.url}/0") as broker:
            # a check queued in checks-q, or (on the call's queue) the call finished by `starting`
            eventually(lambda: broker.llen("checks-q") or result.ready(), timeout=100, message="a check")
            waiting = broker.lrange("checks-q", 0, -1)
            assert [json.loads(raw)["headers"]["id"] for raw in waiting] == [result.id]
            assert broker.llen("calls-q") == 0
        assert fleet.served.calls[("work", 50)] == 1
        assert result.state == "STARTED"  # nobody takes the check yet
        checking = Worker("checking", env, queue="checks-q")
        assert result.get(timeout=120)["structuredContent"] == {"n": 50}
    finally:
        starting.close()
        if checking is not None:
            checking.close()
    assert fleet.served.calls[("work", 50)] == 1


def test_a_check_queue_that_is_no_name_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="check_queue"):
        McpTasks(Celery("bad", broker="memory://"), store=":memory:", check_queue="  ")


def test_a_task_the_server_forgets_is_a_failure_that_says_so(fleet: Fleet) -> None:
    mcp = app_of(fleet).mcp
    server = Server(poll_interval=0.02, task_ttl=1.0)  # a task it forgets one second after it began
    started = threading.Event()

    @server.tool(task="required")
    def linger(ctx: Any) -> dict[str, Any]:
        started.set()
        ctx.sleep(600)
        return {}

    http = serve_http(server)
    try:
        result = mcp.call.delay(http.url, "linger", {})
        assert started.wait(120)
        with pytest.raises(TaskError) as raised:
            result.get(timeout=120)
    finally:
        http.close()
        server.close()
    assert raised.value.code == -32602 and "expired" in raised.value.message
    assert result.state == "FAILURE"
    assert raised.value.short_task_id is not None and "…" in raised.value.short_task_id


# The sending app's result reader, subscribed before the restart, complains when it lets go.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_results_arrive_when_the_broker_restarts_mid_follow(fleet: Fleet, tmp_path: Path) -> None:
    served = fleet.served
    broker = Redis(tmp_path, persist=True)  # a broker of its own, which keeps its messages
    app = Celery("tests", broker=f"{broker.url}/0", backend=f"{broker.url}/1")
    app_of(fleet).configure(app)
    mcp = McpTasks(app, store=fleet.env["MCP_CELERY_STORE"], check_every=0.3)
    workers = [Worker("restarted", {**fleet.env, "MCP_CELERY_REDIS": broker.url})]
    try:
        numbers = range(30, 34)
        # Ids, not AsyncResults: the sending app's result reader lets go of a result when its
        # object goes, which must be now, while this test's broker answers (left to the collector
        # it was done in a later test, retrying a broker gone for good).
        ids = [mcp.call.delay(served.url, "work", {"n": n, "seconds": 3.0}).id for n in numbers]
        for task_id in ids:
            state_becomes(app.AsyncResult(task_id), "STARTED")
        broker.restart()
        # Celery's worker sometimes dies of the restart ("Unrecoverable error: AttributeError:
        # 'NoneType' object has no attribute 'hostname'", restoring its unacknowledged messages
        # while Redis is down); a supervisor would start it again: so does this test.
        workers.append(Worker("restarted-again", {**fleet.env, "MCP_CELERY_REDIS": broker.url}))
        # Read from the backend's keys (Celery's result reader does not survive the restart).
        with redis.Redis.from_url(f"{broker.url}/1") as backend:
            for n, task_id in zip(numbers, ids, strict=True):
                while (kept := backend.get(f"celery-task-meta-{task_id}")) is None or json.loads(kept)[
                    "status"
                ] not in states.READY_STATES:
                    threading.Event().wait(0.05)
                assert json.loads(kept)["result"]["structuredContent"] == {"n": n}
    finally:
        for worker in workers:
            worker.close()
        broker.close()
    assert [served.calls[("work", n)] for n in numbers] == [1] * len(numbers)


ANSWER = textwrap.dedent(
    """
    import sys
    from tests.celery.worker_app import mcp
    mcp.answer(sys.argv[1], {sys.argv[2]: {"action": "accept", "content": {"name": "a person"}}})
    """
)


def test_input_nobody_answers_shows_in_the_result_and_is_answered_from_another_process(fleet: Fleet) -> None:
    mcp = app_of(fleet).mcp
    result = mcp.call.delay(fleet.served.url, "ask", {"n": 7})
    state_becomes(result, "INPUT_REQUIRED")
    meta: dict[str, Any] = result.info
    (key,) = meta["inputRequests"]
    assert re.fullmatch(r"[0-9a-f]{16}", key)
    assert "…" in meta["task"]
    request = meta["inputRequests"][key]
    assert request["method"] == "elicitation/create"
    answer = subprocess.run(
        [sys.executable, "-c", ANSWER, result.id, key],
        env={**fleet.env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert answer.returncode == 0, answer.stderr
    assert result.get(timeout=120)["structuredContent"] == {"n": 7, "name": "a person"}
    assert fleet.served.updates["name-7"] == 1


def test_a_worker_killed_mid_follow_loses_no_result_and_calls_no_tool_twice(fleet: Fleet) -> None:
    mcp = app_of(fleet).mcp
    served = fleet.served
    numbers = range(10, 18)
    listens = served.listens
    results = [mcp.call.delay(served.url, "work", {"n": n, "seconds": 5.0}) for n in numbers]
    for result in results:  # every call started and its task id recorded: each is followed now
        state_becomes(result, "STARTED")
    served.until(lambda: served.listens > listens)  # the workers' wakers follow them on streams
    # Killed mid-follow: the calls its wakers followed are taken on by their fallback checks (a
    # check Redis handed to the victim's BRPOP in the instant of the kill, or one it had reserved,
    # is lost or late: the survivor's sweeper starts each quiet chain again, under the store's
    # leases), so nothing waits on the broker.
    victim = fleet.workers.pop(0)
    victim.kill()
    fleet.workers.append(Worker("c", fleet.env))  # the fleet is whole again for later tests
    for n, result in zip(numbers, results, strict=True):
        assert result.get(timeout=60)["structuredContent"] == {"n": n}
    assert [served.calls[("work", n)] for n in numbers] == [1] * len(numbers)


def test_no_full_task_id_reaches_the_workers_logs_or_the_backend(fleet: Fleet) -> None:
    mcp = app_of(fleet).mcp
    served = fleet.served
    results = [mcp.call.delay(served.url, tool, {"n": 20 + i}) for i, tool in enumerate(["boom", "ask"])]
    results.append(mcp.call.delay(served.url, "work", {"n": 22, "seconds": 0.5}))
    results[0].get(timeout=120, propagate=False)
    results[2].get(timeout=120)
    state_becomes(results[1], "INPUT_REQUIRED")
    results[1].revoke()
    with pytest.raises(TaskRevokedError):
        results[1].get(timeout=120)
    logged = "".join(line for worker in fleet.workers for line in worker.lines)
    assert "mcp_tasks.call[" in logged
    assert served.task_ids and not [t for t in served.task_ids if t in logged]
    with redis.Redis.from_url(f"{fleet.redis.url}/1") as backend:
        kept = b"".join(backend.get(key) or b"" for key in backend.scan_iter("celery-task-meta-*"))
    assert b'"status": "FAILURE"' in kept
    assert not [t for t in served.task_ids if t.encode() in kept]


def test_a_backend_failing_as_a_check_shows_its_state_leaves_it_to_the_next_check(fleet: Fleet, tmp_path: Path) -> None:
    # The flaky worker's backend fails the write of STARTED once; that run's error must not
    # become the result (a FAILURE): it sends its next check all the same, which shows it.
    mcp = app_of(fleet).mcp
    served = fleet.served
    marker = tmp_path / "failed-once"
    flaky = Worker("flaky", {**fleet.env, "MCP_CELERY_FLAKY": str(marker)}, queue="flaky")
    try:
        result = mcp.call.apply_async((served.url, "work", {"n": 40, "seconds": 1.0}), queue="flaky")
        assert result.get(timeout=120)["structuredContent"] == {"n": 40}
    finally:
        flaky.close()
    assert marker.exists()  # the backend did fail
    assert served.calls[("work", 40)] == 1
    assert len([line for line in flaky.lines if "could not show its state" in line]) == 1


@pytest.fixture(scope="module")
def peer_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An independent Tasks server, fastmcp-tasks over HTTP (tests/interop: from .venv-peers)."""
    server = PeerHttpServer(tmp_path_factory.mktemp("peer") / "fastmcp-http.log")
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.mark.interop  # like the other peer tests: CI runs it where `.ci/peers.py install` put the peer
def test_a_celery_call_to_the_peer_returns_its_result_and_a_revoke_cancels_it(fleet: Fleet, peer_url: str) -> None:
    mcp = app_of(fleet).mcp
    done = mcp.call.delay(peer_url, "slow", {"seconds": 0.5, "label": "celery"})
    result = done.get(timeout=120)
    assert result["content"] == [{"type": "text", "text": "celery done after 0.5s"}]
    assert done.state == "SUCCESS"

    running = mcp.call.delay(peer_url, "long", {"seconds": 600})
    state_becomes(running, "STARTED")
    task_id = task_id_of(fleet, peer_url, running)
    running.revoke()
    with pytest.raises(TaskRevokedError):
        running.get(timeout=120)
    assert running.state == "REVOKED"
    with mt.Client.http(peer_url, timeout=30.0) as client:
        task_id = task_id
        eventually(lambda: mt.get_task(client, task_id).status is mt.TaskState.CANCELLED)


def test_a_fallback_check_due_after_the_result_was_heard_ends_without_reading_the_task(fleet: Fleet) -> None:
    # The worker process heard the end and stored the result; the call's one check, due 3 s after
    # its start (worker_app's fallback), finds its token gone and the result stored: it reads
    # nothing and stores nothing again.
    mcp = app_of(fleet).mcp
    served = fleet.served
    result = mcp.call.delay(served.url, "work", {"n": 30, "seconds": 0.2})
    assert result.get(timeout=120)["structuredContent"] == {"n": 30}
    task_id = task_id_of(fleet, served.url, result)

    def runs() -> list[str]:
        ends = (f"[{result.id}] ignored", f"[{result.id}] succeeded")
        return [line for w in fleet.workers for line in w.lines if any(end in line for end in ends)]

    eventually(lambda: len(runs()) == 2, timeout=60, message="the fallback check ran")  # the start's, the check's
    assert all("ignored" in line for line in runs()), runs()
    assert served.gets_of[task_id] <= 1
    assert result.state == "SUCCESS"
