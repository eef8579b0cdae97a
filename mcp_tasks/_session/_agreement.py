"""What a connection agreed with its server: the era, the revision, the server's capabilities.

A 2026-07-28 server answers ``server/discover``; a handshake server (2025-11-25 and older) refuses
it in its own ways (stdio: -32601 or -32602; HTTP: 400 with -32600 "Missing session ID" or -32000
"not initialized", or 404/405). Such an answer means "this is a handshake server": the client then
sends ``initialize`` offering 2025-11-25 and accepts the server's counter-offer of 2025-06-18 or
2025-03-26 (plain tools, no tasks). An `Agreement` is the frozen record of the outcome; it is
published in one assignment once the negotiation is complete, so a reader never sees half of one.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from mcp_tasks._errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    SERVER_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
    RequestTimeout,
    TransportError,
)
from mcp_tasks._wire import META_SERVER_INFO, PROTOCOL_VERSION, malformed

__all__ = [
    "HANDSHAKE_VERSIONS",
    "LEGACY_VERSION",
    "PROTOCOLS",
    "Agreement",
    "Era",
    "check_protocol",
    "from_discover",
    "from_initialize",
    "is_handshake_refusal",
    "joined",
    "offer",
    "pinned_modern",
]

Era = Literal["modern", "legacy"]

LEGACY_VERSION = "2025-11-25"
HANDSHAKE_VERSIONS = (LEGACY_VERSION, "2025-06-18", "2025-03-26")
"""The handshake revisions this client speaks, newest first (only the first has tasks)."""
PROTOCOLS = ("auto", PROTOCOL_VERSION, *HANDSHAKE_VERSIONS)
"""What ``protocol=`` accepts: ``"auto"`` (detect), or one revision to pin."""
HANDSHAKE_HTTP_STATUSES = frozenset({400, 404, 405})

_generations = itertools.count(1)


@attrs.frozen
class Agreement:
    """The outcome of one negotiation. A new negotiation (after a session expired) makes a new
    record with a new `generation`, so whoever saw the old one can tell.
    """

    era: Era
    version: str
    capabilities: dict[str, Any] = attrs.field(factory=dict)
    server_info: dict[str, Any] = attrs.field(factory=dict)
    discovered: dict[str, Any] | None = None
    generation: int = attrs.field(factory=lambda: next(_generations))
    declared: dict[str, Any] | None = None
    """The client capabilities this client declared in its ``initialize`` (what a 2025-era server
    may ask it for); None when it made no handshake (a modern connection, a joined session).
    """

    @property
    def legacy(self) -> bool:
        """True on a handshake (2025-era) connection."""
        return self.era == "legacy"


def check_protocol(protocol: object) -> str:
    """`protocol` when it is one `PROTOCOLS` names; ValueError otherwise."""
    if not isinstance(protocol, str) or protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}; got {protocol!r}")
    return protocol


def is_handshake_refusal(error: McpError) -> bool:
    """Whether `error`, the answer to a ``server/discover`` probe, says "a handshake server".

    JSON-RPC refusals of the method (-32601, -32602, -32600, -32000) and HTTP 400/404/405 do; a
    modern server's -32022, an authorization failure, a timeout or a connection that failed do not.
    """
    if isinstance(error, RequestTimeout) or error.code == UNSUPPORTED_PROTOCOL_VERSION:
        return False
    if error.kind == "authorization":  # a 401/403 nobody resolved: the answer, not the era
        return False
    if isinstance(error, TransportError):
        data = error.data
        status = data.get("status") if isinstance(data, dict) else None
        return status in HANDSHAKE_HTTP_STATUSES
    return error.code in (METHOD_NOT_FOUND, INVALID_PARAMS, INVALID_REQUEST, SERVER_ERROR)


def pinned_modern() -> Agreement:
    """A connection pinned to 2026-07-28: no probe; ``server/discover`` is sent when the
    capabilities are first asked for.
    """
    return Agreement("modern", PROTOCOL_VERSION)


def joined(version: str) -> Agreement:
    """A 2025-era session joined by id (another client made it): no handshake, so nothing is
    known of the server's capabilities.
    """
    return Agreement("legacy", version)


def from_discover(discovered: Mapping[str, Any]) -> Agreement:
    """The agreement a ``server/discover`` result makes."""
    if not isinstance(discovered.get("supportedVersions"), list):
        raise malformed("The server/discover result has no supportedVersions list", discovered)
    capabilities = discovered.get("capabilities")
    if capabilities is not None and not isinstance(capabilities, dict):
        raise malformed("The server/discover capabilities are not an object", discovered)
    info = discovered.get("serverInfo")
    meta = discovered.get("_meta")
    if not isinstance(info, dict) and isinstance(meta, dict):
        info = meta.get(META_SERVER_INFO)
    return Agreement(
        "modern",
        PROTOCOL_VERSION,
        capabilities or {},
        info if isinstance(info, dict) else {},
        dict(discovered),
    )


def from_initialize(
    result: Mapping[str, Any], offered: str, protocol: str, declared: Mapping[str, Any] | None = None
) -> Agreement:
    """The agreement an ``initialize`` result makes (`declared`: the client capabilities the
    request declared); a version this client does not speak is an McpError (kind protocol).
    """
    version = result.get("protocolVersion")
    acceptable = HANDSHAKE_VERSIONS if protocol == "auto" else (offered,)
    if not isinstance(version, str) or version not in acceptable:
        raise McpError(
            UNSUPPORTED_PROTOCOL_VERSION,
            f"The server answered initialize with protocol version {version!r}, which this client "
            f"does not speak (it offered {offered})",
            {"offered": offered, "supported": list(acceptable)},
            "protocol",
            result,
        )
    capabilities = result.get("capabilities")
    if capabilities is not None and not isinstance(capabilities, dict):
        raise malformed("The initialize capabilities are not an object", result)
    info = result.get("serverInfo")
    shown = info if isinstance(info, dict) else {}
    return Agreement(
        "legacy", version, capabilities or {}, shown, declared=None if declared is None else dict(declared)
    )


def offer(protocol: str) -> str:
    """The version to offer in ``initialize``."""
    return LEGACY_VERSION if protocol == "auto" else protocol
