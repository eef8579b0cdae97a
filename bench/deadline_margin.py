"""How far past its timeout a call returns, on each transport, against a server that never
answers (over HTTP: one that accepts and never answers, one that trickles its headers, one that
trickles its body), a server just as slow to take the ``notifications/cancelled`` that tells it the
request was abandoned; over HTTP also against a name lookup that hangs (a resolver stand-in in
place of ``socket.getaddrinfo`` for one name) and through a proxy that trickles (a plain HTTP
proxy, and a ``CONNECT`` tunnel for an https URL), and with `mt.OAuth` against an authorization
server whose metadata endpoint, token endpoint or identity provider trickles (each call runs the
flow anew: the MCP server's 401, discovery, then the endpoint that trickles); and how soon `_thread.interrupt_main()`
reaches a waiting main thread. Not a test: it prints p50, p95 and max of the overshoot (the goal:
within timeout + 0.1 s).

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
from tests.foreign.trickling_oauth import TricklingOAuth
from tests.foreign.trickling_proxy import TricklingProxy

HANGS = "hangs.test"


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


def hanging_lookups(release: threading.Event) -> Callable[..., Any]:
    """A stand-in for ``socket.getaddrinfo``: `HANGS` hangs until `release`; other names resolve."""
    real = socket.getaddrinfo

    def lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == HANGS:
            release.wait(600)
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return real(host, *args, **kwargs)

    return lookup


def edges(t: float, runs: int) -> None:
    """The name lookup and the proxies (see the module's docstring)."""
    release = threading.Event()
    real = socket.getaddrinfo
    socket.getaddrinfo = hanging_lookups(release)
    try:
        with mt.Client.http(f"http://{HANGS}/mcp", retries=0, protocol="2026-07-28") as client:
            report("http request (hanging lookup)", overshoot(lambda: client.request("tools/list", timeout=t), t, runs))
            release.set()
    finally:
        socket.getaddrinfo = real
    for scheme in ("http", "https"):
        with TricklingProxy() as proxy:
            url = f"{scheme}://mcp.example.test/mcp"
            with mt.Client.http(url, retries=0, protocol="2026-07-28", proxies={scheme: proxy.url}) as client:
                calls = overshoot(lambda: client.request("tools/list", timeout=t), t, runs)
                report(f"http request ({scheme} proxy trickles)", calls)


def oauth(t: float, runs: int) -> None:
    """An OAuth flow whose metadata endpoint, token endpoint or identity provider trickles."""
    for trickles in ("metadata", "token", "idp"):
        with TricklingOAuth(trickles) as realm:
            if trickles == "idp":
                auth = mt.OAuth(
                    grant="enterprise_managed",
                    client_id="backend",
                    id_token="header.id-token.signature",
                    idp_token_endpoint=f"{realm.base}/idp/token",
                )
            else:
                auth = mt.OAuth(client_id="backend", client_secret="s", grant="client_credentials", issuer=realm.issuer)
            with mt.Client.http(realm.url, auth=auth, retries=0, protocol="2026-07-28") as client:
                calls = overshoot(lambda: client.request("tools/list", timeout=t), t, runs)
                report(f"http request (oauth {trickles} trickles)", calls)


def report(name: str, values: list[float]) -> None:
    ms = sorted(v * 1000 for v in values)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    print(f"{name:<40} p50 {statistics.median(ms):7.1f} ms   p95 {p95:7.1f} ms   max {ms[-1]:7.1f} ms")


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
    edges(t, args.runs)
    oauth(t, args.runs)
    stdio = ["-c", "import sys\nfor _ in sys.stdin: pass"]
    with mt.Client.stdio(sys.executable, stdio, protocol="2026-07-28") as client:
        report("stdio request", overshoot(lambda: client.request("tools/list", timeout=t), t, args.runs))
        report("stdio await_task", overshoot(lambda: mt.await_task(client, "t", timeout=t), t, args.runs))


if __name__ == "__main__":
    main()
