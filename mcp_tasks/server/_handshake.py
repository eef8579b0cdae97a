"""What every request must carry and what the server says of itself: the ``_meta`` envelope
(protocol version and client capabilities, checked before any method runs), the
``server/discover`` answer, and the error for a request that needs the Tasks extension undeclared.
"""

from __future__ import annotations

from typing import Any

from mcp_tasks._errors import INVALID_PARAMS, MISSING_REQUIRED_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION, McpError
from mcp_tasks._wire import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, META_SERVER_INFO, TASKS_EXTENSION

__all__ = ["check_envelope", "discover_result", "tasks_required"]

_TASKS_REQUIRED: dict[str, Any] = {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}


def check_envelope(params: dict[str, Any], supported_versions: list[str]) -> dict[str, Any]:
    """The request's ``_meta``, once it names a supported version and the client's capabilities."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise McpError(INVALID_PARAMS, "Missing required _meta fields: protocolVersion, clientCapabilities")
    version = meta.get(META_PROTOCOL_VERSION)
    if not isinstance(version, str):
        raise McpError(INVALID_PARAMS, f"Missing required _meta field {META_PROTOCOL_VERSION}")
    if not isinstance(meta.get(META_CLIENT_CAPABILITIES), dict):
        raise McpError(INVALID_PARAMS, f"Missing required _meta field {META_CLIENT_CAPABILITIES}")
    if version not in supported_versions:
        raise McpError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": list(supported_versions), "requested": version},
        )
    return meta


def discover_result(
    name: str, version: str, supported_versions: list[str], *, listen: bool, tasks: bool
) -> dict[str, Any]:
    """The ``server/discover`` result: versions, capabilities and the server's name."""
    capabilities: dict[str, Any] = {"tools": {"listChanged": listen}}
    if tasks:
        capabilities["extensions"] = {TASKS_EXTENSION: {}}
    return {
        "resultType": "complete",
        "supportedVersions": list(supported_versions),
        "capabilities": capabilities,
        "ttlMs": 0,
        "cacheScope": "public",
        "_meta": {META_SERVER_INFO: {"name": name, "version": version}},
    }


def tasks_required(message: str) -> McpError:
    """The error for a request that needs the Tasks extension declared, naming it as required."""
    return McpError(MISSING_REQUIRED_CAPABILITY, message, _TASKS_REQUIRED)
