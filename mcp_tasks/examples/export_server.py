"""An example MCP server with one task tool, served over stdio.

python -m mcp_tasks.examples.export_server            # stdio
python -m mcp_tasks.server mcp_tasks.examples.export_server:server --http 127.0.0.1:8765
"""

from __future__ import annotations

from typing import Any

from mcp_tasks.server import Server, ToolContext, ToolError, serve_stdio

server = Server("export-example", poll_interval=0.1)


@server.tool(task="optional")
def export(ctx: ToolContext, report: str, rows: int = 3) -> dict[str, Any]:
    """Export a report row by row, after asking the user to confirm."""
    if rows < 0:
        raise ToolError("rows must not be negative")
    answer = ctx.elicit(
        "confirm",
        f"Export {rows} rows of {report}?",
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
    )
    if answer.get("action") != "accept" or not answer.get("content", {}).get("ok"):
        return {"report": report, "exported": 0}
    for row in range(1, rows + 1):
        ctx.report(f"row {row} of {rows}")
        ctx.sleep(0.05)
    return {"report": report, "exported": rows}


@server.tool()
def ping(ctx: ToolContext) -> str:
    """Answer at once (never a task)."""
    return "pong"


if __name__ == "__main__":
    serve_stdio(server)
