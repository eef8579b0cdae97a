"""A store that fails every renewal for a while (an outage) is said twice, not once a renewal:
a warning when renewals start failing, one with the count when they succeed again, the
failures in between at debug level. Before, each failed renewal (one a second or more, for as
long as the outage lasted) was a warning of its own.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

import mcp_tasks as mt
from mcp_tasks._store import Renewer, new_holder

TTL = 3.0
FAILED = 3


class Flaky(mt.SqliteTaskStore):
    """Its renewals fail while `down` is set; says each outcome as it comes."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.down = threading.Event()
        self.failed = 0
        self.changed = threading.Condition()
        self.kept = False

    def renew(self, task_id: str, holder: str, ttl: float) -> bool:
        with self.changed:
            if self.down.is_set():
                self.failed += 1
                self.changed.notify_all()
                raise mt.StoreError("the test's store is down")
        kept = super().renew(task_id, holder, ttl)
        with self.changed:
            self.kept = kept
            self.changed.notify_all()
        return kept


def test_an_outage_of_renewals_is_said_when_it_begins_and_when_it_ends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_tasks")
    store = Flaky(tmp_path / "tasks.db")
    holder = new_holder()
    assert store.acquire("task-1", holder, TTL)
    renewer = Renewer()
    try:
        with store.changed:
            store.down.set()
            renewer.hold(store, "task-1", holder, TTL, taken_at=time.monotonic() - TTL / 3)  # due at once
            assert store.changed.wait_for(lambda: store.failed >= FAILED, 60)
            store.down.clear()
            failed = store.failed
            assert store.changed.wait_for(lambda: store.kept, 60)
    finally:
        renewer.close()
        renewer.join()
        store.close()
    said = [r for r in caplog.records if "renew" in r.getMessage() and r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in said][1:] == [
        f"leases renewed again in {store!r}, after {failed} failed renewal(s)"
    ]
    assert len(said) == 2, [r.getMessage() for r in said]  # main: a warning per failed renewal, none at the end
    quiet = [r for r in caplog.records if "could not renew" in r.getMessage() and r.levelno == logging.DEBUG]
    assert len(quiet) == failed - 1
