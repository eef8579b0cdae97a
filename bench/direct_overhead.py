"""``tasks/get`` over the direct transport with a timeout set (the default) against none: the time
per poll and how many threads the polls started. Not a test: it prints a table.

    python bench/direct_overhead.py [--polls 2000] [--rounds 5] [--json PATH]

With a timeout, each request runs on one of the transport's long-lived workers so that a stalled
one can be abandoned at its deadline; without one it runs in the caller's thread. The ratio is what
that safety costs per poll.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcp_tasks as mt
from bench._results import Results
from bench._server import make


def per_poll(client: mt.Client, task: mt.Status, polls: int, timeout: float | None) -> tuple[float, float]:
    """Wall-clock and process CPU seconds per get_task (the server runs in this process too)."""
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(polls):
        mt.get_task(client, task, timeout=timeout)
    return (time.perf_counter() - start) / polls, (time.process_time() - cpu) / polls


def threads_started(action: object) -> int:
    """How many threads `action()` started."""
    started = [0]
    original = threading.Thread.start

    def counting(self: threading.Thread) -> None:
        started[0] += 1
        original(self)

    threading.Thread.start = counting  # type: ignore[method-assign]
    try:
        action()  # type: ignore[operator]
    finally:
        threading.Thread.start = original  # type: ignore[method-assign]
    return started[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", metavar="PATH", help="also write the results there (bench/_results.py)")
    args = parser.parse_args()
    results = Results("direct_overhead", args.json, {"polls": args.polls, "rounds": args.rounds})
    server = make()
    client = mt.Client.direct(server, timeout=30.0)
    try:
        task = mt.call_tool(client, "hold", {})
        assert isinstance(task, mt.Status)
        rows = []
        for label, timeout in (("timeout=30", 30.0), ("timeout=None", None)):
            per_poll(client, task, 200, timeout)  # warm up
            times = [per_poll(client, task, args.polls, timeout) for _ in range(args.rounds)]
            started = threads_started(lambda t=timeout: per_poll(client, task, args.polls, t))
            wall = statistics.median(t[0] for t in times)
            cpu = statistics.median(t[1] for t in times)
            rows.append((label, wall, cpu, started))
        base = rows[1][1]
        print(f"{args.polls} polls of tasks/get over the direct transport, median of {args.rounds} rounds")
        print(f"{'':14} {'us/poll':>9} {'ratio':>7} {'cpu us/poll':>12} {'threads started':>16}")
        for label, seconds, cpu, started in rows:
            print(f"{label:14} {seconds * 1e6:9.1f} {seconds / base:7.2f} {cpu * 1e6:12.1f} {started:16d}")
            results.add(way=label, us=seconds * 1e6, ratio=seconds / base, cpu_us=cpu * 1e6, threads=started)
        results.write()
    finally:
        client.close()
        server.close()


if __name__ == "__main__":
    main()
