"""`TaskRef`: what a store keeps of one task, enough to find it again from another process."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import attrs

from mcp_tasks._call_text import arguments_text, kept_arguments
from mcp_tasks._errors import InvalidStatus
from mcp_tasks._redact import short_id, shown_endpoint
from mcp_tasks._status import Era, Status

__all__ = ["FORMAT", "GONE", "NewerRecord", "TaskRef"]

FORMAT = 1
"""The version of the JSON a `TaskRef` is saved as; a larger one was written by a newer mcp_tasks."""


class NewerRecord(ValueError):
    """A saved record of a format newer than this mcp_tasks reads (upgrade it to read the record)."""

    def __init__(self, found: object) -> None:
        super().__init__(
            f"the record was written by a newer mcp_tasks (format {found}; this one reads up to {FORMAT}): "
            "upgrade mcp_tasks to read it"
        )
        self.found = found


def _era(value: object) -> Era:
    if value not in ("modern", "legacy"):
        raise ValueError(f"era must be 'modern' or 'legacy', got {value!r}")
    return value


GONE = ("expired", "forgotten")
"""Why a task the server no longer knows ended: past its ``createdAt + ttlMs``, or not."""


def _gone(instance: object, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and value not in GONE:
        raise ValueError(f"gone must be None, 'expired' or 'forgotten', got {value!r}")


TRACE_KEYS = ("traceparent", "tracestate")
"""The W3C trace context a ref keeps of the call that created its task (nothing else: no baggage)."""
MAX_TRACE_TEXT = 4096


def _trace_context(value: object) -> dict[str, str] | None:
    """A ref's ``trace_context``: None, or a mapping with a ``traceparent`` string and maybe a
    ``tracestate`` one (other keys are dropped).
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"trace_context must be a mapping or None, got {type(value).__name__}")
    kept = {key: value[key] for key in TRACE_KEYS if key in value}
    for key, text in kept.items():
        if not isinstance(text, str) or not text or len(text) > MAX_TRACE_TEXT:
            raise ValueError(f"trace_context[{key!r}] must be a non-empty string of at most {MAX_TRACE_TEXT} chars")
    if "traceparent" not in kept:
        raise ValueError("trace_context needs a 'traceparent'")
    return kept


def _text(name: str) -> Any:
    def check(instance: object, attribute: object, value: object) -> None:
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string, got {value!r}")

    return check


@attrs.frozen(repr=False)
class TaskRef:
    """A task as a store keeps it: where it runs (`endpoint`: the URL for HTTP, the command line
    for stdio, ``direct:<server name>`` in-process), its id, its era, the tool that made it, when
    (`created_at`, seconds since the epoch) and the last status read (None before any).
    `trace_context`: when a traced client created the task, the W3C ``traceparent`` (and
    ``tracestate``) of the ``tools/call`` that did, so that a wait in another process links to it.
    `gone`: None, or why the task ended without an outcome: the server answered -32602 for it
    (it no longer knows it), ``"expired"`` past its ``createdAt + ttlMs``, else ``"forgotten"``;
    such a ref is `finished` (its result is lost). `arguments`: the call's arguments as a store
    keeps them (None when not known): values under secret-looking keys (``api_key``,
    ``password``...) hidden as ``***``, what JSON cannot hold as its ``repr``, about 2,000
    characters at most (the rest cut with ``…``); shown in short beside `tool`.

    Its repr shows a short id only (a task id is a bearer credential), and the endpoint without
    its query or userinfo (they may carry a key); `to_json` keeps both whole.
    """

    endpoint: str = attrs.field(validator=_text("endpoint"))
    task_id: str = attrs.field(validator=_text("task_id"))
    era: Era = attrs.field(default="modern", converter=_era)
    tool: str | None = None
    created_at: float = attrs.field(factory=time.time)
    last_status: Status | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(Status))
    )
    trace_context: dict[str, str] | None = attrs.field(default=None, converter=_trace_context, hash=False)
    gone: str | None = attrs.field(default=None, validator=_gone)
    arguments: dict[str, Any] | None = attrs.field(default=None, converter=kept_arguments, hash=False)

    @property
    def finished(self) -> bool:
        """Whether the task is over: the last status read was terminal (completed, failed or
        cancelled), or the server no longer knows the task (`gone`).
        """
        return self.gone is not None or (self.last_status is not None and self.last_status.terminal)

    @property
    def session_id(self) -> str | None:
        """The 2025-era HTTP session the task belongs to (from its last status), else None."""
        return self.last_status.session_id if self.last_status is not None else None

    def with_status(self, status: Status) -> TaskRef:
        """A copy with `status` as its last status."""
        return attrs.evolve(self, last_status=status)

    def to_json(self) -> str:
        """The ref as one JSON object (`TaskRef.from_json` reads it back), with its format version."""
        saved: dict[str, Any] = {
            "format": FORMAT,
            "endpoint": self.endpoint,
            "taskId": self.task_id,
            "era": self.era,
            "tool": self.tool,
            "createdAt": self.created_at,
            "lastStatus": self.last_status.to_map() if self.last_status is not None else None,
        }
        if self.trace_context is not None:
            saved["traceContext"] = dict(self.trace_context)  # format 1 still: older readers skip it
        if self.gone is not None:
            saved["gone"] = self.gone  # likewise (a store keeps `finished` in a column of its own)
        if self.arguments is not None:
            saved["arguments"] = self.arguments  # likewise: a record without them reads as None
        return json.dumps(saved, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> TaskRef:
        """A ref from `to_json`'s text: `NewerRecord` when a newer mcp_tasks wrote it, `ValueError`
        when it is not such a record.
        """
        try:
            saved = json.loads(text)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"a TaskRef must be a JSON object: {exc}") from None
        if not isinstance(saved, dict):
            raise ValueError(f"a TaskRef must be a JSON object, got {type(saved).__name__}")
        found = saved.get("format")
        if isinstance(found, bool) or not isinstance(found, int) or found < 1:
            raise ValueError(f"a TaskRef needs a positive integer format, got {found!r}")
        if found > FORMAT:
            raise NewerRecord(found)
        created = saved.get("createdAt")
        if isinstance(created, bool) or not isinstance(created, (int, float)):
            raise ValueError(f"createdAt must be a number, got {created!r}")
        tool = saved.get("tool")
        if tool is not None and not isinstance(tool, str):
            raise ValueError(f"tool must be a string or null, got {tool!r}")
        last = saved.get("lastStatus")
        try:
            status = Status.from_map(last) if last is not None else None
        except InvalidStatus as exc:
            raise ValueError(f"lastStatus is not a task status: {exc}") from None
        traced = saved.get("traceContext")
        if traced is not None and not isinstance(traced, dict):
            raise ValueError(f"traceContext must be an object or null, got {traced!r}")
        arguments = saved.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise ValueError(f"arguments must be an object or null, got {type(arguments).__name__}")
        return cls(
            endpoint=saved.get("endpoint"),  # type: ignore[arg-type]
            task_id=saved.get("taskId"),  # type: ignore[arg-type]
            era=saved.get("era"),
            tool=tool,
            created_at=float(created),
            last_status=status,
            trace_context=traced,
            gone=saved.get("gone"),
            arguments=arguments,
        )

    def __repr__(self) -> str:
        last = self.last_status.wire_status if self.last_status is not None else None
        return (
            f"TaskRef(task_id={short_id(self.task_id)!r}, tool={self.tool!r}, "
            f"{'' if self.arguments is None else f'arguments={arguments_text(self.arguments)!r}, '}"
            f"endpoint={shown_endpoint(self.endpoint)!r}, "
            f"era={self.era!r}, last_status={last!r}{'' if self.gone is None else f', gone={self.gone!r}'})"
        )
