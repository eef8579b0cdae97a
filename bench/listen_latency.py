"""How soon `await_task` returns after the server completes a task: following a listen stream
against polling, on each transport. Not a test: it prints p50 and p95 and their ratio.

    python bench/listen_latency.py [--tasks 200] [--quiet-tasks 3] [--quiet 6] [--json PATH]

Each task waits on a gate that the wait itself opens (from on_status, once the wait is set up);
the tool records the moment it completes (time.monotonic, one clock for every process on Linux),
and the latency is from then until await_task returns. The server suggests polling every 100 ms.
Beside each latency the table gives the ``tasks/get`` requests per listen wait (counted at the
client's transport).

A second table: over HTTP, with the reference server at its default keep-alive interval (5 s),
tasks that complete `--quiet` seconds after their wait began, so the listen stream has been quiet
for longer than the keep-alive interval (a comment or two, nothing else) when the notification
comes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_tasks as mt
from mcp_tasks.server import serve_http

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._results import Results  # noqa: E402
from bench._server import make_fast  # noqa: E402


@contextlib.contextmanager
def connect(transport: str) -> Iterator[mt.Client]:
    """A client of the bench server over one transport."""
    if transport == "stdio":
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        with mt.Client.stdio(sys.executable, ["-m", "mcp_tasks.server", "bench._server:make_fast"], env=env) as client:
            yield client
        return
    server = make_fast()
    try:
        if transport == "direct":
            with mt.Client.direct(server) as client:
                yield client
        else:
            with serve_http(server) as http, mt.Client.http(http.url) as client:
                yield client
    finally:
        server.close()


def count_gets(client: mt.Client) -> list[int]:
    """Count the client's tasks/get requests (a one-item list, read after the waits)."""
    counter = [0]
    transport: Any = client.transport
    send = transport.request

    def counted(message: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        if message.get("method") == "tasks/get":
            counter[0] += 1
        return send(message, *args, **kwargs)

    transport.request = counted
    return counter


def latencies(client: mt.Client, listen: bool, tasks: int, after: float = 0.0) -> list[float]:
    """Seconds from each task's completion on the server to await_task returning; the gate opens
    `after` seconds after the wait is set up."""
    found = []
    timers: list[threading.Timer] = []
    for n in range(tasks):
        name = f"{'listen' if listen else 'poll'}-{n}"
        task = mt.call_tool(client, "gated", {"name": name})
        assert isinstance(task, mt.Status)
        opened: list[bool] = []

        def open_gate(status: mt.Status, name: str = name, opened: list[bool] = opened) -> None:
            if not opened:
                opened.append(True)
                if after:
                    timer = threading.Timer(after, lambda: client.call_tool("release", {"name": name}))
                    timer.daemon = True
                    timer.start()
                    timers.append(timer)
                else:
                    client.call_tool("release", {"name": name})

        result = mt.await_task(client, task, listen=listen, timeout=30, on_status=open_gate)
        found.append(time.monotonic() - result["structuredContent"]["done_at"])
    for timer in timers:
        timer.join()  # its release call answered (the wait may hear the end before that answer)
    return found


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--quiet-tasks", type=int, default=3)
    parser.add_argument("--quiet", type=float, default=6.0)
    parser.add_argument("--json", metavar="PATH", help="also write the results there (bench/_results.py)")
    args = parser.parse_args()
    sizes = {"tasks": args.tasks, "quiet_tasks": args.quiet_tasks, "quiet": args.quiet}
    results = Results("listen_latency", args.json, sizes)
    print(f"from a task completing on the server to await_task returning ({args.tasks} tasks each, ms)")
    header = ("transport", "listen p50", "listen p95", "gets/wait", "poll p50", "poll p95", "p50 poll/listen")
    print(
        f"{header[0]:10} {header[1]:>11} {header[2]:>11} {header[3]:>10} {header[4]:>9} {header[5]:>9} {header[6]:>16}"
    )
    for transport in ("direct", "stdio", "http"):
        with connect(transport) as client:
            gets = count_gets(client)
            listened = latencies(client, True, args.tasks)
            per_wait = gets[0] / args.tasks
            polled = latencies(client, False, args.tasks)
        row = [percentile(v, q) * 1000 for v in (listened, polled) for q in (0.5, 0.95)]
        ratio = statistics.median(polled) / statistics.median(listened)
        print(
            f"{transport:10} {row[0]:11.2f} {row[1]:11.2f} {per_wait:10.2f} {row[2]:9.1f} {row[3]:9.1f} {ratio:16.0f}x"
        )
        results.add(
            transport=transport,
            listen_p50=row[0],
            listen_p95=row[1],
            gets_per_wait=per_wait,
            poll_p50=row[2],
            poll_p95=row[3],
            poll_vs_listen=ratio,
        )
    print()
    print(
        f"http, reference server at its default keep-alive (5 s): {args.quiet_tasks} listen waits whose task"
        f" completes {args.quiet:g} s after the wait began (ms)"
    )
    server = make_fast()
    try:
        with serve_http(server) as http, mt.Client.http(http.url) as client:
            gets = count_gets(client)
            quiet = latencies(client, True, args.quiet_tasks, after=args.quiet)
    finally:
        server.close()
    print(f"{'p50':>9} {'max':>9} {'gets/wait':>10}")
    print(f"{statistics.median(quiet) * 1000:9.2f} {max(quiet) * 1000:9.2f} {gets[0] / args.quiet_tasks:10.2f}")
    results.extra["quiet"] = {
        "p50": statistics.median(quiet) * 1000,
        "max": max(quiet) * 1000,
        "gets_per_wait": gets[0] / args.quiet_tasks,
    }
    results.write()


if __name__ == "__main__":
    main()
