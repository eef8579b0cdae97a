"""Client CPU per ``tasks/get`` over HTTP on loopback: mcp_tasks against a naive requests loop
sending the same bytes, requests' lower layers, and the stdlib floor; fastmcp-tasks' own client too
when the interop peers are installed (.venv-peers). Not a test: it prints a table of ratios.

    python bench/http_overhead.py [--polls 1000] [--rounds 9] [--json PATH]

CPU is this process's (time.process_time); the servers run in processes of their own, so their
CPU is not counted. The fastmcp-tasks client does not send Mcp-Name on tasks/get, which our
reference server requires, so that comparison runs against fastmcp-tasks' own server.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests
from requests.adapters import HTTPAdapter

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import mcp_tasks as mt  # noqa: E402
from bench._results import Results  # noqa: E402


def spawn(argv: list[str], ready: str, what: str) -> tuple[subprocess.Popen[str], str]:
    """Start a server process; returns it and the first line it prints, which must start with
    `ready`."""
    process = subprocess.Popen(
        argv,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith(ready):
        process.kill()
        raise SystemExit(f"{what} did not start: {line!r}")
    return process, line


def start_server() -> tuple[subprocess.Popen[str], str]:
    """The bench server over HTTP in a subprocess; returns it and its URL."""
    argv = [sys.executable, "-m", "mcp_tasks.server", "bench._server:make", "--http", "127.0.0.1:0"]
    return spawn(argv, "http", "the bench server")


SLICE = 50
"""Calls in a row before the next client's turn (within a round)."""


def cpu_per_call(call: Callable[[], object], polls: int, rounds: int) -> float:
    """Median over rounds of the calling thread's CPU seconds per call."""
    for _ in range(50):
        call()
    samples = []
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(polls):
            call()
        samples.append((time.process_time() - start) / polls)
    return statistics.median(samples)


def cpu_per_call_each(calls: list[Callable[[], object]], polls: int, rounds: int) -> list[list[float]]:
    """Each call's CPU seconds per call, one sample a round; within a round the calls take turns
    every `SLICE` calls, so that a load that comes and goes on a shared machine weighs on each of
    them alike (compare them round by round: `per_round_ratio`).
    """
    for call in calls:
        for _ in range(50):
            call()
    samples: list[list[float]] = [[] for _ in calls]
    slices = [SLICE] * (polls // SLICE) + ([polls % SLICE] if polls % SLICE else [])
    for _ in range(rounds):
        spent = [0.0] * len(calls)
        for count in slices:
            for i, call in enumerate(calls):
                start = time.process_time()
                for _ in range(count):
                    call()
                spent[i] += time.process_time() - start
        for taken, seconds in zip(samples, spent, strict=True):
            taken.append(seconds / polls)
    return samples


def per_round_ratio(samples: list[float], baseline: list[float]) -> float:
    """The median over rounds of `samples` / `baseline` taken in the same round (a ratio steadier
    than one of medians: a round slowed by load slows both).
    """
    return statistics.median(x / base for x, base in zip(samples, baseline, strict=True))


def peer_python() -> Path | None:
    """The interop peers' python, when .venv-peers is installed."""
    python = ROOT / ".venv-peers" / "bin" / "python"
    return python if python.exists() else None


def start_peer_server(python: Path) -> tuple[subprocess.Popen[str], str]:
    """fastmcp-tasks' server (tests/interop/fastmcp_server.py) over HTTP; returns it and its URL."""
    argv = [str(python), str(ROOT / "tests" / "interop" / "fastmcp_server.py"), "http", "0"]
    process, line = spawn(argv, "listening on ", "the peer server")
    return process, f"http://127.0.0.1:{line.rsplit(' ', 1)[1]}/mcp"


def against_peer(python: Path, polls: int, rounds: int) -> list[tuple[str, float]]:
    """mcp_tasks and fastmcp-tasks' client, each polling one task on fastmcp-tasks' server."""
    process, url = start_peer_server(python)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with mt.Client.http(url, timeout=5) as probe:
                    probe.discover()
                break
            except mt.McpError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        with mt.Client.http(url) as client:
            task = mt.call_tool(client, "long", {"seconds": 3600})
            assert isinstance(task, mt.Status)
            ours = cpu_per_call(lambda: mt.get_task(client, task.task_id), polls, rounds)
            done = subprocess.run(
                [
                    str(python),
                    str(Path(__file__).with_name("_fastmcp_client.py")),
                    url,
                    task.task_id,
                    str(polls),
                    str(rounds),
                ],
                capture_output=True,
                text=True,
                timeout=900,
            )
            if done.returncode != 0:
                raise SystemExit(f"the fastmcp-tasks client failed:\n{done.stderr}")
            mt.cancel_task(client, task)
        return [("mcp_tasks get_task", ours), ("fastmcp-tasks 4.1.4 async client", float(done.stdout.strip()))]
    finally:
        process.terminate()
        process.wait(10)


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--polls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--json", metavar="PATH", help="also write the results there (bench/_results.py)")
    args = parser.parse_args()
    results = Results("http_overhead", args.json, {"polls": args.polls, "rounds": args.rounds})
    process, url = start_server()
    try:
        with mt.Client.http(url) as client:
            task = mt.call_tool(client, "hold")
            assert isinstance(task, mt.Status)
            task_id = task.task_id
            meta = {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": mt.capabilities(),
                "io.modelcontextprotocol/clientInfo": {"name": "mcp_tasks", "version": mt.__version__},
            }
            body = json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": task_id, "_meta": meta}},
                separators=(",", ":"),
            ).encode()
            headers = {
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "tasks/get",
                "Mcp-Name": task_id,
            }
            session = requests.Session()
            prepared = session.prepare_request(requests.Request("POST", url, data=body, headers=headers))
            adapter = HTTPAdapter()
            parts = urllib.parse.urlsplit(url)
            connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port)

            def naive() -> Any:
                return json.loads(session.post(url, data=body, headers=headers, timeout=30).content)

            def session_send() -> Any:
                return json.loads(session.send(prepared, timeout=30).content)

            def adapter_send() -> Any:
                return json.loads(adapter.send(prepared, timeout=30).content)

            def stdlib() -> Any:
                connection.request("POST", parts.path, body, headers)
                return json.loads(connection.getresponse().read())

            def ours() -> Any:
                return mt.get_task(client, task_id)

            assert naive()["result"]["status"] == "working"
            clients: list[tuple[str, Callable[[], object]]] = [
                ("requests Session.post + json.loads (naive)", naive),
                ("mcp_tasks get_task", ours),
                ("requests Session.send (prepared)", session_send),
                ("requests HTTPAdapter.send (prepared)", adapter_send),
                ("stdlib http.client (floor)", stdlib),
            ]
            taken = cpu_per_call_each([call for _, call in clients], args.polls, args.rounds)
            named = zip(clients, taken, strict=True)
            rows = [(name, statistics.median(samples), samples) for (name, _), samples in named]
            mt.cancel_task(client, task_id)
            connection.close()
            session.close()
            adapter.close()
    finally:
        process.terminate()
        process.wait(10)
    by_naive, by_floor = rows[0][2], rows[-1][2]
    print(
        f"client CPU per tasks/get over HTTP on loopback ({args.polls} polls x {args.rounds} rounds,"
        f" taking turns every {SLICE} polls; the median, and the median of the per-round ratios)"
    )
    print("against the mcp_tasks reference server:")
    print(f"  {'client':45} {'µs/poll':>9} {'× naive':>8} {'× floor':>8}")
    for name, seconds, samples in rows:
        ratio = per_round_ratio(samples, by_floor)
        print(f"  {name:45} {seconds * 1e6:9.0f} {per_round_ratio(samples, by_naive):8.2f} {ratio:8.2f}")
        results.add(server="mcp_tasks", client=name, us=seconds * 1e6, floor=ratio)
    # issue 16's aims: mcp_tasks at or under 0.4x naive and 1.5x the stdlib floor
    python = peer_python()
    if python is None:
        print("(fastmcp-tasks comparison skipped: run `python .ci/peers.py install` first)")
        results.write()
        return
    peer_rows = against_peer(python, args.polls, args.rounds)
    print("against fastmcp-tasks' own server:")
    print(f"  {'client':45} {'µs/poll':>9} {'× fastmcp':>9}")
    for name, seconds in peer_rows:
        print(f"  {name:45} {seconds * 1e6:9.0f} {seconds / peer_rows[1][1]:9.2f}")
        results.add(server="fastmcp-tasks", client=name, us=seconds * 1e6, fastmcp=seconds / peer_rows[1][1])
    results.write()


if __name__ == "__main__":
    main()
