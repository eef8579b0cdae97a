"""Servers that replay hostile answers, for the fuzz test (they share no code with mcp_tasks.server)."""
