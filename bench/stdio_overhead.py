"""Client CPU per ``tasks/get`` over stdio: mcp_tasks against the stdlib floor, a bare pipe loop
writing the same request line and reading the answer line (``json.loads`` of it), each against a
bench server process of its own. Not a test: it prints a table of ratios.

    python bench/stdio_overhead.py [--polls 2000] [--rounds 5] [--json PATH]

CPU is this process's (time.process_time: the servers' is not counted); the two clients take
turns each round, so that a load that comes and goes weighs on both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import mcp_tasks as mt  # noqa: E402
from bench._results import Results  # noqa: E402
from bench.http_overhead import cpu_per_call_each, per_round_ratio  # noqa: E402

SERVER = ["-m", "mcp_tasks.server", "bench._server:make"]
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": mt.capabilities(),
    "io.modelcontextprotocol/clientInfo": {"name": "mcp_tasks", "version": mt.__version__},
}


class Pipe:
    """The floor: one server process, a request written as a line, its answer read as one."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [sys.executable, *SERVER], cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin, self.stdout = self.process.stdin, self.process.stdout

    def ask(self, line: bytes) -> Any:
        self.stdin.write(line)
        self.stdin.flush()
        while True:
            answer = json.loads(self.stdout.readline())
            if "id" in answer:  # a notification of the server's is skipped
                return answer

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def line(request_id: int, method: str, params: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": META}}
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", metavar="PATH", help="also write the results there (bench/_results.py)")
    args = parser.parse_args()
    results = Results("stdio_overhead", args.json, {"polls": args.polls, "rounds": args.rounds})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    pipe = Pipe()
    try:
        with mt.Client.stdio(sys.executable, SERVER, env=env) as client:
            task = mt.call_tool(client, "hold")
            assert isinstance(task, mt.Status)
            created = pipe.ask(line(1, "tools/call", {"name": "hold", "arguments": {}}))["result"]
            get = line(2, "tasks/get", {"taskId": created["taskId"]})
            assert pipe.ask(get)["result"]["status"] == "working"
            calls = [lambda: mt.get_task(client, task), lambda: pipe.ask(get)]
            ours, floor = cpu_per_call_each(calls, args.polls, args.rounds)
            mt.cancel_task(client, task)
    finally:
        pipe.close()
    print(
        f"client CPU per tasks/get over stdio ({args.polls} polls x {args.rounds} rounds, taking turns;"
        " the median, and the median of the ratios round by round)"
    )
    print(f"  {'client':36} {'µs/poll':>9} {'× floor':>8}")
    for name, samples in (("mcp_tasks get_task", ours), ("stdlib pipe + json.loads (floor)", floor)):
        seconds, ratio = statistics.median(samples), per_round_ratio(samples, floor)
        print(f"  {name:36} {seconds * 1e6:9.0f} {ratio:8.2f}")
        results.add(client=name, us=seconds * 1e6, floor=ratio)
    results.write()


if __name__ == "__main__":
    main()
