"""A for-ever worker and a task whose server cannot be reached: the task is failed once, then
rests (`Rests`: 5 s, doubling) before it is tried again, said once in the log. Before, every
claim (three a second with these leases) took it again, failed it again and delivered the
failure again, in a tight loop.
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest

import mcp_tasks as mt

TTL = 1.0  # a claim every third of a second


def _closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        return int(listener.getsockname()[1])


def test_a_task_whose_server_is_unreachable_rests_between_tries(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_tasks")
    endpoint = f"http://127.0.0.1:{_closed_port()}/mcp"
    with mt.SqliteTaskStore(tmp_path / "tasks.db", lease_ttl=TTL) as store:
        store.record(mt.TaskRef(endpoint, "task-unreachable", tool="slow"))
        failures = [future.task_id for future in mt.adopt(store, forever=True, timeout=3, poll_interval=0.02)]
    assert failures == ["task-unreachable"]  # main: failed again at every claim (5 times in a trial)
    said = [r for r in caplog.records if "cannot be reached" in r.getMessage() and r.levelno >= logging.WARNING]
    assert len(said) == 1
