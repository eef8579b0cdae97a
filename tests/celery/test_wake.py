"""Calls followed on a listen stream by their worker process (`mcp_tasks.celery._waker`), with
real parts (a redis-server, prefork `celery worker` processes, the reference server over HTTP):
each task of a wave is read at most once and its one fallback check never runs, and a revoke
cancels a followed call long before that check is due.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import redis
from celery.exceptions import TaskRevokedError

from mcp_tasks._store import open_store
from tests.celery.conftest import REDIS, Redis, Served, Worker, state_becomes

# Its own Redis and workers (another app: tests.celery.wake_app), on one xdist worker.
pytestmark = pytest.mark.xdist_group("celery-wake")

APP = "tests.celery.wake_app"


class WakeFleet:
    """Redis, the served tools, and two workers of the wake app."""

    def __init__(self, where: Path) -> None:
        self.redis = Redis(where)
        self.served = Served()
        self.env = {"MCP_CELERY_REDIS": self.redis.url, "MCP_CELERY_STORE": str(where / "tasks.sqlite3")}
        open_store(self.env["MCP_CELERY_STORE"]).close()
        self.workers: list[Worker] = []
        try:
            self.workers = [Worker(name, self.env, app=APP) for name in ("wake-a", "wake-b")]
        except BaseException:
            self.close()
            raise

    def app(self, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
        """The wake app as a client of this fleet's broker and backend."""
        import importlib

        for name, value in self.env.items():
            monkeypatch.setenv(name, value)
        return importlib.reload(importlib.import_module(APP))

    def lines(self) -> list[str]:
        return [line for worker in self.workers for line in worker.lines]

    def lpushes(self) -> int:
        """Messages sent to the broker's queues so far (Redis counts its LPUSH calls)."""
        with redis.Redis.from_url(f"{self.redis.url}/0") as broker:
            stats = broker.info("commandstats")
        return int(stats.get("cmdstat_lpush", {}).get("calls", 0))

    def close(self) -> None:
        for worker in self.workers:
            worker.close()
        self.served.close()
        self.redis.close()


@pytest.fixture(scope="module")
def wake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WakeFleet]:
    if REDIS is None:
        pytest.skip("redis-server is not installed (python3 .ci/dev.py setup installs it on Debian)")
    where = tmp_path_factory.mktemp("celery-wake")
    fleet = WakeFleet(where)
    try:
        yield fleet
    finally:
        fleet.close()
        shutil.rmtree(where, ignore_errors=True)


def _count(lines: list[str], celery_id: str, what: str) -> int:
    return len([line for line in lines if re.search(rf"\[{re.escape(celery_id)}\] {what}", line)])


def test_a_wave_of_calls_reads_each_task_at_most_once_and_runs_no_check(
    wake: WakeFleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    mcp = wake.app(monkeypatch).mcp
    served = wake.served
    pushed = wake.lpushes()
    results = [mcp.call.delay(served.url, "work", {"n": n, "seconds": 1.0}) for n in range(8)]
    assert [r.get(timeout=120)["structuredContent"] for r in results] == [{"n": n} for n in range(8)]
    assert all(served.calls[("work", n)] == 1 for n in range(8))
    # Each task read at most once (the stream's catch-up), however long it ran against the checks' cadence.
    assert max(served.gets_of.values()) <= 1, dict(served.gets_of)
    # Two messages a call: its start and its fallback check, which is held, never run.
    assert wake.lpushes() - pushed == 2 * len(results)
    lines = wake.lines()
    for result in results:
        assert _count(lines, result.id, "received") == 2
        assert _count(lines, result.id, "ignored") == 1  # the start's run; the check's never came


def test_a_revoke_cancels_a_followed_call_before_its_fallback_check_is_due(
    wake: WakeFleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    mcp = wake.app(monkeypatch).mcp
    served = wake.served
    listens = served.listens
    result = mcp.call.delay(served.url, "work", {"n": 20, "seconds": 600})
    state_becomes(result, "STARTED")  # shown as the start run sent its fallback check
    served.until(lambda: served.listens > listens)  # its worker process follows it on a stream
    gets = served.gets
    result.revoke()
    served.until(lambda: 20 in served.cancelled)  # a sweeper sent tasks/cancel
    with pytest.raises(TaskRevokedError):
        result.get(timeout=120)
    assert result.state == "REVOKED"
    # No check ran meanwhile (its only one is due in wake_app.FALLBACK seconds): the cancel came
    # from the sweep, the end from the stream.
    assert served.gets - gets <= 1
    assert _count(wake.lines(), result.id, "ignored") == 1
