"""An independent Tasks server for the interop tests: FastMCP with fastmcp-tasks (the only Python
implementation of the io.modelcontextprotocol/tasks extension), run from .venv-peers.

    .venv-peers/bin/python tests/interop/fastmcp_server.py stdio
    .venv-peers/bin/python tests/interop/fastmcp_server.py http PORT     # 127.0.0.1 only; PORT may be 0

Over HTTP the endpoint is ``http://127.0.0.1:PORT/mcp``; the script binds the socket itself and
prints ``listening on PORT`` once it listens (the port that was picked when PORT is 0). The task
store is fastmcp-tasks' in-process memory backend, so tasks live as long as the process.

Tools (task ones advertise a 100 ms poll interval unless said otherwise):
    slow(seconds, label)    optional task: sleeps, then returns a text
    confirm_delete(item)    optional task: asks for a confirmation form mid-task (the guard pattern:
                            the tool returns an InputRequiredResult and runs again once answered)
    tool_error()            optional task: raises ToolError -> completed, result.isError true
    protocol_error()        optional task: raises MCPError -> failed, with the error inlined
    crash()                 optional task: raises RuntimeError (what a crash turns into is the peer's choice)
    long(seconds)           optional task: reports progress "started", then runs until cancelled
    must_task()             required task: without the extension declared, -32021
    plain(x)                no task support: always answers inline with x + 1
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from datetime import timedelta
from typing import Any

import mcp_types  # type: ignore[import-not-found]
from fastmcp import Context, FastMCP  # type: ignore[import-not-found]
from fastmcp.exceptions import ToolError  # type: ignore[import-not-found]
from fastmcp.utilities.tasks import TaskConfig  # type: ignore[import-not-found]
from fastmcp_tasks import TasksExtension  # type: ignore[import-not-found]
from mcp.shared.exceptions import MCPError  # type: ignore[import-not-found]

HOST = "127.0.0.1"
POLL = timedelta(milliseconds=100)
OPTIONAL = TaskConfig(mode="optional", poll_interval=POLL)
REQUIRED = TaskConfig(mode="required", poll_interval=POLL)

# What protocol_error raises: an application error code with data, to see both travel.
PROTOCOL_ERROR = {"code": -32050, "message": "quota exceeded on purpose", "data": {"retryAfterMs": 1500}}
CONFIRM_SCHEMA = {
    "type": "object",
    "properties": {"confirmed": {"type": "boolean", "description": "Really delete it?"}},
    "required": ["confirmed"],
}

server = FastMCP("mcp_tasks-interop-peer")
server.add_extension(TasksExtension())  # memory:// backend: an in-process Docket


@server.tool(task=OPTIONAL)
async def slow(seconds: float = 0.3, label: str = "slow") -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return f"{label} done after {seconds}s"


@server.tool(task=OPTIONAL)
async def confirm_delete(ctx: Context, item: str = "report.pdf") -> Any:
    """Delete an item once the user confirms it (asks through a form)."""
    answers = ctx.input_responses or {}
    answer = answers.get("confirm")
    if answer is None:
        form = mcp_types.ElicitRequestFormParams(message=f"Delete {item}?", requested_schema=CONFIRM_SCHEMA)
        return mcp_types.InputRequiredResult(input_requests={"confirm": mcp_types.ElicitRequest(params=form)})
    content = getattr(answer, "content", None) or {}
    if getattr(answer, "action", None) == "accept" and content.get("confirmed") is True:
        return f"deleted {item}"
    return f"kept {item}"


@server.tool(task=OPTIONAL)
async def tool_error() -> str:
    """A tool that reports its own failure."""
    raise ToolError("the tool failed on purpose")


@server.tool(task=OPTIONAL)
async def protocol_error() -> str:
    """A tool whose call fails with a JSON-RPC error."""
    raise MCPError(code=PROTOCOL_ERROR["code"], message=PROTOCOL_ERROR["message"], data=PROTOCOL_ERROR["data"])


@server.tool(task=OPTIONAL)
async def crash() -> str:
    """A tool that fails with an unexpected exception (not a ToolError, not an MCPError)."""
    raise RuntimeError("unexpected crash, private detail: /srv/secret")


@server.tool(task=OPTIONAL)
async def long(ctx: Context, seconds: float = 30.0) -> str:
    """Run for a long time in small steps, so a cancel takes effect at once."""
    await ctx.report_progress(0, 100, "started")
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
    sys.stdout.flush()
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
