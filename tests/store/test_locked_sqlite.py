"""A SQLite store locked by another connection is bounded as a silent PostgreSQL is: a closing
client hurries its store calls, so `close()` does not wait out the release's patience (5 s) in
the futures driver, and leaves no thread behind.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import mcp_tasks as mt
from mcp_tasks.server import serve_http
from tests.conftest import eventually, mcp_threads
from tests.fixtures.servers import make_server

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def client_and_path(tmp_path: Path) -> Iterator[tuple[mt.Client, Path]]:
    server = make_server()
    http = serve_http(server)
    path = tmp_path / "tasks.sqlite3"
    store = mt.SqliteTaskStore(path)
    client = mt.Client.http(http.url, store=store)
    try:
        yield client, path
    finally:
        client.close()
        http.close()
        server.close()


def test_close_ends_the_futures_driver_on_a_locked_database(client_and_path: tuple[mt.Client, Path]) -> None:
    client, path = client_and_path
    future = mt.submit(client, "slow_compute", {"block": True, "gate": "never"})
    lock = sqlite3.connect(path, isolation_level=None)
    try:
        leased = "SELECT count(*) FROM leases WHERE task_id = ?"
        eventually(lambda: lock.execute(leased, (future.task_id,)).fetchone()[0] == 1, 30, "the lease taken")
        lock.execute("BEGIN IMMEDIATE")  # every write of the store waits for this one
        started = time.monotonic()
        client.close()
        held = lock.in_transaction
        with pytest.raises(mt.TransportError):
            future.result(timeout=30)
        left = [name for name in mcp_threads() if "futures" in name or "renewer" in name]
        assert held and left == [], f"close() took {time.monotonic() - started:.1f} s"
    finally:
        lock.close()
