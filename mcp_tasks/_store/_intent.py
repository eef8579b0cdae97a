"""`Intent`: a tool call a store-backed client recorded before sending it (tool, endpoint, a
digest of its arguments, a key), joined by its task id (or its immediate result) when the answer
comes. An intent never joined is a call whose outcome is unknown: its process died, or the store
failed, between the two. The store methods for intents are optional (`INTENT_METHODS`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from typing import Any

import attrs

from mcp_tasks._redact import short_id, shown_endpoint
from mcp_tasks._store._error import StoreError

__all__ = ["INTENT_METHODS", "MAX_KEY", "Intent", "OutcomeUnknown", "check_key", "digest_of", "result_json"]

INTENT_METHODS = ("record_intent", "join_intent", "get_intent", "unrecorded_intents", "forget_intent")
"""What a store needs for calls durable before they are sent; a store without them still works."""
MAX_KEY = 200


def check_key(key: object) -> str:
    """A call's ``key=``: a non-empty string of printable characters, at most `MAX_KEY` long."""
    if not isinstance(key, str):
        raise TypeError(f"key must be a string or None, got {type(key).__name__}")
    if not key or len(key) > MAX_KEY or not key.isprintable():
        raise ValueError(f"key must be 1 to {MAX_KEY} printable characters")
    return key


def digest_of(tool: str, arguments: Mapping[str, Any] | None) -> str:
    """A digest of a call (its tool and arguments, keys sorted): two calls alike have one digest."""
    text = json.dumps([tool, dict(arguments or {})], sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def result_json(result: Mapping[str, Any] | None) -> str | None:
    """An immediate result as JSON text for a store's column (None without one)."""
    return None if result is None else json.dumps(dict(result), ensure_ascii=False, separators=(",", ":"))


def _text(instance: object, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{attribute.name} must be a non-empty string, got {value!r}")


@attrs.frozen(repr=False)
class Intent:
    """A call recorded before it was sent: where (`endpoint`, as a `TaskRef`'s), under which `key`
    (the caller's, or one the client made), the `tool`, the `digest` of tool and arguments (not
    the arguments: they may be secret) and when (`created_at`). `task_id` joins it when the server
    made the call a task; `result` when it answered at once. With neither (`recorded` False) the
    call was started and its outcome never recorded.
    """

    endpoint: str = attrs.field(validator=_text)
    key: str = attrs.field(validator=_text)
    tool: str = attrs.field(validator=_text)
    digest: str = attrs.field(validator=_text)
    created_at: float = attrs.field(factory=time.time)
    task_id: str | None = None
    result: dict[str, Any] | None = attrs.field(default=None, eq=False, hash=False)

    @property
    def recorded(self) -> bool:
        """Whether the call's outcome joined it (its task id, or its immediate result)."""
        return self.task_id is not None or self.result is not None

    @classmethod
    def from_row(
        cls, endpoint: str, key: str, tool: str, digest: str, created_at: float, task_id: str | None, result: str | None
    ) -> Intent:
        """An intent from a store's row (`result` as `result_json` wrote it)."""
        kept = json.loads(result) if result is not None else None
        if kept is not None and not isinstance(kept, dict):
            raise ValueError(f"an intent's result must be a JSON object, got {type(kept).__name__}")
        return cls(endpoint, key, tool, digest, float(created_at), task_id, kept)

    def __repr__(self) -> str:
        joined = (
            f"task_id={short_id(self.task_id)!r}"
            if self.task_id is not None
            else "answered at once"
            if self.result is not None
            else "started, id never recorded"
        )
        return f"Intent(key={self.key!r}, tool={self.tool!r}, endpoint={shown_endpoint(self.endpoint)!r}, {joined})"


class OutcomeUnknown(StoreError):
    """A call under a key already recorded was started, but its task id (or its result) never
    joined the record: its process died or its store failed in between, so whether the server ran
    it is unknown. The tool is not called again; `intent` is what the store keeps of the call.
    """

    def __init__(self, intent: Intent) -> None:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(intent.created_at))
        super().__init__(
            f"the call of {intent.tool!r} under key {intent.key!r} was started at {when} but its task id was "
            "never recorded: its outcome is unknown (it was not called again; check the server, then forget the "
            "intent with store.forget_intent(endpoint, key) to call it anew)"
        )
        self.intent = intent
