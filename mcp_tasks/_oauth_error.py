"""The error of an OAuth flow that could not get a token (kind ``authorization``)."""

from __future__ import annotations

from typing import Any

from mcp_tasks._errors import CONNECTION_CLOSED, McpError

__all__ = ["OAuthError"]


class OAuthError(McpError):
    """Authorization failed: discovery, registration, the user's consent or a token request.

    Its message names what was wrong (a URL, a mismatched issuer, the server's ``error``) and never
    a token, code, verifier or secret. Kind ``authorization``; `data` may hold the server's OAuth
    ``error`` code.
    """

    def __init__(self, message: str, *, data: Any = None) -> None:
        super().__init__(CONNECTION_CLOSED, message, data, "authorization")
