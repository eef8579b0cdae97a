"""OAuth 2.1 for MCP servers over Streamable HTTP: `OAuth`, a `requests` auth object, and the token
stores it keeps tokens in. One idea per module: `flow` (the auth object: the token on each request,
the `requests` response hook and the transport-driven flow), `options` (its options, checked),
`renewal` (a better token: another thread's, a refresh, a new authorization), `records` (the
tokens and registration kept per server), `registration` (who the client is at an authorization
server), `token_endpoint` (token requests with client authentication, DPoP and nonces), `code`
(the authorization code grant's front channel), `discovery` (protected resource and authorization
server metadata), `challenge` (``WWW-Authenticate``), `http` (the flow's own requests), `redirect`
(the default authorization step), `tokens` (the stores), `flights` (one flow per key), `filelock`
(the token file's lock between processes), `cli` (the command line's `OAuth`), and for the signed
grants of the ``mcp_tasks[jwt]`` extra `jose` (signing), `dpop` (proofs and nonces), `grants`
(client assertions, the identity provider's token exchange).
"""

from mcp_tasks._oauth.cli import cli_oauth
from mcp_tasks._oauth.flow import OAuth
from mcp_tasks._oauth.tokens import FileTokenStore, MemoryTokenStore, TokenStore

__all__ = ["FileTokenStore", "MemoryTokenStore", "OAuth", "TokenStore", "cli_oauth"]
