"""The wire: JSON-RPC messages, the 2026-07-28 `_meta` envelope, and the HTTP header rules.

Shared by the client and the reference server; it holds data and pure functions, no I/O.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final

from mcp_tasks._errors import McpError, ProtocolError

__all__ = [
    "EXTENSION_RESULT_TYPES",
    "IDEMPOTENT_METHODS",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "META_SUBSCRIPTION_ID",
    "NAME_PARAMS",
    "PROTOCOL_VERSION",
    "TASKS_EXTENSION",
    "declares_extension",
    "decode_header_value",
    "decode_response",
    "dumps",
    "encode_header_value",
    "loads",
    "malformed",
    "mcp_name",
    "merge_meta",
    "notification",
    "param_header_values",
    "param_headers",
    "request",
    "subscription_id",
    "valid_id",
]

PROTOCOL_VERSION = "2026-07-28"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

# Which param each method mirrors into the HTTP `Mcp-Name` header. The task methods are listed
# here as data: the Tasks extension makes the header a MUST for them.
NAME_PARAMS: Mapping[str, str] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}

# resultType values an extension adds, the extension that must be declared on the request, and
# the methods that may answer with them.
EXTENSION_RESULT_TYPES: Mapping[str, tuple[str, frozenset[str]]] = {
    "task": (TASKS_EXTENSION, frozenset({"tools/call"})),
}

# Requests that change nothing on the server when sent twice: safe to retry after any transient
# failure. Anything else (tools/call, tasks/update) is re-sent only when it never left the client.
IDEMPOTENT_METHODS: frozenset[str] = frozenset(
    {
        "ping",
        "server/discover",
        "initialize",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "tasks/get",
        "tasks/list",
        "tasks/result",
        "tasks/cancel",
        "subscriptions/listen",
    }
)

_BASE64_PREFIX = "=?base64?"
_BASE64_SUFFIX = "?="


def dumps(message: Any) -> bytes:
    """Compact UTF-8 JSON; NaN and infinities are refused, since JSON has no such numbers."""
    try:
        return _ENCODER.encode(message).encode()
    except (TypeError, ValueError) as exc:
        raise ValueError(f"message is not JSON-serializable: {exc}") from exc


MAX_JSON_DEPTH: Final = 512
"""The deepest nesting of arrays and objects a message may have (the stdlib's own limit is the
recursion limit, which fails with `RecursionError` deep inside the decoder)."""

MAX_JSON_BYTES: Final = 64 * 1024 * 1024
"""The largest JSON text decoded: room for large results, not for a runaway server."""

_STRING_BYTES = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_STRING_TEXT = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET_BYTES = bytes(b for b in range(256) if b not in b"[]{}")
_NESTING = tuple(1 if b in b"[{" else -1 if b in b"]}" else 0 for b in range(256))
# A lone surrogate can come only from a \uD800-\uDFFF escape or its (invalid) UTF-8 bytes.
_SURROGATE_BYTES = re.compile(rb"\\u[dD][89abcdefABCDEF]|\xed[\xa0-\xbf]")
_SURROGATE_TEXT = re.compile(r"\\u[dD][89abcdefABCDEF]|[\ud800-\udfff]")


def loads(data: bytes | str) -> Any:
    """Parse one JSON text from the wire; a failure is a ValueError that says what was wrong.

    Refused: more than `MAX_JSON_BYTES`, nesting deeper than `MAX_JSON_DEPTH`, NaN and the
    infinities (JSON has no such numbers), and strings holding a lone surrogate (no wire can carry
    them back: a task id like that could never be sent again).
    """
    if len(data) > MAX_JSON_BYTES:
        raise ValueError(f"JSON text of {len(data)} bytes is over the limit of {MAX_JSON_BYTES}")
    if _nesting(data) > MAX_JSON_DEPTH:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        # json.loads with hooks makes a decoder per call: one, made once, does the same work.
        text = data if isinstance(data, str) else data.decode(json.detect_encoding(data), "surrogatepass")
        value = _DECODER.decode(text)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    suspect = _SURROGATE_BYTES.search(data) if isinstance(data, bytes) else _SURROGATE_TEXT.search(data)
    if suspect:
        try:
            json.dumps(value, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            raise ValueError("JSON string holding a lone surrogate (not valid Unicode text)") from None
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"JSON has no {name}")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"JSON number {text[:20]} is out of range")
    return value


_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_DECODER: Final = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)


def _nesting(data: bytes | str) -> int:
    """The deepest nesting of brackets outside strings (a cheap upper bound first)."""
    if isinstance(data, str):
        if data.count("[") + data.count("{") <= MAX_JSON_DEPTH:
            return 0
        data = _STRING_TEXT.sub("", data).encode("ascii", "ignore")
    else:
        if data.count(b"[") + data.count(b"{") <= MAX_JSON_DEPTH:
            return 0
        data = _STRING_BYTES.sub(b"", data)
    brackets = data.translate(None, _NOT_BRACKET_BYTES)
    return max(itertools.accumulate(map(_NESTING.__getitem__, brackets)), default=0)


def request(request_id: int | str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC request message."""
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-RPC notification message."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def valid_id(value: object) -> bool:
    """Whether a value can be a JSON-RPC request id here: a string or an integer."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def merge_meta(*layers: Mapping[str, Any] | None) -> dict[str, Any]:
    """Merge `_meta` maps one level deep, later layers winning key by key."""
    merged: dict[str, Any] = {}
    for layer in layers:
        if layer:
            merged.update(layer)
    return merged


def declares_extension(meta: Mapping[str, Any], extension: str) -> bool:
    """Whether a request's `_meta` declares `extension` in its client capabilities."""
    caps = meta.get(META_CLIENT_CAPABILITIES)
    if not isinstance(caps, Mapping):
        return False
    extensions = caps.get("extensions")
    return isinstance(extensions, Mapping) and isinstance(extensions.get(extension), Mapping)


def subscription_id(params: object) -> object:
    """The subscription a notification belongs to, from its `_meta`, or None."""
    if isinstance(params, Mapping):
        meta = params.get("_meta")
        if isinstance(meta, Mapping):
            return meta.get(META_SUBSCRIPTION_ID)
    return None


def mcp_name(method: str, params: Mapping[str, Any] | None) -> str | None:
    """The value of the `Mcp-Name` header for a request, or None when the method has none."""
    key = NAME_PARAMS.get(method)
    if key is None or params is None:
        return None
    value = params.get(key)
    return value if isinstance(value, str) else None


def encode_header_value(value: str) -> str:
    """A header value as sent: plain when it is visible ASCII, else the `=?base64?…?=` form."""
    if _plain_header_safe(value):
        return value
    return _BASE64_PREFIX + base64.b64encode(value.encode()).decode("ascii") + _BASE64_SUFFIX


def decode_header_value(value: str) -> str:
    """Undo `encode_header_value`; a malformed base64 form is a ValueError."""
    if value.startswith(_BASE64_PREFIX) and value.endswith(_BASE64_SUFFIX) and len(value) >= 11:
        body = value[len(_BASE64_PREFIX) : -len(_BASE64_SUFFIX)]
        try:
            return base64.b64decode(body, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise ValueError(f"malformed base64 header value: {exc}") from exc
    return value


_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_HEADER_TYPES = frozenset({"string", "integer", "boolean"})


def param_headers(input_schema: object) -> dict[str, str]:
    """The arguments a tool mirrors into ``Mcp-Param-{Name}`` headers, from the ``x-mcp-header``
    annotations of its input schema: ``{argument: header name}``.

    Raises ValueError for an annotation a client must refuse (SEP-2243): an empty name, one that is
    not an HTTP token (a space, a colon, a non-ASCII or control character), a name used twice
    (case does not count), or one on a property that is not a string, integer or boolean.
    """
    if not isinstance(input_schema, Mapping):
        return {}
    properties = input_schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    headers: dict[str, str] = {}
    seen: set[str] = set()
    for argument, spec in properties.items():
        if not isinstance(spec, Mapping) or "x-mcp-header" not in spec:
            continue
        name = spec["x-mcp-header"]
        if not isinstance(name, str) or not name:
            raise ValueError(f"argument {argument!r}: x-mcp-header must be a non-empty string")
        if not set(name) <= _TOKEN:
            raise ValueError(f"argument {argument!r}: x-mcp-header {name!r} is not a valid header name")
        if name.lower() in seen:
            raise ValueError(f"argument {argument!r}: x-mcp-header {name!r} is used twice")
        if spec.get("type") not in _HEADER_TYPES:
            raise ValueError(f"argument {argument!r}: x-mcp-header needs a string, integer or boolean property")
        seen.add(name.lower())
        headers[argument] = name
    return headers


def param_header_values(headers: Mapping[str, str], arguments: Mapping[str, Any] | None) -> dict[str, str]:
    """The ``Mcp-Param-{Name}`` headers of one call: each annotated argument that has a value, as
    text (``true``/``false`` for booleans), in the base64 form when it is not plain ASCII.
    """
    values: dict[str, str] = {}
    for argument, name in headers.items():
        value = (arguments or {}).get(argument)
        if value is None:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, float)):
            text = json.dumps(value)
        elif isinstance(value, str):
            text = value
        else:
            continue
        values["Mcp-Param-" + name] = encode_header_value(text)
    return values


_PLAIN_HEADER = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")
"""Visible ASCII, spaces inside only: a value every server reads as it is (one C-level match)."""


def _plain_header_safe(value: str) -> bool:
    return _PLAIN_HEADER.fullmatch(value) is not None and not value.startswith(_BASE64_PREFIX)


def malformed(message: str, cause: Any = None) -> ProtocolError:
    """A message from the server that breaks the protocol: a `ProtocolError` (never retried)."""
    return ProtocolError(message, cause=cause)


def decode_response(message: object) -> dict[str, Any]:
    """The result of a JSON-RPC response message; its error raised as `McpError`."""
    if not isinstance(message, dict):
        raise malformed("The server sent a response that is not a JSON object", message)
    has_result = "result" in message
    has_error = "error" in message
    if has_result == has_error:
        raise malformed("The server sent a response with both or neither of result and error", message)
    if has_error:
        raise McpError.from_wire(message["error"])
    result = message["result"]
    if not isinstance(result, dict):
        raise malformed("The server sent a result that is not a JSON object", message)
    return result
