"""A PostgreSQL that stops answering (a partition, a frozen machine: here its processes stopped
with SIGSTOP) bounds nothing: no ``statement_timeout`` applies while the server runs nothing, and
on one host the kernel still acknowledges at the TCP level. Every store call is bounded on the
client's clock: a wait ends at its deadline, `close()` returns, the renewer stops, all while the
database is still frozen. The cluster frozen is this module's own, never the session's.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import mcp_tasks as mt
from mcp_tasks.server import HttpServer, Server, serve_http
from tests.conftest import Background, mcp_threads
from tests.fixtures.servers import make_server
from tests.pg import Cluster, running_cluster

pytestmark = pytest.mark.timeout(60)  # the hang guard: the old code blocked until the server woke


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[Cluster]:
    with running_cluster() as cluster:
        yield cluster


def server_pids(cluster: Cluster) -> list[int]:
    """The postmaster (first line of its postmaster.pid) and its children."""
    postmaster = int((cluster.folder / "data" / "postmaster.pid").read_text().split()[0])
    children = subprocess.run(["ps", "--ppid", str(postmaster), "-o", "pid="], capture_output=True, text=True)
    return [postmaster, *(int(pid) for pid in children.stdout.split())]


class Freeze:
    """The cluster stopped (SIGSTOP) inside; `held` is True until it is let go (SIGCONT)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.held = False
        self._pids: list[int] = []

    @contextmanager
    def __call__(self) -> Iterator[None]:
        self._pids = server_pids(self.cluster)
        try:
            for pid in self._pids:
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:
                    pass  # a backend whose connection just ended
            self.held = True
            yield
        finally:
            self.held = False
            for pid in self._pids:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass


Setup = tuple[mt.Client, str, Freeze]


@pytest.fixture
def setup(own_cluster: Cluster) -> Iterator[Setup]:
    """A client over HTTP with a store in a fresh database of the module's cluster (short leases:
    renewed every 0.2 s), that database's URL, and the freeze of the cluster.
    """
    server: Server = make_server()
    http: HttpServer = serve_http(server)
    url = own_cluster.url(own_cluster.new_database())
    store = mt.PostgresTaskStore(url, lease_ttl=0.6)
    client = mt.Client.http(http.url, store=store)
    try:
        yield client, url, Freeze(own_cluster)
    finally:
        client.close()
        store.close()
        http.close()
        server.close()


def lease_taken(cluster_url: str, task_id: str) -> threading.Event:
    """An event set once the task's lease is in the store (read by a connection of the test's)."""
    import psycopg

    taken = threading.Event()

    def look() -> None:
        with psycopg.connect(cluster_url, autocommit=True) as conn:
            while not taken.is_set():
                row = conn.execute("SELECT 1 FROM mcp_tasks.leases WHERE task_id = %s", (task_id,)).fetchone()
                if row is not None:
                    taken.set()

    threading.Thread(target=look, daemon=True).start()
    return taken


def test_a_wait_on_a_frozen_database_ends_at_its_deadline(setup: Setup) -> None:
    client, _, freeze = setup
    task = mt.call_tool(client, "slow_compute", {"block": True})
    assert isinstance(task, mt.Status)
    with freeze():
        with pytest.raises(mt.TaskTimeout):
            mt.wait_task(client, task, timeout=1)
        assert freeze.held  # it returned while the database was still frozen
        client.close()
        assert freeze.held
        assert [name for name in mcp_threads() if "renewer" in name] == []


def test_a_wait_holding_its_lease_ends_at_its_deadline_and_close_returns(setup: Setup) -> None:
    """The lease taken before the freeze: its renewals and its release are cut on the client's clock."""
    client, url, freeze = setup
    task = mt.call_tool(client, "slow_compute", {"block": True})
    assert isinstance(task, mt.Status)
    taken = lease_taken(url, task.task_id)
    waiting = Background(lambda: mt.wait_task(client, task, timeout=8))  # its lease taken within 2 s, even loaded
    assert taken.wait(30)
    with freeze():
        with pytest.raises(mt.TaskTimeout):
            waiting.result()
        assert freeze.held
        client.close()
        assert freeze.held  # close() returned while the database was still frozen
        assert [name for name in mcp_threads() if "renewer" in name] == []


def test_close_ends_a_wait_blocked_on_a_frozen_database(setup: Setup) -> None:
    client, url, freeze = setup
    task = mt.call_tool(client, "slow_compute", {"block": True})
    assert isinstance(task, mt.Status)
    taken = lease_taken(url, task.task_id)
    waiting = Background(lambda: mt.wait_task(client, task, timeout=None))
    assert taken.wait(30)
    with freeze():
        client.close()
        assert freeze.held
        with pytest.raises(mt.TransportError):  # the client's closed error
            waiting.result()
        assert freeze.held
        assert [name for name in mcp_threads() if "renewer" in name] == []


def test_a_store_call_with_no_caller_deadline_is_cut_at_the_busy_timeout(own_cluster: Cluster) -> None:
    with mt.PostgresTaskStore(own_cluster.url(own_cluster.new_database()), busy_timeout=1) as store:
        assert store.get("a-task") is None  # a connection in the pool: the call below gets it at once
        freeze = Freeze(own_cluster)
        with freeze():
            with pytest.raises(mt.StoreError, match="did not answer in time"):
                store.get("a-task")
            assert freeze.held
        assert store.get("a-task") is None  # the cut connection was not pooled dirty


def test_close_ends_the_futures_driver_on_a_frozen_database(setup: Setup) -> None:
    """The driver's thread frees its waits' leases as it ends: hurried by close(), not 5 s each."""
    client, url, freeze = setup
    future = mt.submit(client, "slow_compute", {"block": True, "gate": "never"})
    assert future.task_id is not None
    assert lease_taken(url, future.task_id).wait(30)
    with freeze():
        client.close()
        assert freeze.held  # close() returned while the database was still frozen
        with pytest.raises(mt.TransportError):
            future.result(timeout=30)
        left = [name for name in mcp_threads() if "futures" in name or "renewer" in name]
        assert left == []  # the driver and the renewer were joined, not left behind


def test_a_piped_call_cut_at_its_deadline_leaves_psycopg_nothing_to_warn_about(
    own_cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """A call in pipeline mode (a call's intent) cut at its deadline: the caller gets the one
    `StoreError`, and psycopg no WARNING that it could not end the pipeline of the connection cut.
    """
    with mt.PostgresTaskStore(own_cluster.url(own_cluster.new_database()), busy_timeout=1) as store:
        assert store.get("a-task") is None  # a connection in the pool: the call below gets it at once
        freeze = Freeze(own_cluster)
        with freeze(), caplog.at_level(logging.DEBUG):
            with pytest.raises(mt.StoreError, match="did not answer in time"):
                store.record_intent(mt.Intent("direct:x", "a-key", "greet", "digest"))
            assert freeze.held
        said = [record.getMessage() for record in caplog.records if record.name.startswith("psycopg")]
        assert [text for text in said if "Pipeline [BAD]" in text or "discarding closed connection" in text] == []
        assert store.unrecorded_intents() == []  # nothing was recorded, and the pool works
