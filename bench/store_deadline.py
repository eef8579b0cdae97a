"""How far past its deadline a wait ends on a PostgreSQL that stops answering (its processes
stopped with SIGSTOP, as a frozen machine or a partition leaves it), and how long `close()` then
takes. A cluster of its own (tests/pg.py: needs PostgreSQL's binaries). Not a test: per case it
prints p50, p95 and max over the runs.

- ``wait``: a 1 s `wait_task` on a task whose store is frozen before the wait begins;
- ``lease``: a 1 s `wait_task` whose lease was taken before the freeze (its renewals and its
  release are cut on the client's clock), the overshoot past its deadline;
- ``close``: `client.close()` under a wait holding its lease, the store frozen.

    python bench/store_deadline.py [--runs 10]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcp_tasks as mt
from mcp_tasks.server import serve_http
from tests.fixtures.servers import make_server
from tests.pg import Cluster, running_cluster

FAILSAFE = 60.0


def pids(cluster: Cluster) -> list[int]:
    postmaster = int((cluster.folder / "data" / "postmaster.pid").read_text().split()[0])
    children = subprocess.run(["ps", "--ppid", str(postmaster), "-o", "pid="], capture_output=True, text=True)
    return [postmaster, *(int(pid) for pid in children.stdout.split())]


def send(frozen: list[int], sig: signal.Signals) -> None:
    for pid in frozen:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def leased(url: str, task_id: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        end = time.monotonic() + FAILSAFE
        while conn.execute("SELECT 1 FROM mcp_tasks.leases WHERE task_id = %s", (task_id,)).fetchone() is None:
            if time.monotonic() > end:
                raise SystemExit("the wait never took its lease")
            time.sleep(0.005)


def one(cluster: Cluster, case: str) -> float:
    server = make_server()
    http = serve_http(server)
    url = cluster.url(cluster.new_database())
    store = mt.PostgresTaskStore(url, lease_ttl=0.6)
    client = mt.Client.http(http.url, store=store)
    frozen: list[int] = []
    try:
        task = mt.call_tool(client, "slow_compute", {"block": True})
        assert isinstance(task, mt.Status)
        ended: list[float] = []
        timeout = None if case == "close" else 1.0
        started = time.monotonic()

        def wait() -> None:
            try:
                mt.wait_task(client, task, timeout=timeout)
            except (mt.TaskTimeout, mt.TransportError):
                pass
            ended.append(time.monotonic())

        if case != "wait":
            thread = threading.Thread(target=wait, daemon=True)
            thread.start()
            leased(url, task.task_id)
            frozen = pids(cluster)
            send(frozen, signal.SIGSTOP)
            if case == "close":
                start = time.monotonic()
                client.close()
                return time.monotonic() - start
            thread.join(FAILSAFE)
            return ended[0] - (started + 1.0)
        frozen = pids(cluster)
        send(frozen, signal.SIGSTOP)
        started = time.monotonic()
        wait()
        return ended[0] - (started + 1.0)
    finally:
        send(frozen, signal.SIGCONT)
        client.close()
        store.close()
        http.close()
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with running_cluster() as cluster:
        for case, what in (("wait", "overshoot"), ("lease", "overshoot"), ("close", "close()")):
            times = sorted(one(cluster, case) for _ in range(args.runs))
            p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
            print(
                f"{case:6} {what:10} p50 {statistics.median(times) * 1000:7.1f} ms"
                f"  p95 {p95 * 1000:7.1f} ms  max {times[-1] * 1000:7.1f} ms"
            )


if __name__ == "__main__":
    main()
