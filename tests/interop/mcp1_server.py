"""An independent legacy (2025-11-25) Tasks server for the interop tests: the official Python SDK's
last 1.x (``mcp==1.30.0``), its low-level ``Server`` with ``experimental.enable_tasks()`` (in-memory
task store and message queue, the SDK's own tasks/get, tasks/result, tasks/list, tasks/cancel).
Run from .venv-peers-mcp1:

    .venv-peers-mcp1/bin/python tests/interop/mcp1_server.py stdio
    .venv-peers-mcp1/bin/python tests/interop/mcp1_server.py http PORT    # 127.0.0.1 only; PORT may be 0

Over HTTP the endpoint is ``http://127.0.0.1:PORT/mcp`` (the SDK's stateful Streamable HTTP session
manager); the script binds the socket itself and prints ``listening on PORT`` once it listens.

Tools (``execution.taskSupport`` in brackets; tasks get the SDK's 500 ms poll interval):
    quick(x)               [optional] answers x + 1 at once
    slow(seconds, label)   [optional] sleeps, then returns a text
    confirm_delete(item)   [optional] as a task, asks for a confirmation form (the SDK sends the
                           elicitation/create request inside a pending tasks/result); inline, refuses
    failing()              [optional] raises: the task fails with the message as statusMessage
    long(seconds)          [optional] runs until cancelled (checks the store every 50 ms)
    must_task()            [required] only as a task; inline, -32601 as the SDK validates it
    plain(x)               [forbidden] always inline: x + 1
"""

from __future__ import annotations

import os
import socket
import sys
import warnings
from contextlib import asynccontextmanager
from typing import Any

import anyio  # type: ignore[import-not-found]
import mcp.types as types  # type: ignore[import-not-found]
from mcp.server.experimental.task_context import ServerTaskContext  # type: ignore[import-not-found]
from mcp.server.lowlevel import Server  # type: ignore[import-not-found]

HOST = "127.0.0.1"
CONFIRM_SCHEMA = {
    "type": "object",
    "properties": {"confirmed": {"type": "boolean", "description": "Really delete it?"}},
    "required": ["confirmed"],
}

server = Server("mcp_tasks-interop-mcp1")
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # "tasks ... will be removed in mcp 2.0": known
    support = server.experimental.enable_tasks()


def tool(name: str, mode: str | None, properties: dict[str, Any] | None = None) -> Any:
    """A tool definition with its task support mode (None: the field is absent, i.e. forbidden)."""
    execution = types.ToolExecution(taskSupport=mode) if mode else None
    schema = {"type": "object", "properties": properties or {}}
    return types.Tool(name=name, description=f"interop tool {name}", inputSchema=schema, execution=execution)


NUMBER = {"type": "number"}
TOOLS = {
    t.name: t
    for t in (
        tool("quick", "optional", {"x": {"type": "integer"}}),
        tool("slow", "optional", {"seconds": NUMBER, "label": {"type": "string"}}),
        tool("confirm_delete", "optional", {"item": {"type": "string"}}),
        tool("failing", "optional"),
        tool("long", "optional", {"seconds": NUMBER}),
        tool("must_task", "required"),
        tool("plain", None, {"x": {"type": "integer"}}),
    )
}


@server.list_tools()
async def list_tools() -> list[Any]:
    return list(TOOLS.values())


def text(value: str, is_error: bool = False) -> Any:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)], isError=is_error)


async def stop_if_cancelled(task: ServerTaskContext) -> bool:
    """Whether the client cancelled the task (tasks/cancel only marks it in the store). The task
    context's own copy is refreshed first: run_task completes a task it thinks is still working,
    and completing a cancelled one raises inside the SDK's task group, which ends the server."""
    stored = await support.store.get_task(task.task_id)
    if stored is not None and stored.status == "cancelled":
        task._ctx._task = stored  # see the docstring
        return True
    return False


async def body(name: str, args: dict[str, Any], task: ServerTaskContext | None) -> Any:
    if name in ("quick", "plain"):
        return text(str(int(args.get("x", 1)) + 1))
    if name == "slow":
        seconds = float(args.get("seconds", 0.3))
        await anyio.sleep(seconds)
        return text(f"{args.get('label', 'slow')} done after {seconds}s")
    if name == "confirm_delete":
        item = str(args.get("item", "report.pdf"))
        if task is None:
            return text("confirm_delete asks for input, so it runs only as a task", True)
        answer = await task.elicit(f"Delete {item}?", CONFIRM_SCHEMA)
        confirmed = answer.action == "accept" and (answer.content or {}).get("confirmed") is True
        return text(f"deleted {item}" if confirmed else f"kept {item}")
    if name == "failing":
        raise RuntimeError("the tool failed on purpose")
    if name == "long":
        end = anyio.current_time() + float(args.get("seconds", 30.0))
        while anyio.current_time() < end:
            if task is not None and await stop_if_cancelled(task):
                return text("long stopped")
            await anyio.sleep(0.05)
        return text("long finished")
    if name == "must_task":
        return text("ran as a task")
    raise ValueError(f"no tool {name}")


@server.call_tool()
async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
    ctx = server.request_context
    if name not in TOOLS:
        return text(f"unknown tool {name}", True)
    ctx.experimental.validate_for_tool(TOOLS[name])
    if ctx.experimental.is_task:

        async def work(task: ServerTaskContext) -> Any:
            return await body(name, arguments, task)

        return await ctx.experimental.run_task(work)
    return await body(name, arguments, None)


async def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server  # type: ignore[import-not-found]

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve_http(port: int) -> None:
    """Serve stateful Streamable HTTP on 127.0.0.1:port from a socket bound here (so port 0 works)."""
    import uvicorn  # type: ignore[import-not-found]
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager  # type: ignore[import-not-found]
    from starlette.applications import Starlette  # type: ignore[import-not-found]
    from starlette.routing import Route  # type: ignore[import-not-found]

    manager = StreamableHTTPSessionManager(app=server, event_store=None, json_response=False, stateless=False)

    class Endpoint:
        """The session manager as an ASGI endpoint (a class, so Starlette passes the raw scope)."""

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await manager.handle_request(scope, receive, send)

    @asynccontextmanager
    async def lifespan(_app: Any) -> Any:
        async with manager.run():
            yield

    app = Starlette(routes=[Route("/mcp", endpoint=Endpoint())], lifespan=lifespan)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen(128)  # before saying so: a client that connects at once is queued, never refused
    print(f"listening on {sock.getsockname()[1]}", flush=True)
    # Nothing else goes to stdout: whoever started us may stop reading it now.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])


def main(argv: list[str]) -> int:
    """Serve on the transport the command line names."""
    if argv == ["stdio"]:
        anyio.run(serve_stdio)
        return 0
    if len(argv) == 2 and argv[0] == "http" and argv[1].isdigit():
        serve_http(int(argv[1]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
