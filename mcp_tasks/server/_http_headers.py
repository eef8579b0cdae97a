"""The MCP headers of a Streamable HTTP request, checked against its body as the spec requires:
``MCP-Protocol-Version`` equal to the body's version, ``Mcp-Method`` equal to its method,
``Mcp-Name`` equal to the tool name, uri or ``params.taskId`` (base64 form accepted), and each
``Mcp-Param`` header a tool's schema annotates equal to its argument. A pure decision on the
WSGI environ: the app turns a mismatch into HTTP 400 with -32020.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_tasks._errors import HEADER_MISMATCH, McpError
from mcp_tasks._exchange import ServesMessages
from mcp_tasks._wire import META_PROTOCOL_VERSION, NAME_PARAMS, decode_header_value, param_header_values, param_headers
from mcp_tasks.server._wsgi_types import Environ

__all__ = ["check_headers"]


def _check_param_headers(environ: Environ, params: dict[str, Any], tools: Mapping[str, Any]) -> McpError | None:
    """Each annotated argument of the tool must come in its Mcp-Param header, equal to the body."""
    tool = tools.get(params.get("name"))  # type: ignore[arg-type]
    if tool is None:
        return None
    try:
        annotated = param_headers(getattr(tool, "input_schema", None))
    except ValueError:
        return None
    arguments = params.get("arguments")
    for header, expected in param_header_values(annotated, arguments if isinstance(arguments, dict) else {}).items():
        sent = environ.get("HTTP_" + header.upper().replace("-", "_"))
        if sent is None:
            return McpError(HEADER_MISMATCH, f"Header mismatch: {header} header is missing")
        if decode_header_value(sent) != decode_header_value(expected):
            return McpError(HEADER_MISMATCH, f"Header mismatch: {header} does not match the argument")
    return None


def check_headers(environ: Environ, message: dict[str, Any], server: ServesMessages) -> McpError | None:
    """The mismatch between the request's headers and its body `message`, or None when they agree.

    `server` is asked for its ``tools`` (if it has them) to check a call's ``Mcp-Param`` headers.
    """
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    meta = params.get("_meta")
    header_version = environ.get("HTTP_MCP_PROTOCOL_VERSION")
    if header_version is None:
        return McpError(HEADER_MISMATCH, "Header mismatch: MCP-Protocol-Version header is missing")
    body_version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    if isinstance(body_version, str) and body_version != header_version:
        return McpError(
            HEADER_MISMATCH,
            f"Header mismatch: MCP-Protocol-Version {header_version!r} does not match the body's {body_version!r}",
        )
    method = message.get("method")
    if not isinstance(method, str):
        return None
    try:
        header_method = _decoded(environ.get("HTTP_MCP_METHOD"))
        if header_method != method:
            return McpError(HEADER_MISMATCH, f"Header mismatch: Mcp-Method does not match the body's method {method!r}")
        key = NAME_PARAMS.get(method)
        if key is not None and isinstance(params.get(key), str):
            header_name = _decoded(environ.get("HTTP_MCP_NAME"))
            if header_name is None:
                return McpError(HEADER_MISMATCH, f"Header mismatch: Mcp-Name header is missing (params.{key})")
            if header_name != params.get(key):
                return McpError(HEADER_MISMATCH, f"Header mismatch: Mcp-Name does not match params.{key}")
        if method == "tools/call":
            return _check_param_headers(environ, params, getattr(server, "tools", {}))
    except ValueError as exc:
        return McpError(HEADER_MISMATCH, f"Header mismatch: {exc}")
    return None


def _decoded(value: str | None) -> str | None:
    if value is None:
        return None
    # WSGI carries header values as latin-1 strings; the base64 form carries anything else.
    return decode_header_value(value)
