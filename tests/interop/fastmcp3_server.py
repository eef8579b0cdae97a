"""An independent legacy (2025-11-25) Tasks server for the interop tests: FastMCP 3.4.11 with its own
task engine (``fastmcp[tasks]``: Docket with the in-process memory backend, on mcp 1.30.0).
Run from .venv-peers-fastmcp3:

    .venv-peers-fastmcp3/bin/python tests/interop/fastmcp3_server.py stdio
    .venv-peers-fastmcp3/bin/python tests/interop/fastmcp3_server.py http PORT    # 127.0.0.1 only; PORT may be 0

Over HTTP the endpoint is ``http://127.0.0.1:PORT/mcp``; the script binds the socket itself and
prints ``listening on PORT`` once it listens.

Tools (``execution.taskSupport`` in brackets; task ones advertise a 100 ms poll interval):
    quick(x)               [optional] answers x + 1 at once
    slow(seconds, label)   [optional] sleeps, then returns a text
    slow_patient(seconds)  [optional] as slow, advertising a 10 minute poll interval
    confirm_delete(item, pause)  [optional] works `pause` s, then asks for a confirmation form through
                           ctx.elicit (as a task,
                           FastMCP pushes the elicitation/create request on its own, on stdout or
                           on the HTTP GET stream, while tasks/get still says working)
    failing()              [optional] raises ToolError: the task fails
    long(seconds)          [optional] runs until cancelled (in 50 ms steps)
    must_task()            [required] only as a task
    plain(x)               [forbidden] always inline: x + 1
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from datetime import timedelta

from fastmcp import Context, FastMCP  # type: ignore[import-not-found]
from fastmcp.exceptions import ToolError  # type: ignore[import-not-found]
from fastmcp.server.tasks.config import TaskConfig  # type: ignore[import-not-found]

HOST = "127.0.0.1"
POLL = timedelta(milliseconds=100)
OPTIONAL = TaskConfig(mode="optional", poll_interval=POLL)
REQUIRED = TaskConfig(mode="required", poll_interval=POLL)

server = FastMCP("mcp_tasks-interop-fastmcp3")


@server.tool(task=OPTIONAL)
async def quick(x: int = 1) -> int:
    """Answer at once."""
    return x + 1


@server.tool(task=OPTIONAL)
async def slow(seconds: float = 0.3, label: str = "slow") -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return f"{label} done after {seconds}s"


@server.tool(task=TaskConfig(mode="optional", poll_interval=timedelta(minutes=10)))
async def slow_patient(seconds: float = 0.3) -> str:
    """Like slow, but it advertises a 10 minute poll interval (waits that listen need not poll)."""
    await asyncio.sleep(seconds)
    return f"patient done after {seconds}s"


@server.tool(task=OPTIONAL)
async def confirm_delete(ctx: Context, item: str = "report.pdf", pause: float = 0.0) -> str:
    """Delete an item once the user confirms it (asks through a form, after `pause` seconds of work)."""
    await asyncio.sleep(pause)
    answer = await ctx.elicit(f"Delete {item}?", bool)
    if answer.action == "accept" and answer.data is True:
        return f"deleted {item}"
    return f"kept {item}"


@server.tool(task=OPTIONAL)
async def failing() -> str:
    """A tool that reports its own failure."""
    raise ToolError("the tool failed on purpose")


@server.tool(task=OPTIONAL)
async def long(seconds: float = 30.0) -> str:
    """Run for a long time in small steps, so a cancel takes effect at once."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while loop.time() < end:
        await asyncio.sleep(0.05)
    return "long finished"


@server.tool(task=REQUIRED)
async def must_task() -> str:
    """Only runs as a task."""
    return "ran as a task"


@server.tool
def plain(x: int = 1) -> int:
    """An ordinary tool with no task support."""
    return x + 1


def serve_http(port: int) -> None:
    """Serve Streamable HTTP on 127.0.0.1:port from a socket bound here (so port 0 works)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen(128)  # before saying so: a client that connects at once is queued, never refused
    bound = sock.getsockname()[1]
    print(f"listening on {bound}", flush=True)
    # Nothing else goes to stdout: whoever started us may stop reading it now.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    asyncio.run(server.run_http_async(show_banner=False, host=HOST, port=bound, log_level="warning", sockets=[sock]))


def main(argv: list[str]) -> int:
    """Serve on the transport the command line names."""
    if argv == ["stdio"]:
        server.run(transport="stdio", show_banner=False, log_level="warning")
        return 0
    if len(argv) == 2 and argv[0] == "http" and argv[1].isdigit():
        serve_http(int(argv[1]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
