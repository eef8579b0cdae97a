"""How far past its timeout a call returns, on each transport, against a server that never
answers (over HTTP: one that accepts and never answers, one that trickles its headers, one that
trickles its body), a server just as slow to take the ``notifications/cancelled`` that tells it the
request was abandoned; and how soon `_thread.interrupt_main()` reaches a waiting main thread. Not
a test: it prints p50, p95 and max of the overshoot (the goal: within timeout + 0.1 s).

    python bench/deadline_margin.py [--runs 20] [--timeout 0.2]
"""

from __future__ import annotations

import _thread
import argparse
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcp_tasks as mt
from tests.foreign.stalled_http import StalledServer


class Mute:
    """A direct server that never answers a request (until the client gives up on it), and holds
    every notification until `stop` is set.
    """

    def __init__(self) -> None:
        self.stop = threading.Event()

    def handle(self, message: dict[str, Any], exchange: Any) -> dict[str, Any] | None:
        if "id" not in message:
            self.stop.wait(60)
            return None
        exchange.cancelled.wait(60)
        return None


def mute_http() -> tuple[socket.socket, str, list[socket.socket]]:
    """A socket that accepts connections and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return server, f"http://127.0.0.1:{server.getsockname()[1]}/mcp", held


def overshoot(call: Callable[[], object], timeout: float, runs: int) -> list[float]:
    """Seconds past `timeout` at which `call` raised its timeout."""
    seen = []
    for _ in range(runs):
        start = time.monotonic()
        try:
            call()
        except TimeoutError:
            pass
        seen.append(time.monotonic() - start - timeout)
    return seen


def interrupt_latency(client: mt.Client, runs: int) -> list[float]:
    """Seconds from `interrupt_main()` to the KeyboardInterrupt in a wait blocked in the main thread."""
    seen = []
    for _ in range(runs):
        sent: list[float] = []

        def interrupt(sent: list[float] = sent) -> None:
            time.sleep(0.05)
            sent.append(time.monotonic())
            _thread.interrupt_main()

        threading.Thread(target=interrupt, daemon=True).start()
        try:
            client.request("tools/list", timeout=5)
        except KeyboardInterrupt:
            seen.append(time.monotonic() - sent[0])
        except TimeoutError:
            pass
    return seen


def report(name: str, values: list[float]) -> None:
    ms = sorted(v * 1000 for v in values)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    print(f"{name:<34} p50 {statistics.median(ms):7.1f} ms   p95 {p95:7.1f} ms   max {ms[-1]:7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=0.2)
    args = parser.parse_args()
    t = args.timeout
    print(f"overshoot past timeout={t}s ({args.runs} runs each; goal: under 100 ms)")
    mute = Mute()
    with mt.Client.direct(mute, retries=0, protocol="2026-07-28") as client:
        report("direct request", overshoot(lambda: client.request("tools/list", timeout=t), t, args.runs))
        report("direct wait_task", overshoot(lambda: mt.wait_task(client, "t", timeout=t), t, args.runs))
        report(
            "direct wait_task listen",
            overshoot(lambda: mt.wait_task(client, "t", timeout=t, listen=True), t, args.runs),
        )
        report("interrupt_main -> KeyboardInterrupt", interrupt_latency(client, args.runs))
        mute.stop.set()
    server, url, held = mute_http()
    with mt.Client.http(url, retries=0, protocol="2026-07-28") as client:
        report("http request (never reads)", overshoot(lambda: client.request("tools/list", timeout=t), t, args.runs))
    server.close()
    for conn in held:
        conn.close()
    for mode in ("silent", "headers", "body"):
        with StalledServer(mode) as stalled, mt.Client.http(stalled.url, retries=0, protocol="2026-07-28") as client:
            request = overshoot(lambda: client.request("tools/list", timeout=t), t, args.runs)
            report(f"http request ({mode})", request)
            waited = overshoot(lambda: mt.await_task(client, "t", timeout=t), t, args.runs)
            report(f"http await_task ({mode})", waited)
    stdio = ["-c", "import sys\nfor _ in sys.stdin: pass"]
    with mt.Client.stdio(sys.executable, stdio, protocol="2026-07-28") as client:
        report("stdio request", overshoot(lambda: client.request("tools/list", timeout=t), t, args.runs))
        report("stdio await_task", overshoot(lambda: mt.await_task(client, "t", timeout=t), t, args.runs))


if __name__ == "__main__":
    main()
