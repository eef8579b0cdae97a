"""The headers a Streamable HTTP message carries of its own, for `HttpTransport`.

Headers follow the spec: ``MCP-Protocol-Version``, ``Mcp-Method``, and ``Mcp-Name`` (the tool
name, the uri, or ``params.taskId`` on tasks/get, tasks/update and tasks/cancel), in the
``=?base64?…?=`` form when a value is not plain visible ASCII; ``Mcp-Param-*`` headers come from
the client for tools whose arguments are annotated ``x-mcp-header``. A handshake session's
requests carry its own headers instead (see `transports._session`).

A module of its own because the spec's mapping from a message to its headers is one idea, apart
from how the message is sent (`transports._sender`) and what its answer means (`transports.http`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_tasks._wire import META_PROTOCOL_VERSION, PROTOCOL_VERSION, encode_header_value, mcp_name
from mcp_tasks.transports._session import LegacySession

__all__ = ["canonical", "message_headers"]

_CANONICAL = {name.lower(): name for name in ("Accept-Encoding", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name")}


def canonical(headers: dict[str, str]) -> dict[str, str]:
    """Headers with the names `message_headers` sets spelled as it spells them."""
    return {_CANONICAL.get(name.lower(), name): value for name, value in headers.items()}


def message_headers(
    message: dict[str, Any], session: LegacySession, listen: bool, extra: Mapping[str, str] | None
) -> dict[str, str]:
    """The message's own headers, over the fixed ones (``Content-Type``, ``Accept``, the
    client's `headers`), which each path adds itself (the plain path has them in its
    pool's request head), as it adds the session's. `listen`: the message opens a listen stream
    (asked for uncompressed); `extra`: headers of the caller's (``Mcp-Param-*``), last.
    """
    headers: dict[str, str] = {}
    method = message.get("method")
    if session.active or method == "initialize":
        # A handshake session: its own headers, none of the 2026-07-28 ones.
        headers.update(session.headers(method))
        if extra:
            headers.update(extra)
        return headers
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    meta = params.get("_meta")
    version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    headers["MCP-Protocol-Version"] = version if isinstance(version, str) else PROTOCOL_VERSION
    if isinstance(method, str):
        headers["Mcp-Method"] = encode_header_value(method)
        name = mcp_name(method, params)
        if name is not None:
            headers["Mcp-Name"] = encode_header_value(name)
    if listen:
        headers["Accept-Encoding"] = "identity"
    if extra:
        headers.update(extra)
    return headers
