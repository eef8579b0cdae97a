"""A task's status as the client reads it: from a creation result, ``tasks/get``, or a
``notifications/tasks`` event. Decoded by one cattrs converter, built once, with strict hooks:
cattrs would otherwise turn ``"3"`` into 3 and ``"false"`` into True and hide a broken server.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Literal

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from mcp_tasks._display import pretty, status_html, status_rows
from mcp_tasks._errors import InvalidStatus
from mcp_tasks._redact import short_id

__all__ = ["Status", "TaskState"]

Era = Literal["modern", "legacy"]


class TaskState(str, enum.Enum):
    """A task's status. `UNKNOWN` stands for a value this client does not know (kept in
    ``Status.raw``); it is not terminal, and a wait treats it like `WORKING`.
    """

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value


_KNOWN_STATES = {state.value: state for state in TaskState if state is not TaskState.UNKNOWN}
_TERMINAL = frozenset({TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELLED})
_PAYLOAD = {
    TaskState.INPUT_REQUIRED: "inputRequests",
    TaskState.COMPLETED: "result",
    TaskState.FAILED: "error",
}


@attrs.frozen(repr=False)
class Status:
    """A task's status. Fields mirror the wire with snake_case names.

    `input_requests` holds the outstanding requests of an ``input_required`` task keyed by the key
    ``tasks/update`` answers them under (``{}`` otherwise); `result` the CallToolResult of a
    ``completed`` one; `error` the JSON-RPC error object of a ``failed`` one. `raw` is the map as
    the server sent it, ``_meta`` included. `era` says which protocol the task lives in. A status
    decoded from a creation result may lack its payload: see `detailed`.
    """

    task_id: str
    status: TaskState
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    input_requests: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    raw: dict[str, Any] = attrs.field(factory=dict)
    era: Era = "modern"

    @classmethod
    def from_map(cls, task: object, *, era: Era = "modern") -> Status:
        """Decode a task map from the wire; raises `InvalidStatus` naming the bad field.

        taskId must be a non-empty string and status a string. A creation result
        (``resultType: "task"``) needs no payload, but one it carries is checked; any other map
        needs the payload its status implies. Optional fields are coerced, not rejected: a
        statusMessage that is not a string, or a ttlMs that is not a positive integer, becomes None.
        The legacy era reads ``ttl`` and ``pollInterval`` where ``ttlMs`` and ``pollIntervalMs``
        are absent.
        """
        if not isinstance(task, Mapping):
            raise InvalidStatus("task", "must be a JSON object", task)
        try:
            status: Status = _converter.structure(_prepare(task, era), Status)
        except cattrs.ClassValidationError as exc:
            raise _invalid(exc, task, era) from None
        return status

    def to_map(self) -> dict[str, Any]:
        """The wire map of this status, to save as JSON and read back with `from_map`.

        It is `raw` with the fields laid over it, in the keys of its era, so for a status decoded
        from the wire ``Status.from_map(status.to_map(), era=status.era) == status``.
        """
        fields: dict[str, Any] = _converter.unstructure(self)
        if self.status is TaskState.UNKNOWN:
            fields["status"] = self.wire_status
        wire = dict(self.raw)
        for name, key in _WIRE_NAMES.items():
            if name in _PASSED_THROUGH:
                continue
            wire_key = _wire_key(key, self.era, self.raw)
            if key in fields:
                wire[wire_key] = fields[key]
            elif name in _OPTIONAL_HOOKS and wire_key in wire and _decodes(name, wire[wire_key]):
                del wire[wire_key]  # the field was cleared: the map must not bring it back
        return wire

    @property
    def terminal(self) -> bool:
        """True for completed, failed and cancelled, which never change."""
        return self.status in _TERMINAL

    @property
    def detailed(self) -> bool:
        """True when the status carries the payload it implies: input_requests for
        input_required, result for completed, error for failed. A creation result may not.
        """
        if self.status is TaskState.INPUT_REQUIRED:
            return bool(self.input_requests)
        if self.status is TaskState.COMPLETED:
            return isinstance(self.result, dict)
        if self.status is TaskState.FAILED:
            return isinstance(self.error, dict)
        return True

    @property
    def wire_status(self) -> str:
        """The status string as the server sent it (useful when `status` is UNKNOWN)."""
        value = self.raw.get("status")
        return value if isinstance(value, str) else self.status.value

    def with_input_requests(self, requests: Mapping[str, dict[str, Any]]) -> Status:
        """A copy whose `input_requests` are `requests` (for example only the pending ones)."""
        return attrs.evolve(self, input_requests=dict(requests))

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's pretty form: status, short id, message, timestamps and a payload summary."""
        pretty("Status", status_rows(self), printer, cycle)

    def _repr_html_(self) -> str:
        """The same as an HTML table, for notebooks."""
        return status_html(self)

    def __repr__(self) -> str:
        parts = [f"task_id={short_id(self.task_id)!r}", f"status={self.wire_status!r}"]
        if self.status_message is not None:
            parts.append(f"status_message={self.status_message!r}")
        if self.input_requests:
            parts.append(f"input_requests=[{', '.join(repr(short_id(k)) for k in sorted(self.input_requests))}]")
        if self.result is not None:
            parts.append(f"result=<{len(self.result)} keys>")
        if self.error is not None:
            parts.append(f"error={{code: {self.error.get('code')!r}}}")
        if self.era != "modern":
            parts.append(f"era={self.era!r}")
        return f"Status({', '.join(parts)})"


# -- the converter: built once at import ----------------------------------------------------------
#
# Its structure hook renames the wire's camelCase keys and checks each field strictly (cattrs would
# otherwise turn "3" into 3 and "false" into True and hide a broken server); a failure comes back
# from cattrs' own error notes as `InvalidStatus` naming the wire key. Its unstructure hook gives
# the wire names back. Two things are not per field and are settled before cattrs runs: which
# payload a map must carry (it follows from its status and resultType), and the legacy era's keys.

_WIRE_NAMES = {
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
_PASSED_THROUGH = frozenset({"raw", "era"})  # not on the wire: from_map supplies them
_LEGACY_KEYS = {"ttlMs": "ttl", "pollIntervalMs": "pollInterval"}
_MISSING = object()  # a payload the status implies that the map does not carry


def _wire_key(key: str, era: Era, task: Mapping[str, Any]) -> str:
    """The key a field is read from (and written back to) in a map of this era."""
    legacy = _LEGACY_KEYS.get(key)
    if era == "legacy" and legacy is not None and key not in task:
        return legacy
    return key


def _prepare(task: Mapping[str, Any], era: Era) -> dict[str, Any]:
    """The map cattrs structures: modern keys, only the payload the status implies, raw and era."""
    fields = dict(task)
    for key in _LEGACY_KEYS:
        wire_key = _wire_key(key, era, task)
        if wire_key != key and wire_key in task:
            fields[key] = task[wire_key]
    wire_status = task.get("status")
    payload = _PAYLOAD.get(_KNOWN_STATES[wire_status]) if wire_status in _KNOWN_STATES else None
    for key in _PAYLOAD.values():
        # A legacy task carries no payload in tasks/get: its result comes from tasks/result.
        if key == payload and era == "modern" and (key in task or task.get("resultType") != "task"):
            fields[key] = task.get(key, _MISSING)
        else:
            fields.pop(key, None)
    fields["raw"] = dict(task)
    fields["era"] = era
    return fields


def _invalid(error: cattrs.ClassValidationError, task: Mapping[str, Any], era: Era) -> InvalidStatus:
    """The first failure cattrs collected, as `InvalidStatus` naming the field's wire key."""
    for exc in error.exceptions:
        for note in getattr(exc, "__notes__", ()):
            name = getattr(note, "name", None)
            if name in _WIRE_NAMES:
                key = _wire_key(_WIRE_NAMES[name], era, task)
                problem = "is missing" if isinstance(exc, KeyError) else str(exc)
                return InvalidStatus(key, problem, task.get(key))
    return InvalidStatus("task", f"does not decode: {error}", task)  # pragma: no cover - every hook names its field


def _required_text(value: Any, _type: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("must be a non-empty string")
    if not value.isascii() and not _wire_text(value):
        raise ValueError("is not valid Unicode text (a lone surrogate)")
    return value


def _wire_text(text: str) -> bool:
    """Whether a string can go on the wire (UTF-8 has no lone surrogates)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _state(value: Any, _type: Any) -> TaskState:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    return _KNOWN_STATES.get(value, TaskState.UNKNOWN)


def _text_or_none(value: Any, _type: Any) -> str | None:
    return value if isinstance(value, str) else None


def _positive_int_or_none(value: Any, _type: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _input_requests(value: Any, _type: Any) -> dict[str, dict[str, Any]]:
    if value is _MISSING or not isinstance(value, dict):
        raise ValueError("must be an object of input requests")
    for key, request in value.items():
        if not isinstance(key, str) or not isinstance(request, dict):
            raise ValueError(f"entry {short_id(key)!r} must be an object")
    return dict(value)


def _result(value: Any, _type: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("must be an object")
    return value


def _error(value: Any, _type: Any) -> dict[str, Any]:
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("code"), int)
        or isinstance(value.get("code"), bool)
        or not isinstance(value.get("message"), str)
    ):
        raise ValueError("must be an object with an integer code and a string message")
    return value


def _as_is(value: Any, _type: Any) -> Any:
    return value


_OPTIONAL_HOOKS = {
    "status_message": _text_or_none,
    "created_at": _text_or_none,
    "last_updated_at": _text_or_none,
    "ttl_ms": _positive_int_or_none,
    "poll_interval_ms": _positive_int_or_none,
}


def _decodes(name: str, value: Any) -> bool:
    """Whether an optional field's wire value would decode to something (not None)."""
    return _OPTIONAL_HOOKS[name](value, None) is not None


_converter = cattrs.Converter()
_converter.register_structure_hook(
    Status,
    make_dict_structure_fn(
        Status,
        _converter,
        task_id=override(rename="taskId", struct_hook=_required_text),
        status=override(struct_hook=_state),
        status_message=override(rename="statusMessage", struct_hook=_text_or_none),
        created_at=override(rename="createdAt", struct_hook=_text_or_none),
        last_updated_at=override(rename="lastUpdatedAt", struct_hook=_text_or_none),
        ttl_ms=override(rename="ttlMs", struct_hook=_positive_int_or_none),
        poll_interval_ms=override(rename="pollIntervalMs", struct_hook=_positive_int_or_none),
        input_requests=override(rename="inputRequests", struct_hook=_input_requests),
        result=override(struct_hook=_result),
        error=override(struct_hook=_error),
        raw=override(struct_hook=_as_is),
        era=override(struct_hook=_as_is),
    ),
)
_converter.register_unstructure_hook(
    Status,
    make_dict_unstructure_fn(
        Status,
        _converter,
        _cattrs_omit_if_default=True,
        task_id=override(rename="taskId"),
        status_message=override(rename="statusMessage"),
        created_at=override(rename="createdAt"),
        last_updated_at=override(rename="lastUpdatedAt"),
        ttl_ms=override(rename="ttlMs"),
        poll_interval_ms=override(rename="pollIntervalMs"),
        input_requests=override(rename="inputRequests"),
        raw=override(omit=True),
        era=override(omit=True),
    ),
)
