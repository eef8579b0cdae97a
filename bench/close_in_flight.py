"""How soon `close()` ends a wait blocked in a request to a server gone dark, on each transport
(the servers of tests/transports/test_close_in_flight.py: over HTTP one that reads a ``tasks/get`` and never
answers, on the plain path and through ``Session.request``; one that never answers the listen
stream's POST; one that answers it with headers and then nothing; over stdio a server process that
reads and never answers; a 2025-era session whose server never answers the DELETE that ends it,
where only `close()` itself is timed). Not a test: per case it prints p50, p95 and max of the time from the
call to `close()` to the end of the wait, and of `close()` itself (the goal: 0.1 s).

    python bench/close_in_flight.py [--runs 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcp_tasks as mt
from tests.fixtures.legacy_http import LegacyHttpServer
from tests.foreign.dark_http import DarkServer

ROOT = Path(__file__).resolve().parent.parent

TASK = "task-0123456789abcdef"
MODERN = "2026-07-28"
FAILSAFE = 60.0


def one(client: mt.Client, listen: bool, held: threading.Event) -> tuple[float, float]:
    """Close `client` under a wait (once the server holds the request): (to the wait's end, close)."""
    ended: list[float] = []

    def wait() -> None:
        try:
            mt.wait_task(client, TASK, timeout=None, listen=listen)
        except mt.TransportError:
            pass
        ended.append(time.monotonic())

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    if not held.wait(FAILSAFE):
        raise SystemExit("the server never got the request")
    start = time.monotonic()
    client.close()
    closed = time.monotonic()
    thread.join(FAILSAFE)
    if not ended:
        raise SystemExit("the wait did not end")
    return ended[0] - start, closed - start


def http_case(mode: str, listen: bool, auth: tuple[str, str] | None) -> Callable[[], tuple[float, float]]:
    def run() -> tuple[float, float]:
        with DarkServer(mode) as server:
            client = mt.Client.http(server.url, protocol=MODERN, timeout=None, auth=auth)
            return one(client, listen, server.dark)

    return run


def stdio_case(listen: bool) -> Callable[[], tuple[float, float]]:
    def run() -> tuple[float, float]:
        held = threading.Event()

        def noticed(method: str, params: dict[str, Any]) -> None:
            if method == "notifications/dark":
                held.set()

        server = [str(ROOT / "tests" / "foreign_stdio" / "server.py"), "--dark"]
        client = mt.Client.stdio(sys.executable, server, protocol=MODERN, timeout=None, on_notification=noticed)
        return one(client, listen, held)

    return run


def legacy_delete_case() -> tuple[float, float]:
    """close() of a 2025-era session whose DELETE is never answered (no wait: both numbers are close())."""
    with LegacyHttpServer(dark_delete=True) as server:
        client = mt.Client.http(server.url, timeout=30)
        client.list_tools()
        start = time.monotonic()
        client.close()
        took = time.monotonic() - start
        return took, took


CASES: dict[str, Callable[[], tuple[float, float]]] = {
    "http polling, plain path": http_case("get", False, None),
    "http polling, Session.request": http_case("get", False, ("user", "pass")),
    "http listen, POST unanswered": http_case("listen", True, None),
    "http listen, headers then nothing": http_case("listen_head", True, None),
    "stdio polling": stdio_case(False),
    "stdio listen": stdio_case(True),
    "http 2025 session, DELETE unanswered": legacy_delete_case,
}


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(ordered) * 1000:7.1f} {p95 * 1000:7.1f} {ordered[-1] * 1000:7.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    print(f"{'ms from close()':36} {'wait ends: p50 p95 max':>23}   {'close(): p50 p95 max':>23}")
    for name, case in CASES.items():
        ends, closes = [], []
        for _ in range(args.runs):
            end, close = case()
            ends.append(end)
            closes.append(close)
        print(f"{name:36} {summary(ends)}   {summary(closes)}", flush=True)


if __name__ == "__main__":
    main()
