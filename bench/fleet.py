"""A fleet (issue 26): N worker processes x M tasks of a few seconds each, through one task store,
on the reference server (a process of its own, over HTTP). Not a test: it prints a table.

    python bench/fleet.py [--workers 4] [--tasks 2500] [--seconds 3] [--stores none,sqlite,postgres]
                          [--apis wait_all,submit] [--postgres CONNINFO] [--lease 3] [--json PATH]

Each worker starts its M tasks on a client with the store and waits for them, in one of two
ways (`--apis`): `wait_all`, all started, then waited for together (the shared stream; the tasks
that ended meanwhile are read once each); `submit`, a future per task, followed from its start.
Every wait takes its task's lease, renews it, records its end and frees it. Rows, one per way and
store:

  none      the same workers without a store (the baseline)
  sqlite    one SQLite file on this machine
  postgres  PostgreSQL (with --postgres CONNINFO, or a cluster this script starts in a temporary
            folder when initdb/pg_ctl are on the PATH; needs mcp_tasks[postgres])

Columns: `late`, how long after the ideal the last task is known finished (the ideal: the moment
the last task finished on the server, as its tool reports on the monotonic clock, one clock for
every process of this machine); the store's CPU per task in the workers (ms, the thread CPU spent
inside store calls: for SQLite that is all of it); store round trips per task (calls, by method
in the last column); wall over the store-less row.

Then the adoption: a worker holding M tasks on a lease of `--lease` seconds is SIGKILLed; it
looks like a process of another machine (its holder names another host), so its leases free only
when their time runs out. An adopting worker (`mt.adopt` in a loop) must follow them within the
lease's time + 1 s of the kill: `adopted` is the time from the kill to the first status read of
the last task it took.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import mcp_tasks as mt  # noqa: E402
from bench._results import Results  # noqa: E402
from mcp_tasks.server import Server, ToolContext  # noqa: E402

POLL_INTERVAL = 0.5


def make_server() -> Server:
    """The benchmark's server: `nap` sleeps, then reports when it finished."""
    server = Server("fleet", poll_interval=POLL_INTERVAL, task_ttl=3600, max_jobs=50_000, max_tasks=100_000)

    @server.tool(task="optional")
    def nap(ctx: ToolContext, seconds: float) -> dict[str, Any]:
        ctx.sleep(seconds)
        return {"done_at": time.monotonic()}

    return server


# -- a store that counts ---------------------------------------------------------------------------


class Counting:
    """A store's proxy that counts each call (a round trip) and the thread CPU spent in it."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.calls: Counter[str] = Counter()
        self.cpu = 0.0
        self._lock = threading.Lock()
        self.lease_ttl = getattr(store, "lease_ttl", 15.0)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)
        if not callable(method):
            return method

        def counted(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return method(*args, **kwargs)
            finally:
                spent = time.thread_time() - started
                with self._lock:
                    self.calls[name] += 1
                    self.cpu += spent

        return counted


def open_location(location: str, lease: float | None = None) -> Any:
    """The store at `location` ("none": no store)."""
    if location == "none":
        return None
    options = {} if lease is None else {"lease_ttl": lease}
    opener: Callable[..., Any] = getattr(mt, "open_store", None) or (lambda where, **o: mt.SqliteTaskStore(where, **o))
    return opener(location, **options)


# -- the workers -----------------------------------------------------------------------------------


def worker(url: str, location: str, tasks: int, seconds: float, api: str) -> None:
    """One worker process: start `tasks` naps and wait for them all, with `api` ("wait_all":
    start them all, then wait; "submit": a future each, followed from its start); print a JSON
    line.
    """
    inner = open_location(location)
    store = Counting(inner) if inner is not None else None
    with mt.Client.http(url, timeout=120, store=store) as client:
        if api == "submit":
            futures = [mt.submit(client, "nap", {"seconds": seconds}) for _ in range(tasks)]
            results = [future.result(timeout=900) for future in futures]
        else:
            made = [mt.call_tool(client, "nap", {"seconds": seconds}) for _ in range(tasks)]
            statuses = mt.wait_all(client, [t for t in made if isinstance(t, mt.Status)], timeout=900)
            results = [mt.outcome(status) for status in statuses]
        ended = time.monotonic()
    done_at = max(result["structuredContent"]["done_at"] for result in results)
    calls, cpu = (dict(store.calls), store.cpu) if store is not None else ({}, 0.0)
    row = {"ended": ended, "done_at": done_at, "calls": calls, "cpu": cpu}
    print(json.dumps(row), flush=True)


def victim(url: str, location: str, tasks: int, seconds: float, lease: float) -> None:
    """A worker of "another machine" that starts its tasks, says so once it waits, and is killed."""
    import mcp_tasks._store._holder as holder

    holder.machine_id = lambda: "another-host"  # type: ignore[assignment]
    store = open_location(location, lease)
    with mt.Client.http(url, timeout=120, store=store) as client:
        made = [mt.call_tool(client, "nap", {"seconds": seconds}) for _ in range(tasks)]
        print("waiting", flush=True)
        mt.wait_all(client, [t for t in made if isinstance(t, mt.Status)], timeout=900)


def adopter(location: str, wanted: int, lease: float) -> None:
    """An adopting worker: `mt.adopt` in a loop until it has followed `wanted` tasks; prints when
    it first read each (monotonic).
    """
    store = open_location(location, lease)
    first_read: dict[str, float] = {}

    def seen(status: mt.Status) -> None:
        first_read.setdefault(status.task_id, time.monotonic())

    followed = 0
    while followed < wanted:
        for future in mt.adopt(store, timeout=900, on_status=seen):
            followed += 1
            future.result()
        if followed < wanted:
            threading.Event().wait(0.1)  # a worker's pause between claims
    print(json.dumps({"last_first_read": max(first_read.values())}), flush=True)


# -- the runs --------------------------------------------------------------------------------------


def spawn(*argv: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, __file__, *argv], stdout=subprocess.PIPE, text=True, env=env)


@contextmanager
def served() -> Iterator[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_tasks.server", "bench.fleet:make_server", "--http", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert process.stdout is not None
    try:
        yield process.stdout.readline().strip()
    finally:
        process.terminate()
        process.wait(10)


def fleet_run(url: str, location: str, workers: int, tasks: int, seconds: float, api: str) -> dict[str, Any]:
    started = time.monotonic()
    processes = [spawn("--worker", url, location, str(tasks), str(seconds), api) for _ in range(workers)]
    rows = []
    for process in processes:
        out, _ = process.communicate()
        assert process.returncode == 0, f"a worker failed ({process.returncode})"
        rows.append(json.loads(out.strip().splitlines()[-1]))
    total = workers * tasks
    calls: Counter[str] = Counter()
    for row in rows:
        calls.update(row["calls"])
    ideal = max(r["done_at"] for r in rows)
    return {
        "late": max(r["ended"] for r in rows) - ideal,
        "wall": max(r["ended"] for r in rows) - started,
        "cpu_ms": 1000 * sum(r["cpu"] for r in rows) / total,
        "trips": sum(calls.values()) / total,
        "by_method": {k: round(v / total, 2) for k, v in sorted(calls.items())},
    }


def adoption_run(url: str, location: str, tasks: int, seconds: float, lease: float) -> dict[str, float]:
    doomed = spawn("--victim", url, location, str(tasks), str(seconds), str(lease))
    assert doomed.stdout is not None
    assert doomed.stdout.readline().strip() == "waiting"
    doomed.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    doomed.communicate()
    adopting = spawn("--adopter", location, str(tasks), str(lease))
    out, _ = adopting.communicate()
    assert adopting.returncode == 0, "the adopter failed"
    return {"adopted": json.loads(out.strip().splitlines()[-1])["last_first_read"] - killed, "goal": lease + 1}


@contextmanager
def postgres_cluster() -> Iterator[str | None]:
    """A throwaway PostgreSQL cluster (the tests' own: tests/pg.py), or None without its binaries."""
    from tests.pg import find_binary, running_cluster

    try:
        find_binary("initdb")
    except RuntimeError as exc:
        print(f"(no PostgreSQL: {exc})")
        yield None
        return
    with running_cluster() as cluster:
        yield cluster.url(cluster.new_database())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=2500)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--stores", default="none,sqlite,postgres")
    parser.add_argument("--apis", default="wait_all,submit", help="how workers wait: wait_all, submit, or both")
    parser.add_argument("--postgres", default=None, help="a PostgreSQL conninfo (default: a cluster of its own)")
    parser.add_argument("--lease", type=float, default=3.0, help="the lease of the killed worker's tasks (s)")
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--victim", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--adopter", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--json", metavar="PATH", help="also write the results there (bench/_results.py)")
    args = parser.parse_args()
    if args.worker:
        url, location, tasks, seconds, api = args.worker
        return worker(url, location, int(tasks), float(seconds), api)
    if args.victim:
        url, location, tasks, seconds, lease = args.victim
        return victim(url, location, int(tasks), float(seconds), float(lease))
    if args.adopter:
        location, wanted, lease = args.adopter
        return adopter(location, int(wanted), float(lease))
    stores = args.stores.split(",")
    sizes = {"workers": args.workers, "tasks": args.tasks, "seconds": args.seconds, "lease": args.lease}
    results = Results("fleet", args.json, {**sizes, "stores": args.stores, "apis": args.apis})
    print(f"{args.workers} workers x {args.tasks} tasks of {args.seconds:g} s; the server polls every {POLL_INTERVAL}s")
    heads = f"{'late s':>7} {'wall/none':>9} {'store cpu ms/task':>17} {'trips/task':>10}"
    print(f"{'api':8} {'store':9} {heads}  by method")
    with (
        tempfile.TemporaryDirectory() as folder,
        postgres_cluster() if ("postgres" in stores and args.postgres is None) else _given(args.postgres) as postgres,
    ):
        locations = {"none": "none", "sqlite": str(Path(folder) / "fleet.sqlite3"), "postgres": postgres}
        with served() as url:
            for api in args.apis.split(","):
                base = None
                for store in stores:
                    location = locations.get(store)
                    if location is None:
                        print(f"{api:8} {store:9} (skipped: no PostgreSQL)")
                        results.add(api=api, store=store, skipped="no PostgreSQL")
                        continue
                    if store == "sqlite":
                        location = str(Path(folder) / f"fleet-{api}.sqlite3")
                    row = fleet_run(url, location, args.workers, args.tasks, args.seconds, api)
                    base = base or (row if store == "none" else None)
                    walls = f"{row['wall'] / base['wall']:.2f}" if base else "-"
                    print(
                        f"{api:8} {store:9} {row['late']:7.2f} {walls:>9} {row['cpu_ms']:17.3f} "
                        f"{row['trips']:10.2f}  {row['by_method']}",
                        flush=True,
                    )
                    results.add(api=api, store=store, **row, wall_vs_none=row["wall"] / base["wall"] if base else None)
            for store in stores:
                location = locations.get(store)
                if store == "none" or location is None:
                    continue
                if store == "sqlite":
                    location = str(Path(folder) / "adopt.sqlite3")
                row = adoption_run(url, location, min(args.tasks, 500), args.seconds * 3, args.lease)
                said = f"followed {row['adopted']:.2f} s after the kill (goal: <= {row['goal']:.2f} s)"
                print(f"adoption on {store}: {said}")
                results.extra.setdefault("adoption", []).append({"store": store, **row})
    results.write()


@contextmanager
def _given(conninfo: str | None) -> Iterator[str | None]:
    yield conninfo


if __name__ == "__main__":
    main()
