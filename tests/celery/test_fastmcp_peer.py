"""A Celery call against an independent Tasks server, fastmcp-tasks (tests/interop/fastmcp_server.py,
run from .venv-peers): its result arrives through Celery, and a revoke cancels the task on it.
Marked `interop` like the other peer tests: CI runs it where `.ci/peers.py install` put the peer.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import pytest
from celery.exceptions import TaskRevokedError

import mcp_tasks as mt
from mcp_tasks._store import open_store
from tests.celery.conftest import Fleet
from tests.celery.test_celery import state_becomes
from tests.conftest import eventually
from tests.interop.conftest import PeerHttpServer

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("celery")]


@pytest.fixture(scope="module")
def peer_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One fastmcp-tasks server over HTTP for the module."""
    server = PeerHttpServer(tmp_path_factory.mktemp("peer") / "fastmcp-http.log")
    try:
        yield server.start()
    finally:
        server.stop()


def test_a_celery_call_to_the_peer_returns_its_result_and_a_revoke_cancels_it(fleet: Fleet, peer_url: str) -> None:
    mcp = importlib.import_module("tests.celery.worker_app").mcp
    done = mcp.call.delay(peer_url, "slow", {"seconds": 0.5, "label": "celery"})
    result = done.get(timeout=120)
    assert result["content"] == [{"type": "text", "text": "celery done after 0.5s"}]
    assert done.state == "SUCCESS"

    running = mcp.call.delay(peer_url, "long", {"seconds": 600})
    state_becomes(running, "STARTED")
    store = open_store(fleet.env["MCP_CELERY_STORE"])
    try:
        intent = store.get_intent(peer_url, running.id)
    finally:
        store.close()
    assert intent is not None and intent.task_id is not None
    running.revoke()
    with pytest.raises(TaskRevokedError):
        running.get(timeout=120)
    assert running.state == "REVOKED"
    with mt.Client.http(peer_url, timeout=30.0) as client:
        task_id = intent.task_id
        eventually(lambda: mt.get_task(client, task_id).status is mt.TaskState.CANCELLED)
