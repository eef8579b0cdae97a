"""The demo: the reference server with an example tool, and one task followed end to end."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from mcp_tasks._client import Client
from mcp_tasks._input import InputHandlers
from mcp_tasks._redact import short_id
from mcp_tasks._status import Status
from mcp_tasks._tasks import await_task, call_tool, server_supports
from mcp_tasks.server import Server, ToolContext

__all__ = ["demo_server", "run_demo"]

POLL_SECONDS = 0.1


def demo_server() -> Server:
    """A reference server with one task tool, ``export``, that reports progress and asks first."""
    server = Server("mcp_tasks-demo", poll_interval=POLL_SECONDS)

    @server.tool(task="optional")
    def export(ctx: ToolContext, report: str = "sales", rows: int = 3) -> dict[str, Any]:
        """Export a report, row by row, after the user confirms."""
        ctx.report("preparing the export")
        ctx.sleep(0.2)
        answer = ctx.elicit(
            "confirm",
            f"Export {rows} rows of the {report} report?",
            {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]},
        )
        if answer.get("action") != "accept" or not answer.get("content", {}).get("confirm"):
            return {"report": report, "exported": 0, "note": "the user said no"}
        for row in range(1, rows + 1):
            ctx.report(f"exporting row {row} of {rows}")
            ctx.sleep(0.2)
        return {"report": report, "exported": rows, "file": f"{report}.csv"}

    return server


@contextlib.contextmanager
def _connect(transport: str, server: Server, handlers: InputHandlers) -> Iterator[Client]:
    if transport == "direct":
        with Client.direct(server, input_handlers=handlers) as client:
            yield client
    elif transport == "stdio":
        args = ["-m", "mcp_tasks.server", "mcp_tasks.cli._demo:demo_server"]
        with Client.stdio(sys.executable, args, input_handlers=handlers) as client:
            yield client
    elif transport == "http":
        from mcp_tasks.server import serve_http

        with serve_http(server) as http_server, Client.http(http_server.url, input_handlers=handlers) as client:
            yield client
    else:
        raise ValueError(f"transport must be direct, stdio or http, got {transport!r}")


def run_demo(transport: str = "direct", out: TextIO | None = None) -> dict[str, Any]:
    """Run the demo, telling `out` (stdout) what happens; returns the task's result."""
    stream = out if out is not None else sys.stdout

    def say(text: str) -> None:
        print(text, file=stream, flush=True)

    def confirm(params: dict[str, Any]) -> dict[str, Any]:
        say(f'     the server asks: "{params.get("message")}" -> the demo answers yes')
        return {"action": "accept", "content": {"confirm": True}}

    server = demo_server()
    where = {"direct": "in this process", "stdio": "as a subprocess (stdio)", "http": "on 127.0.0.1 (HTTP)"}
    say("mcp_tasks demo: a tool call that the server runs as a task.\n")
    try:
        with _connect(transport, server, InputHandlers(form=confirm)) as client:
            say(f'1. Started the reference server {where.get(transport, transport)}, with the tool "export".')
            say(f"2. Does the server support the Tasks extension? {'yes' if server_supports(client) else 'no'}.")
            arguments = {"report": "sales", "rows": 3}
            say(f"3. Calling export {json.dumps(arguments)} with the extension declared.")
            called = call_tool(client, "export", arguments)
            if not isinstance(called, Status):
                say("   The tool ran synchronously; its result came back at once.")
                return called
            say(
                f"   The server answered with a task, not a result: task {short_id(called.task_id)} is {called.status}."
            )
            say(f"4. Waiting for it in this thread (polling tasks/get every {POLL_SECONDS} s):")

            def show(status: Status) -> None:
                message = f": {status.status_message}" if status.status_message else ""
                say(f"   - {status.status}{message}")

            result = await_task(client, called, timeout=30, on_status=show)
            say(f"5. The result: {json.dumps(result.get('structuredContent', result))}")
            return result
    finally:
        server.close()
