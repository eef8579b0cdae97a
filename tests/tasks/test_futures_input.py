"""A 2025-era task's input under futures (issue 17): answered on a bounded worker, so the one
watcher thread goes on resolving the other futures while a person answers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._tasks._future import INPUT_WORKERS
from mcp_tasks._tasks._workers import Workers
from tests.conftest import mcp_threads
from tests.session.test_issue15_regressions import TRANSPORTS as LEGACY_TRANSPORTS
from tests.session.test_issue15_regressions import Legacy, accept_all, servers, text  # noqa: F401  (the fixture)


@pytest.mark.parametrize("transport", LEGACY_TRANSPORTS)
def test_another_future_resolves_while_a_person_answers_one(
    servers: Callable[..., Legacy],  # noqa: F811
    transport: str,
) -> None:
    legacy = servers(transport)
    client = legacy.client(timeout=10)
    asked = threading.Event()
    answer = threading.Event()

    def person(status: mt.Status) -> dict[str, Any]:
        asked.set()
        assert answer.wait(60), "the test never let the person answer"
        return accept_all(status)

    try:
        asking = mt.submit(client, "ask_task", input=person)
        assert asked.wait(30), "the input never reached the person"
        quick = mt.submit(client, "quick")
        assert text(quick.result(timeout=30)) == "quick done"  # while the person still answers
        assert not asking.done()
        workers = [name for name in mcp_threads() if "futures-input" in name]
        assert len(workers) == 1
    finally:
        answer.set()
    assert text(asking.result(timeout=30)) == "hello Ada (accept)"


def test_workers_are_bounded_and_run_every_job_in_order_of_arrival() -> None:
    workers = Workers("test-workers", 2)
    hold = threading.Event()
    started: list[int] = []
    done = threading.Semaphore(0)
    changed = threading.Condition()

    def job(n: int) -> Callable[[], None]:
        def run() -> None:
            with changed:
                started.append(n)
                changed.notify_all()
            hold.wait(30)
            done.release()

        return run

    try:
        for n in range(5):
            workers.run(job(n))
        with changed:
            assert changed.wait_for(lambda: len(started) == 2, 30)
        assert sorted(started) == [0, 1]  # two run; three wait their turn
        assert len([t for t in mcp_threads() if "test-workers" in t]) == 2
        hold.set()
        for _ in range(5):
            assert done.acquire(timeout=30)
        assert sorted(started) == list(range(5)) and started[2:] == [2, 3, 4]
    finally:
        hold.set()
        workers.close()
        workers.join(5)
    assert not [t for t in mcp_threads() if "test-workers" in t]
    with pytest.raises(mt.TransportError):
        workers.run(job(9))
    assert INPUT_WORKERS >= 1


@pytest.mark.parametrize("transport", LEGACY_TRANSPORTS)
def test_an_input_that_fails_fails_its_own_future_only(
    servers: Callable[..., Legacy],  # noqa: F811
    transport: str,
) -> None:
    legacy = servers(transport)
    client = legacy.client(timeout=10)

    def refuse(status: mt.Status) -> dict[str, Any]:
        raise ValueError("nobody may answer this")

    held = mt.submit(client, "hold")
    asking = mt.submit(client, "ask_task", input=refuse)
    with pytest.raises(ValueError, match="nobody may answer"):
        asking.result(timeout=30)
    assert not held.done()  # still followed
    client.call_tool("release")
    assert text(held.result(timeout=30)) == "held done"
