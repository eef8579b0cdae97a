"""Foreign stdio servers: small scripts that speak newline-delimited JSON-RPC with the habits of
real servers (and their wrappers), sharing no code with mcp_tasks."""
