"""How long ``mcp-tasks call`` takes to exit after Ctrl-C, in a pseudo-terminal: over stdio (a
server that ends with its input, and one that keeps running after it, as servers whose request
threads keep them alive do), against HTTP as the baseline of the same run. Not a test: it prints
the median of each and its ratio to HTTP's.

    python bench/cli_interrupt.py [--runs 5]

Each run waits until the server has the request under way (the foreign stdio server's report, or
the tool's status line), then sends ^C through the terminal and times until the command exits.
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp_tasks.server import Server, ToolContext, serve_http  # noqa: E402
from tests.foreign.legacy_stdio_tasks import Reports  # noqa: E402

TAKE_TERMINAL = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); os.execv(sys.executable, sys.argv[1:])"
)
HOLD = """
from mcp_tasks.server import Server
server = Server(poll_interval=0.05)
@server.tool(task="optional")
def hold(ctx) -> dict:
    ctx.report("holding")
    ctx.sleep(3600)
    return {}
"""


def interrupted(target: str, tool: str, ready: str | None, reports: Reports | None, cwd: Path) -> float:
    """Seconds from ^C to the command's exit."""
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", TAKE_TERMINAL, sys.executable, "-m", "mcp_tasks", "call", target, tool],
        stdin=slave,
        stdout=subprocess.DEVNULL,
        stderr=slave,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    if reports is not None:
        mark = reports.journal.mark()
        reports.journal.wait_for(lambda e: e["event"] == "block", after=mark, timeout=60)
    seen = b""
    while ready is not None and ready.encode() not in seen:
        select.select([master], [], [], 60)
        seen += os.read(master, 4096)
    sent = time.monotonic()
    os.write(master, b"\x03")
    proc.wait(60)
    took = time.monotonic() - sent
    os.close(master)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    cwd = Path(os.environ.get("TMPDIR", "/tmp")) / "mcp_tasks_bench_interrupt"
    cwd.mkdir(exist_ok=True)
    (cwd / "hold_server.py").write_text(HOLD)
    server = Server(poll_interval=0.05)

    def hold(ctx: ToolContext) -> dict[str, object]:
        ctx.report("holding")
        ctx.sleep(3600)
        return {}

    server.add_tool(hold, name="hold", task="optional")
    reports = Reports()
    rows: dict[str, list[float]] = {"http": [], "stdio, ends with its input": [], "stdio, ignores its input's end": []}
    try:
        with serve_http(server) as http:
            for _ in range(runs):
                rows["http"].append(interrupted(http.url, "hold", "holding", None, cwd))
                reference = f"{sys.executable} -m mcp_tasks.server hold_server:server"
                rows["stdio, ends with its input"].append(interrupted(reference, "hold", "holding", None, cwd))
                foreign = f"{sys.executable} -m tests.foreign.legacy_stdio_tasks --report {reports.port} --ignore-eof"
                rows["stdio, ignores its input's end"].append(interrupted(foreign, "block", None, reports, cwd))
    finally:
        reports.close()
        server.close()
    baseline = statistics.median(rows["http"])
    print(f"{'target':34} {'median s':>9} {'max s':>7} {'vs http':>8}")
    for name, times in rows.items():
        median = statistics.median(times)
        print(f"{name:34} {median:9.3f} {max(times):7.3f} {median / baseline:8.2f}")


if __name__ == "__main__":
    main()
