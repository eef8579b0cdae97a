"""1,000 HTTP clients at once against the reference server (issue 17): each connects, starts a task
and waits for it, all released by one barrier. Not a test: it prints errors and the wall time.

    python bench/many_clients.py [--clients 1000]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import mcp_tasks as mt  # noqa: E402
from mcp_tasks.server import Server, serve_http  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=1000)
    count = parser.parse_args().clients
    server = Server("many-clients", poll_interval=0.2, max_jobs=64)
    server.add_tool(lambda ctx: ctx.sleep(0.5) or {"ok": True}, name="nap", task="required")
    errors: list[str] = []
    barrier = threading.Barrier(count + 1)

    def one(url: str) -> None:
        barrier.wait()
        try:
            with mt.Client.http(url, timeout=120) as client:
                mt.call_and_await(client, "nap", timeout=120)
        except Exception as exc:  # counted, not raised: the point is how many fail
            errors.append(repr(exc))

    with serve_http(server) as http:
        threads = [threading.Thread(target=one, args=(http.url,)) for _ in range(count)]
        for thread in threads:
            thread.start()
        started = time.monotonic()
        barrier.wait()
        for thread in threads:
            thread.join()
        wall = time.monotonic() - started
    server.close()
    print(f"{count} clients: {len(errors)} errors, {wall:.1f} s (tasks of 0.5 s, at most 64 running at once)")
    for error in sorted(set(errors))[:5]:
        print("  ", error)


if __name__ == "__main__":
    main()
