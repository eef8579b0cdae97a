"""The server module the command-line tests run (`SERVER_MODULE`, written as a file for a
``module:attr`` or stdio target), and the same server over HTTP in the test's process.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from contextlib import contextmanager

from mcp_tasks.server import Server, serve_http

SERVER_MODULE = textwrap.dedent(
    """
    from mcp_tasks.server import Server, ToolError

    server = Server(poll_interval=0.05)

    @server.tool(task="optional")
    def ask_name(ctx) -> dict:
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        answer = ctx.elicit("name", "What is your name?", schema)
        return {"hello": (answer.get("content") or {}).get("name"), "action": answer["action"]}

    @server.tool(task="optional")
    def hold(ctx) -> dict:
        ctx.report("holding")
        ctx.sleep(3600)
        return {}

    @server.tool(task="optional")
    def boom(ctx) -> dict:
        raise RuntimeError("disk full")

    @server.tool(task="forbidden")
    def shout(ctx, text: str) -> dict:
        return {"text": text.upper()}

    @server.tool(task="optional")
    def refuse(ctx) -> dict:
        raise ToolError("no such report")
    """
)


@contextmanager
def served_over_http() -> Iterator[str]:
    """`SERVER_MODULE`'s server over HTTP, in this process; its URL."""
    server = Server(poll_interval=0.05)
    exec(SERVER_MODULE.replace("server = Server(poll_interval=0.05)", ""), {"server": server})
    with serve_http(server) as http:
        yield http.url
    server.close()
