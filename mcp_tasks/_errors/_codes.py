"""The JSON-RPC error codes this library names, and the kind of an error that came from a peer.

The codes this client makes are named for what they say; a server's own codes come through as sent.
"""

from __future__ import annotations

__all__ = [
    "AUTHORIZATION_FAILED",
    "CONNECTION_CLOSED",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "KINDS",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CAPABILITY",
    "PARSE_ERROR",
    "PROTOCOL_VIOLATION",
    "REQUEST_TIMEOUT",
    "SERVER_ERROR",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "kind_for_code",
]

# JSON-RPC 2.0's own codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# JSON-RPC leaves -32000..-32099 to implementations. MCP's SDKs and specification use -32000 and
# -32001 (below), -32002 (resource not found), -32020..-32022 (below) and -32042 (URL elicitation);
# this client's own codes sit at the far end of the range, clear of all of them.
CONNECTION_CLOSED = -32000
"""The connection closed or failed (as the MCP SDKs' ``ConnectionClosed``): a `TransportError`."""
SERVER_ERROR = -32000
"""A server's own generic failure: the first code of JSON-RPC's implementation-defined range, which
servers answer for their own reasons ("Bad Request: Missing session ID"). The same number as
`CONNECTION_CLOSED`; the name says which is meant where a server's answer is tested."""
REQUEST_TIMEOUT = -32001
"""A request, or a wait, got no answer in time."""
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
PROTOCOL_VIOLATION = -32090
"""The server broke the protocol (a `ProtocolError`): a malformed message or task, an answer to
another request, an unknown resultType, a conversation past this client's limits."""
AUTHORIZATION_FAILED = -32091
"""Authorization failed (an `OAuthError`, or a 401/403 that carried no JSON-RPC error)."""

KINDS = ("json_rpc", "protocol", "transport", "execution", "authorization", "extension")


def kind_for_code(code: int) -> str:
    """The kind of a JSON-RPC error that came from a peer, derived from its code."""
    if code in (PARSE_ERROR, INVALID_REQUEST):
        return "json_rpc"
    if code == INTERNAL_ERROR:
        return "execution"
    return "protocol"
