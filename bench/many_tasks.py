"""Many tasks at once (issue 17): N tasks of a few seconds on one client, the reference server in
a process of its own, over HTTP and stdio. Not a test: it prints a table.

    python bench/many_tasks.py [--sizes 100,1000,10000] [--seconds 2] [--transports http,stdio]
                               [--ways listen,poll,...] [--json PATH]

Ways compared, in one run:
  listen   mt.wait_all(client, tasks)               (listen=None: the shared stream)
  poll     mt.wait_all(client, tasks, listen=False) (the per-task poll schedule)
  threads  one thread per mt.await_task (polling)   (the way before issue 17: the baseline)
  tlisten  one thread per mt.await_task(listen=True) (a threaded WSGI backend's shape, issue 25:
           goal wall <= 1.1x and CPU per task <= 2x `threads`)
  futures  mt.submit for each, then future.result() (followed from creation on, by one thread)
  fastmcp  fastmcp-tasks' own async client, asyncio.gather over ToolTask.result(), against its own
           server (tests/interop/fastmcp_server.py; N <= 1,000; needs .venv-peers): its "late" is
           an upper bound (see bench/_fastmcp_many.py) and its CPU is that client's process

Columns: wall over the ideal (the ideal is the moment the last task finished on the server: the
tool reports time.monotonic(), one clock for every process on Linux), client CPU per task (ms),
the client CPU ratio and the wall ratio (from the start to the last result) against `threads`,
peak library threads (``mcp_tasks-*``), ``tasks/get``
per task, open connections at the peak (HTTP: TCP connections to the server, sampled from
/proc/net/tcp; stdio: the one pipe), the waits that failed (`errors`: a server overloaded by
thousands of polling threads resets connections and leaves requests unanswered), and the listen
streams the client opened (`streams`, merges included). The server
suggests polling every 500 ms. The machine may be shared: compare rows of one run, not runs.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import mcp_tasks as mt  # noqa: E402
from bench._results import Results  # noqa: E402
from mcp_tasks._tasks._watch import watch_of  # noqa: E402
from mcp_tasks.server import Server, ToolContext  # noqa: E402

POLL_INTERVAL = 0.5


def make_server() -> Server:
    """The benchmark's server: `nap` sleeps, then reports when it finished; `count` the reads."""
    server = Server("many-tasks", poll_interval=POLL_INTERVAL, task_ttl=3600, max_jobs=20_000, max_tasks=50_000)
    counts: dict[str, int] = {}

    def record(method: str, params: dict[str, Any]) -> None:
        counts[method] = counts.get(method, 0) + 1

    server.on_request = record

    @server.tool(task="optional")
    def nap(ctx: ToolContext, seconds: float) -> dict[str, Any]:
        ctx.sleep(seconds)
        return {"done_at": time.monotonic()}

    @server.tool()
    def count(ctx: ToolContext) -> dict[str, Any]:
        return dict(counts)

    return server


PEER_PYTHON = ROOT / ".venv-peers" / "bin" / "python"
PEER_SERVER = ROOT / "tests" / "interop" / "fastmcp_server.py"
PEER_MAX = 1000


def connections(port: int) -> int:
    """Established TCP connections to 127.0.0.1:`port` (both ends are on this machine)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as lines:
                next(lines)
                for line in lines:
                    fields = line.split()
                    if fields[3] == "01" and int(fields[2].rsplit(":", 1)[1], 16) == port:
                        count += 1
        except OSError:
            pass
    return count


class Peak:
    """Samples the library's threads every 10 ms (and the open connections to `port` every 0.2 s;
    the sampling's CPU counts in the client's)."""

    def __init__(self, port: int | None = None) -> None:
        self.peak = 0
        self.port = port
        self.connections = 0 if port is not None else 1
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        ticks = 0
        while not self._stop.wait(0.01):
            alive = sum(t.name.startswith("mcp_tasks-") for t in threading.enumerate())
            self.peak = max(self.peak, alive)
            ticks += 1
            if self.port is not None and ticks % 20 == 0:  # every 0.2 s: /proc/net/tcp costs CPU
                self.connections = max(self.connections, connections(self.port))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def threads_way(client: mt.Client, tasks: list[mt.Status], listen: bool = False) -> list[Any]:
    results: list[Any] = [None] * len(tasks)

    def one(i: int) -> None:
        try:
            results[i] = mt.await_task(client, tasks[i], timeout=600, listen=listen)
        except mt.McpError as exc:  # counted (the row's `errors`), not raised: an overloaded server
            results[i] = exc

    workers = [threading.Thread(target=one, args=(i,)) for i in range(len(tasks))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return results


def settled(get: Callable[[], Any]) -> Any:
    """`get()`, or the McpError it raised (counted in the row's `errors`)."""
    try:
        return get()
    except mt.McpError as exc:
        return exc


def futures_way(client: mt.Client, size: int, seconds: float) -> list[Any]:
    """mt.submit: the watcher follows each task from its creation on, while the others are made."""
    futures = [mt.submit(client, "nap", {"seconds": seconds}) for _ in range(size)]
    return [settled(functools.partial(f.result, timeout=600)) for f in futures]


def outcomes(statuses: list[mt.Status]) -> list[Any]:
    """Each status's outcome, or the McpError it raised."""
    return [settled(functools.partial(mt.outcome, status)) for status in statuses]


WAYS: dict[str, Callable[[mt.Client, list[mt.Status]], list[Any]]] = {
    "listen": lambda c, t: outcomes(mt.wait_all(c, t, timeout=600)),
    "poll": lambda c, t: outcomes(mt.wait_all(c, t, timeout=600, listen=False)),
    "threads": threads_way,
    "tlisten": lambda c, t: threads_way(c, t, listen=True),
}


def peer_run(transport: str, size: int, seconds: float) -> dict[str, float]:
    """The fastmcp way: its client and server in processes of their own."""
    server = None
    try:
        if transport == "http":
            server = subprocess.Popen(
                [str(PEER_PYTHON), str(PEER_SERVER), "http", "0"], stdout=subprocess.PIPE, text=True
            )
            assert server.stdout is not None
            port: int | None = int(server.stdout.readline().split()[-1])
            where = f"http://127.0.0.1:{port}/mcp"
        else:
            port, where = None, str(PEER_SERVER)
        peak = Peak(port)
        out = subprocess.run(
            [str(PEER_PYTHON), str(ROOT / "bench" / "_fastmcp_many.py"), transport, where, str(size), str(seconds)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        peak.stop()
        row: dict[str, float] = json.loads(out.strip().splitlines()[-1])
        return {
            **row,
            "wall": float("nan"),
            "threads": float("nan"),
            "gets": float("nan"),
            "connections": peak.connections,
        }
    finally:
        if server is not None:
            server.terminate()
            server.wait(10)


def client_of(transport: str) -> tuple[mt.Client, Callable[[], None], int | None]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if transport == "stdio":
        client = mt.Client.stdio(sys.executable, ["-m", "mcp_tasks.server", "bench.many_tasks:make_server"], env=env)
        return client, lambda: None, None
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_tasks.server", "bench.many_tasks:make_server", "--http", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()

    def stop() -> None:
        process.terminate()
        process.wait(10)

    return mt.Client.http(url, timeout=60), stop, int(url.rsplit(":", 1)[1].split("/")[0])


def run(transport: str, way: str, size: int, seconds: float) -> dict[str, float]:
    if way == "fastmcp":
        return peer_run(transport, size, seconds)
    client, stop, port = client_of(transport)
    try:
        client.call_tool("count")  # connected, negotiated
        before = client.call_tool("count")["structuredContent"].get("tasks/get", 0)
        peak = Peak(port)
        cpu = time.process_time()
        started = time.monotonic()
        if way == "futures":
            results = futures_way(client, size, seconds)
        else:
            tasks = [mt.call_tool(client, "nap", {"seconds": seconds}) for _ in range(size)]
            statuses = [t for t in tasks if isinstance(t, mt.Status)]
            results = WAYS[way](client, statuses)
        ended = time.monotonic()
        cpu = time.process_time() - cpu
        threads = peak.stop()
        opens = watch_of(client.channel).opens
        gets = client.call_tool("count")["structuredContent"].get("tasks/get", 0) - before
        failed = sum(isinstance(r, Exception) for r in results)
        ideal = max(r["structuredContent"]["done_at"] for r in results if not isinstance(r, Exception))
        return {
            "late": ended - ideal,
            "wall": ended - started,
            "ideal": ideal - started,
            "cpu_ms": 1000 * cpu / size,
            "threads": threads,
            "gets": gets / size,
            "connections": peak.connections,
            "errors": failed,
            "opens": opens,
        }
    finally:
        client.close()
        stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--transports", default="http,stdio")
    parser.add_argument("--ways", default="listen,poll,futures,threads,tlisten,fastmcp")
    parser.add_argument("--json", metavar="PATH", help="also write the results there (bench/_results.py)")
    args = parser.parse_args()
    sizes = {"sizes": args.sizes, "seconds": args.seconds, "transports": args.transports, "ways": args.ways}
    results = Results("many_tasks", args.json, sizes)
    print(
        f"{'transport':9} {'N':>6} {'way':8} {'ideal s':>8} {'late s':>7} {'cpu ms/task':>11} {'cpu/threads':>11} "
        f"{'wall/threads':>12} "
        f"{'threads':>7} {'gets/task':>9} {'conns':>5} {'errors':>6} {'streams':>7}"
    )
    for transport in args.transports.split(","):
        for size in map(int, args.sizes.split(",")):
            ways = [w for w in args.ways.split(",") if w != "fastmcp" or (size <= PEER_MAX and PEER_PYTHON.exists())]
            rows = {way: run(transport, way, size, args.seconds) for way in ways}
            base = rows.get("threads")
            for way, row in rows.items():
                ratio = f"{row['cpu_ms'] / base['cpu_ms']:.2f}" if base else "-"
                walls = f"{row['wall'] / base['wall']:.2f}" if base else "-"
                print(
                    f"{transport:9} {size:6} {way:8} {row['ideal']:8.2f} {row['late']:7.2f} {row['cpu_ms']:11.3f} "
                    f"{ratio:>11} {walls:>12} {row['threads']:7.0f} {row['gets']:9.2f} {row['connections']:5.0f} "
                    f"{row.get('errors', 0):6} {row.get('opens', float('nan')):7.0f}",
                    flush=True,
                )
                results.add(
                    transport=transport,
                    size=size,
                    way=way,
                    **{k: (None if v != v else v) for k, v in row.items()},  # NaN: not measured
                    cpu_vs_threads=row["cpu_ms"] / base["cpu_ms"] if base else None,
                    wall_vs_threads=row["wall"] / base["wall"] if base and row["wall"] == row["wall"] else None,
                )
    results.write()


if __name__ == "__main__":
    main()
