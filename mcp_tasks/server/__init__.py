"""The reference server: the 2026-07-28 protocol and the Tasks extension, for tests, demos and
your own test suites. It serves direct (`mcp_tasks.Client.direct(server)`), stdio
(``python -m mcp_tasks.server module:server``) and Streamable HTTP (`serve_http`).

    server = Server()

    @server.tool(task="optional")
    def export(ctx, id: int) -> dict:
        ctx.report("exporting")
        return {"id": id, "done": True}
"""

from mcp_tasks._exchange import Exchange
from mcp_tasks.server._http_server import HttpServer, serve_http
from mcp_tasks.server._server import Server
from mcp_tasks.server._stdio import serve_stdio
from mcp_tasks.server._tools import Cancelled, Tool, ToolContext, ToolError, ToolResult
from mcp_tasks.server._wsgi_app import McpWsgiApp

__all__ = [
    "Cancelled",
    "Exchange",
    "HttpServer",
    "McpWsgiApp",
    "Server",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "serve_http",
    "serve_stdio",
]
