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
from cattrs.gen import make_dict_structure_fn, override

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
        """
        if not isinstance(task, Mapping):
            raise InvalidStatus("task", "must be a JSON object", task)
        task_id = task.get("taskId")
        if not isinstance(task_id, str) or not task_id:
            raise InvalidStatus("taskId", "must be a non-empty string", task_id)
        wire_status = task.get("status")
        if not isinstance(wire_status, str):
            raise InvalidStatus("status", "must be a string", wire_status)
        state = _KNOWN_STATES.get(wire_status, TaskState.UNKNOWN)
        fields: dict[str, Any] = {
            "taskId": task_id,
            "status": state,
            "statusMessage": task.get("statusMessage"),
            "createdAt": task.get("createdAt"),
            "lastUpdatedAt": task.get("lastUpdatedAt"),
            "ttlMs": task.get("ttl" if era == "legacy" and "ttlMs" not in task else "ttlMs"),
            "pollIntervalMs": task.get(
                "pollInterval" if era == "legacy" and "pollIntervalMs" not in task else "pollIntervalMs"
            ),
            "raw": dict(task),
            "era": era,
        }
        payload = _PAYLOAD.get(state)
        if payload is not None and era == "modern" and (payload in task or task.get("resultType") != "task"):
            fields[payload] = _check_payload(payload, task.get(payload))
        try:
            return _structure(fields)
        except (cattrs.BaseValidationError, TypeError, ValueError) as exc:  # pragma: no cover - guarded above
            raise InvalidStatus("task", f"does not decode: {exc}", task) from exc

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


def _check_payload(name: str, value: object) -> Any:
    if name == "inputRequests":
        if not isinstance(value, dict):
            raise InvalidStatus(name, "must be an object of input requests", value)
        for key, request in value.items():
            if not isinstance(key, str) or not isinstance(request, dict):
                raise InvalidStatus(name, f"entry {short_id(key)!r} must be an object", value)
        return value
    if name == "result":
        if not isinstance(value, dict):
            raise InvalidStatus(name, "must be an object", value)
        return value
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("code"), int)
        or isinstance(value.get("code"), bool)
        or not isinstance(value.get("message"), str)
    ):
        raise InvalidStatus(name, "must be an object with an integer code and a string message", value)
    return value


# -- the converter: built once at import --------------------------------------------------------


def _strict(kind: type) -> Any:
    def hook(value: Any, _type: Any) -> Any:
        if type(value) is not kind:
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    return hook


def _text_or_none(value: Any, _type: Any) -> str | None:
    return value if isinstance(value, str) else None


def _positive_int_or_none(value: Any, _type: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _object(value: Any, _type: Any) -> Any:
    if value is not None and not isinstance(value, dict):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return value


_converter = cattrs.Converter(forbid_extra_keys=False)
for _kind in (str, int, float, bool):
    _converter.register_structure_hook(_kind, _strict(_kind))
_converter.register_structure_hook(TaskState, lambda value, _t: TaskState(value))
_converter.register_structure_hook(
    Status,
    make_dict_structure_fn(
        Status,
        _converter,
        task_id=override(rename="taskId"),
        status_message=override(rename="statusMessage", struct_hook=_text_or_none),
        created_at=override(rename="createdAt", struct_hook=_text_or_none),
        last_updated_at=override(rename="lastUpdatedAt", struct_hook=_text_or_none),
        ttl_ms=override(rename="ttlMs", struct_hook=_positive_int_or_none),
        poll_interval_ms=override(rename="pollIntervalMs", struct_hook=_positive_int_or_none),
        input_requests=override(rename="inputRequests", struct_hook=lambda v, _t: dict(v or {})),
        result=override(struct_hook=_object),
        error=override(struct_hook=_object),
        raw=override(struct_hook=_object),
        era=override(struct_hook=lambda v, _t: v),
    ),
)


def _structure(fields: dict[str, Any]) -> Status:
    status: Status = _converter.structure(fields, Status)
    return status
