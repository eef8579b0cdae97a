"""The strict check of each field of a task map, shared by the fast decoder and the cattrs converter
(`mcp_tasks._status`), so that both agree: cattrs alone would turn ``"3"`` into 3 and ``"false"``
into True and hide a broken server. Each takes the value and the type cattrs passes, and returns
the decoded value or raises `ValueError` saying what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_tasks._redact import short_id
from mcp_tasks._task_state import KNOWN_STATES, MAX_SAFE_INT, Era, TaskState

__all__ = [
    "LEGACY_KEYS",
    "MISSING",
    "OPTIONAL_HOOKS",
    "PASSED_THROUGH",
    "PAYLOAD_HOOKS",
    "WIRE_NAMES",
    "as_is",
    "checked_error",
    "checked_input_requests",
    "checked_result",
    "decodes",
    "key_on_wire",
    "known_state",
    "positive_int_or_none",
    "required_text",
    "text_or_none",
    "wire_text",
]

MISSING = object()
"""A payload the status implies that the map does not carry."""


def required_text(value: Any, _type: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("must be a non-empty string")
    if not value.isascii() and not wire_text(value):
        raise ValueError("is not valid Unicode text (a lone surrogate)")
    return value


def wire_text(text: str) -> bool:
    """Whether a string can go on the wire (UTF-8 has no lone surrogates)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def known_state(value: Any, _type: Any) -> TaskState:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    return KNOWN_STATES.get(value, TaskState.UNKNOWN)


def text_or_none(value: Any, _type: Any) -> str | None:
    return value if isinstance(value, str) else None


def positive_int_or_none(value: Any, _type: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_SAFE_INT:
        return value
    return None


def checked_input_requests(value: Any, _type: Any) -> dict[str, dict[str, Any]]:
    if value is MISSING or not isinstance(value, dict):
        raise ValueError("must be an object of input requests")
    for key, request in value.items():
        if not isinstance(key, str) or not isinstance(request, dict):
            raise ValueError(f"entry {short_id(key)!r} must be an object")
    return dict(value)


def checked_result(value: Any, _type: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("must be an object")
    return value


def checked_error(value: Any, _type: Any) -> dict[str, Any]:
    shape = "must be an object with an integer code and a string message"
    if not isinstance(value, dict):
        raise ValueError(shape)
    code = value.get("code")
    if not isinstance(code, int) or isinstance(code, bool) or not isinstance(value.get("message"), str):
        raise ValueError(shape)
    if not -MAX_SAFE_INT <= code <= MAX_SAFE_INT:
        raise ValueError(f"has a code out of range (beyond ±{MAX_SAFE_INT})")
    return value


def as_is(value: Any, _type: Any) -> Any:
    return value


PAYLOAD_HOOKS = {"inputRequests": checked_input_requests, "result": checked_result, "error": checked_error}

OPTIONAL_HOOKS = {
    "status_message": text_or_none,
    "created_at": text_or_none,
    "last_updated_at": text_or_none,
    "ttl_ms": positive_int_or_none,
    "poll_interval_ms": positive_int_or_none,
}


def decodes(name: str, value: Any) -> bool:
    """Whether an optional field's wire value would decode to something (not None)."""
    return OPTIONAL_HOOKS[name](value, None) is not None


WIRE_NAMES = {
    "task_id": "taskId",
    "status": "status",
    "status_message": "statusMessage",
    "created_at": "createdAt",
    "last_updated_at": "lastUpdatedAt",
    "ttl_ms": "ttlMs",
    "poll_interval_ms": "pollIntervalMs",
    "input_requests": "inputRequests",
    "result": "result",
    "error": "error",
    "raw": "raw",
    "era": "era",
}
PASSED_THROUGH = frozenset({"raw", "era"})  # not on the wire: from_map supplies them (and session_id)
LEGACY_KEYS = {"ttlMs": "ttl", "pollIntervalMs": "pollInterval"}


def key_on_wire(key: str, era: Era, task: Mapping[str, Any]) -> str:
    """The key a field is read from (and written back to) in a map of this era."""
    legacy = LEGACY_KEYS.get(key)
    if era == "legacy" and legacy is not None and key not in task:
        return legacy
    return key
