"""The reference server with the tools the conformance suite's server ``tasks-*`` scenarios
expect (the "Required server fixtures" of each scenario), for tests/interop/test_conformance_server.py.
"""

from __future__ import annotations

from typing import Any

from mcp_tasks._errors import INTERNAL_ERROR, McpError
from mcp_tasks.server import Server, ToolContext, ToolError, ToolResult

FORM = {"type": "object", "properties": {"confirm": {"type": "boolean"}}}
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def make() -> Server:
    """A fresh server with the fixtures."""
    server = Server("mcp_tasks-conformance-fixture", poll_interval=0.1, task_ttl=600)

    @server.tool()
    def greet(ctx: ToolContext, name: str) -> ToolResult:
        """Say hello, synchronously."""
        return ToolResult(content=[{"type": "text", "text": f"Hello, {name}!"}])

    @server.tool(task="optional")
    def slow_compute(ctx: ToolContext, seconds: float = 0, label: str = "") -> ToolResult:
        """Sleep `seconds` (cancellable: a cancelled task settles as cancelled), then answer."""
        ctx.sleep(seconds)
        return ToolResult(content=[{"type": "text", "text": f"computed {label} after {seconds}s"}])

    @server.tool(task="required")
    def failing_job(ctx: ToolContext) -> Any:
        """A task whose tool reports an execution error after about a second."""
        ctx.sleep(1.0)
        raise ToolError("the job failed")

    @server.tool(task="optional")
    def protocol_error_job(ctx: ToolContext) -> Any:
        """A task that fails at the protocol level."""
        raise McpError(INTERNAL_ERROR, "the job broke")

    @server.tool(task="optional")
    def confirm_delete(ctx: ToolContext, filename: str = "") -> ToolResult:
        """Ask for one confirmation, then answer."""
        answer = ctx.elicit("confirm", f"Delete {filename}?", FORM)
        return ToolResult(content=[{"type": "text", "text": f"answer: {answer}"}])

    @server.tool(task="optional")
    def multi_input(ctx: ToolContext) -> ToolResult:
        """Ask for two inputs at once."""
        form = {"method": "elicitation/create", "params": {"message": "Go?", "requestedSchema": FORM}}
        answers = ctx.ask_all({"first": form, "second": form})
        return ToolResult(content=[{"type": "text", "text": f"answers: {answers}"}])

    @server.tool(task="required")
    def test_tool_with_task(ctx: ToolContext) -> ToolResult:
        """Ask for a user name, then answer with it."""
        answer = ctx.elicit("user_name", "Your name?", NAME_FORM)
        name = (answer.get("content") or {}).get("name") if isinstance(answer, dict) else None
        return ToolResult(content=[{"type": "text", "text": f"Hello, {name}!"}])

    return server
