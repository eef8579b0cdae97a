"""OAuth 2.1 for MCP servers over Streamable HTTP: `OAuth`, a `requests` auth object, and the token
stores it keeps tokens in. One idea per module: `flow` (the auth object), `discovery` (protected
resource and authorization server metadata), `challenge` (``WWW-Authenticate``), `http` (the
flow's own requests), `redirect` (the default authorization step), `tokens` (the stores),
`flights` (one flow per key), `filelock` (the token file's lock between processes), and for the
signed grants of the ``mcp_tasks[jwt]`` extra `jose` (signing), `dpop` (proofs and nonces),
`grants` (client assertions, the identity provider's token exchange).
"""

from mcp_tasks._oauth.flow import OAuth, cli_oauth
from mcp_tasks._oauth.tokens import FileTokenStore, MemoryTokenStore, TokenStore

__all__ = ["FileTokenStore", "MemoryTokenStore", "OAuth", "TokenStore", "cli_oauth"]
