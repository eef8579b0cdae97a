"""Answers left by `McpTasks.answer` while checks move them on, with a real redis-server as the
result backend (no worker: the check's move is run here, as a worker's run would): the state and
the requests it shows are read at once, and an answer left while a check moves others is kept.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from celery import Celery
from celery.backends.redis import RedisBackend

import mcp_tasks as mt
from mcp_tasks._store import TaskRef, open_store
from mcp_tasks.celery import McpTasks
from mcp_tasks.celery._inputs import input_meta, opaque_key
from mcp_tasks.celery._run import move_answers
from tests.celery.conftest import REDIS, Redis
from tests.celery.worker_app import configure

pytestmark = pytest.mark.xdist_group("celery")

ACCEPT = {"action": "accept", "content": {"name": "a person"}}
ASKED = {"method": "elicitation/create", "params": {"mode": "form", "message": "Who?", "requestedSchema": {}}}
TASK_ID = "task-" + "x" * 40


class MovesOn(RedisBackend):  # type: ignore[misc]
    """A backend where a check moves the state on right after each read of it (STARTED: the
    task took its answers from another process and works again).
    """

    def get_task_meta(self, task_id: str, cache: bool = True) -> Any:
        meta = super().get_task_meta(task_id, cache=False)
        self.store_result(task_id, {"task": "task…xxxx"}, "STARTED")
        return meta


class AnsweredMeanwhile(RedisBackend):  # type: ignore[misc]
    """A backend where, as a check reads the first answer left, another person answers the
    other request (`meanwhile`: the call that does it, set by the test).
    """

    meanwhile: Any = None

    def get(self, key: Any) -> Any:
        value = super().get(key)
        if value is not None and str(key).startswith("mcp-tasks-answers-") and AnsweredMeanwhile.meanwhile:
            answer, AnsweredMeanwhile.meanwhile = AnsweredMeanwhile.meanwhile, None
            answer()
        return value


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if REDIS is None:
        pytest.skip("redis-server is not installed (python3 .ci/dev.py setup installs it on Debian)")
    server = Redis(tmp_path_factory.mktemp("answers-redis"))
    try:
        yield server.url
    finally:
        server.close()


def mcp_on(redis_url: str, backend: type[RedisBackend], store: Path) -> McpTasks:
    app = Celery("answers-" + uuid.uuid4().hex[:6], broker=f"{redis_url}/0")
    app.conf.result_backend = f"tests.celery.test_answers:{backend.__name__}+{redis_url}/1"
    configure(app)
    return McpTasks(app, store=str(store))


def asking(*keys: str) -> mt.Status:
    return mt.Status(task_id=TASK_ID, status=mt.TaskState.INPUT_REQUIRED, input_requests=dict.fromkeys(keys, ASKED))


def test_answer_reads_the_state_and_the_requests_it_shows_at_once(redis_url: str, tmp_path: Path) -> None:
    # Two reads (the state, then its requests) fail when a check moves the state on between them.
    mcp = mcp_on(redis_url, MovesOn, tmp_path / "s.sqlite3")
    celery_id, status = str(uuid.uuid4()), asking("a")
    mcp.app.backend.store_result(celery_id, input_meta(celery_id, status), "INPUT_REQUIRED")
    mcp.answer(celery_id, {opaque_key(celery_id, "a"): ACCEPT})  # shown when read: taken
    with pytest.raises(ValueError, match="does not show input"):
        mcp.answer(celery_id, {opaque_key(celery_id, "a"): ACCEPT})  # the state moved on since


def test_an_answer_left_while_a_check_moves_another_is_kept(redis_url: str, tmp_path: Path) -> None:
    mcp = mcp_on(redis_url, AnsweredMeanwhile, tmp_path / "s.sqlite3")
    store = open_store(tmp_path / "s.sqlite3")
    try:
        store.record(TaskRef(endpoint="http://127.0.0.1:1/mcp", task_id=TASK_ID, tool="form"))
        celery_id, status = str(uuid.uuid4()), asking("a", "b")
        mcp.app.backend.store_result(celery_id, input_meta(celery_id, status), "INPUT_REQUIRED")
        mcp.answer(celery_id, {opaque_key(celery_id, "a"): ACCEPT})
        AnsweredMeanwhile.meanwhile = lambda: mcp.answer(celery_id, {opaque_key(celery_id, "b"): ACCEPT})
        task = SimpleNamespace(backend=mcp.app.backend, request=SimpleNamespace(id=celery_id))
        assert move_answers(task, store, status)
        assert AnsweredMeanwhile.meanwhile is None  # b was answered as the check moved a
        move_answers(task, store, status)  # the next check
        assert store.unacknowledged(TASK_ID) == {"a": ACCEPT, "b": ACCEPT}
    finally:
        store.close()
