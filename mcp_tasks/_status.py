"""A task's status as the client reads it: from a creation result, ``tasks/get``, or a
``notifications/tasks`` event.

A status is read on every poll, so a well-formed map is decoded by a plain function that checks
each field once and builds the `Status`; only a map it refuses goes through the cattrs converter,
whose detailed validation names the bad field in `InvalidStatus` (or, should the fast path have
been too cautious, decodes it). The converter's hooks are strict: cattrs would otherwise turn
``"3"`` into 3 and ``"false"`` into True and hide a broken server. Whatever a server sends, the
outcome is a `Status` or an `InvalidStatus`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from mcp_tasks._errors import InvalidStatus
from mcp_tasks._redact import redact_ids, short_id
from mcp_tasks._render_hook import html_table, pretty
from mcp_tasks._status_fields import (
    LEGACY_KEYS,
    MISSING,
    OPTIONAL_HOOKS,
    PASSED_THROUGH,
    PAYLOAD_HOOKS,
    WIRE_NAMES,
    as_is,
    checked_error,
    checked_input_requests,
    checked_result,
    decodes,
    key_on_wire,
    known_state,
    positive_int_or_none,
    required_text,
    text_or_none,
    wire_text,
)
from mcp_tasks._status_rows import status_rows
from mcp_tasks._task_state import KNOWN_STATES, MAX_SAFE_INT, PAYLOAD, TERMINAL, Era, TaskState

__all__ = ["MAX_SAFE_INT", "SAVED_KEY", "Era", "Status", "TaskState"]


SAVED_KEY = "io.github.mcp-tasks/saved"
"""The key of a saved map (`Status.to_map`) under which this client keeps what is not on the wire:
``{"era": "legacy", "sessionId": "..."}``. Namespaced so that no server's key collides with it."""


@attrs.frozen(repr=False)
class Status:
    """A task's status. Fields mirror the wire with snake_case names.

    `input_requests` holds the outstanding requests of an ``input_required`` task keyed by the key
    ``tasks/update`` answers them under (``{}`` otherwise); `result` the CallToolResult of a
    ``completed`` one; `error` the JSON-RPC error object of a ``failed`` one. `raw` is the map as
    the server sent it, ``_meta`` included (`SAVED_KEY` left out). `era` says which protocol the task lives in;
    `session_id` is the 2025-era HTTP session (``Mcp-Session-Id``) a legacy task belongs to, None
    elsewhere (shown shortened, never whole). A status decoded from a creation result may lack its
    payload: see `detailed`.
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
    session_id: str | None = None

    @classmethod
    def from_map(cls, task: object, *, era: Era | None = None, session_id: str | None = None) -> Status:
        """Decode a task map; raises `InvalidStatus` naming the bad field, whatever the map holds.

        taskId must be a non-empty string and status a string. A creation result
        (``resultType: "task"``) needs no payload, but one it carries is checked; any other map
        needs the payload its status implies; ``_meta``, when present, must be an object. Optional
        fields are coerced, not rejected: a statusMessage that is not a string, or a ttlMs that is
        not a positive integer (up to `MAX_SAFE_INT`), becomes None. The legacy era reads ``ttl``
        and ``pollInterval`` where ``ttlMs`` and ``pollIntervalMs`` are absent.

        `era` None means the era a saved map (`to_map`) records under `SAVED_KEY`, else modern; an
        era given wins. Decoding what a server sent, name its era: a server could put that key in.
        `session_id` likewise: None means the saved one, if any.
        """
        if not isinstance(task, Mapping):
            raise InvalidStatus("task", "must be a JSON object", task)
        if era is not None and era not in ("modern", "legacy"):
            raise ValueError(f"era must be 'modern', 'legacy' or None, got {era!r}")
        saved_era, saved_session = _saved(task)
        era, session_id = era or saved_era, session_id or saved_session
        status = _decode_fast(task, era, session_id)
        if status is None:
            status = _decode_detailed(task, era, session_id)
        return status

    def to_map(self) -> dict[str, Any]:
        """The map of this status, to save as JSON and read back with `from_map`.

        It is `raw` with the fields laid over it, in the keys of its era, and the era (when not
        modern) and session id under `SAVED_KEY`, so that ``Status.from_map(status.to_map()) ==
        status`` for a status decoded from the wire, legacy ones included.
        """
        fields: dict[str, Any] = _converter.unstructure(self)
        if self.status is TaskState.UNKNOWN:
            fields["status"] = self.wire_status
        wire = dict(self.raw)
        for name, key in WIRE_NAMES.items():
            if name in PASSED_THROUGH:
                continue
            wire_key = key_on_wire(key, self.era, self.raw)
            if key in fields:
                wire[wire_key] = fields[key]
            elif name in OPTIONAL_HOOKS and wire_key in wire and decodes(name, wire[wire_key]):
                del wire[wire_key]  # the field was cleared: the map must not bring it back
        saved: dict[str, str] = {}
        if self.era != "modern":
            saved["era"] = self.era
        if self.session_id is not None:
            saved["sessionId"] = self.session_id
        if saved:
            wire[SAVED_KEY] = saved
        return wire

    @property
    def terminal(self) -> bool:
        """True for completed, failed and cancelled, which never change."""
        return self.status in TERMINAL

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
    def ttl(self) -> float | None:
        """`ttl_ms` in seconds, as every duration of the API is (None when the server gave none).
        The ``_ms`` fields keep the seeds' names and the wire's milliseconds.
        """
        return None if self.ttl_ms is None else self.ttl_ms / 1000

    @property
    def poll_interval(self) -> float | None:
        """`poll_interval_ms` in seconds: the interval the server suggests between polls."""
        return None if self.poll_interval_ms is None else self.poll_interval_ms / 1000

    @property
    def wire_status(self) -> str:
        """The status string as the server sent it (useful when `status` is UNKNOWN)."""
        value = self.raw.get("status")
        return value if isinstance(value, str) else self.status.value

    def with_input_requests(self, requests: Mapping[str, dict[str, Any]]) -> Status:
        """A copy whose `input_requests` are `requests` (for example only the pending ones)."""
        return attrs.evolve(self, input_requests=dict(requests))

    def _redact(self, text: str) -> str:
        """`text` with this task's id and session id, wherever they appear, in their short forms."""
        return redact_ids(text, self.task_id, self.session_id)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's pretty form: status, short id, message, timestamps and a payload summary."""
        pretty("Status", status_rows(self), printer, cycle)

    def _repr_html_(self) -> str:
        """The same as an HTML table, for notebooks."""
        return html_table(f"Task {short_id(self.task_id)}", status_rows(self))

    def __repr__(self) -> str:
        parts = [f"task_id={short_id(self.task_id)!r}", f"status={self._redact(self.wire_status)!r}"]
        if self.status_message is not None:
            parts.append(f"status_message={self._redact(self.status_message)!r}")
        if self.input_requests:
            keys = ", ".join(repr(self._redact(k)) for k in sorted(self.input_requests))
            parts.append(f"input_requests=[{keys}]")
        if self.result is not None:
            parts.append(f"result=<{len(self.result)} keys>")
        if self.error is not None:
            parts.append(f"error={{code: {self.error.get('code')!r}}}")
        if self.era != "modern":
            parts.append(f"era={self.era!r}")
        if self.session_id is not None:
            parts.append(f"session_id={short_id(self.session_id)!r}")
        return f"Status({', '.join(parts)})"


# -- decoding: the envelope, then a fast path, then cattrs ----------------------------------------
#
# The converter's structure hook renames the wire's camelCase keys and checks each field strictly;
# a failure comes back from cattrs' own error notes as `InvalidStatus` naming the wire key. Its
# unstructure hook gives the wire names back. Three things are not per field and are settled
# before either path runs: ``_meta`` and `SAVED_KEY` (`_saved`), which payload a map must carry (it
# follows from its status and resultType), and the legacy era's keys. `_decode_fast` applies the
# same hooks to the same keys, without cattrs' bookkeeping; tests hold the two paths equal.


def _saved(task: Mapping[str, Any]) -> tuple[Era, str | None]:
    """The era and session id a saved map records (modern and None for a map from the wire);
    checks ``_meta`` on the way, the one other key no field reads.
    """
    meta = task.get("_meta")
    if meta is not None and not isinstance(meta, dict):
        raise InvalidStatus("_meta", "must be an object", meta)
    saved = task.get(SAVED_KEY)
    if saved is None:
        return "modern", None
    if not isinstance(saved, dict):
        raise InvalidStatus(SAVED_KEY, "must be an object", saved)
    era = saved.get("era", "modern")
    if era != "modern" and era != "legacy":
        raise InvalidStatus(SAVED_KEY, "has an era that is not 'modern' or 'legacy'", saved)
    session_id = saved.get("sessionId")
    if session_id is not None and (not isinstance(session_id, str) or not session_id):
        raise InvalidStatus(SAVED_KEY, "has a sessionId that is not a non-empty string", saved)
    return era, session_id


def _raw(task: Mapping[str, Any]) -> dict[str, Any]:
    """The map as the server sent it: what this client saved in it is not the server's."""
    raw = dict(task)
    raw.pop(SAVED_KEY, None)
    return raw


def _payload_key(task: Mapping[str, Any], wire_status: object, era: Era) -> str | None:
    """The payload key a map must carry: the one its status implies, in the modern era, unless a
    creation result leaves it out (a legacy task's result comes from tasks/result).
    """
    if not isinstance(wire_status, str) or era != "modern":
        return None
    key = PAYLOAD.get(KNOWN_STATES.get(wire_status, TaskState.UNKNOWN))
    if key is None or (key not in task and task.get("resultType") == "task"):
        return None
    return key


def _decode_fast(task: Mapping[str, Any], era: Era, session_id: str | None) -> Status | None:
    """The status of a well-formed map, built at once; None for anything else (the detailed
    path then names the problem). Every check is the converter's hook, so both agree.
    """
    task_id = task.get("taskId")
    wire_status = task.get("status")
    if not isinstance(task_id, str) or not task_id or not isinstance(wire_status, str):
        return None
    if not task_id.isascii() and not wire_text(task_id):
        return None
    get = task.get
    ttl = get("ttlMs", MISSING)
    poll = get("pollIntervalMs", MISSING)
    if era == "legacy":
        ttl = get("ttl") if ttl is MISSING else ttl
        poll = get("pollInterval") if poll is MISSING else poll
    input_requests: dict[str, dict[str, Any]] = {}
    result = error = None
    payload = _payload_key(task, wire_status, era)
    if payload is not None:
        try:
            value = PAYLOAD_HOOKS[payload](get(payload, MISSING), None)
        except ValueError:
            return None
        if payload == "inputRequests":
            input_requests = value
        elif payload == "result":
            result = value
        else:
            error = value
    return Status(  # positional, in the order of the fields: a third faster than keywords
        task_id,
        KNOWN_STATES.get(wire_status, TaskState.UNKNOWN),
        text_or_none(get("statusMessage"), None),
        text_or_none(get("createdAt"), None),
        text_or_none(get("lastUpdatedAt"), None),
        positive_int_or_none(ttl, None),
        positive_int_or_none(poll, None),
        input_requests,
        result,
        error,
        _raw(task),
        era,
        session_id,
    )


def _decode_detailed(task: Mapping[str, Any], era: Era, session_id: str | None) -> Status:
    """The status of a map through cattrs' detailed validation: `InvalidStatus` naming the field."""
    try:
        status: Status = _converter.structure(_prepare(task, era, session_id), Status)
    except cattrs.ClassValidationError as exc:
        raise _invalid(exc, task, era) from None
    return status


def _prepare(task: Mapping[str, Any], era: Era, session_id: str | None) -> dict[str, Any]:
    """The map cattrs structures: modern keys, only the payload the status implies, raw, era and
    session id.
    """
    fields = dict(task)
    for key in LEGACY_KEYS:
        wire_key = key_on_wire(key, era, task)
        if wire_key != key and wire_key in task:
            fields[key] = task[wire_key]
    payload = _payload_key(task, task.get("status"), era)
    for key in PAYLOAD.values():
        if key == payload:
            fields[key] = task.get(key, MISSING)
        else:
            fields.pop(key, None)
    fields["raw"] = _raw(task)
    fields["era"] = era
    fields["session_id"] = session_id
    return fields


def _invalid(error: cattrs.ClassValidationError, task: Mapping[str, Any], era: Era) -> InvalidStatus:
    """The first failure cattrs collected, as `InvalidStatus` naming the field's wire key."""
    for exc in error.exceptions:
        for note in getattr(exc, "__notes__", ()):
            name = getattr(note, "name", None)
            if name in WIRE_NAMES:
                key = key_on_wire(WIRE_NAMES[name], era, task)
                problem = "is missing" if isinstance(exc, KeyError) else str(exc)
                return InvalidStatus(key, problem, task.get(key))
    return InvalidStatus("task", f"does not decode: {error}", task)  # pragma: no cover - every hook names its field


_converter = cattrs.Converter()
_converter.register_structure_hook(
    Status,
    make_dict_structure_fn(
        Status,
        _converter,
        task_id=override(rename="taskId", struct_hook=required_text),
        status=override(struct_hook=known_state),
        status_message=override(rename="statusMessage", struct_hook=text_or_none),
        created_at=override(rename="createdAt", struct_hook=text_or_none),
        last_updated_at=override(rename="lastUpdatedAt", struct_hook=text_or_none),
        ttl_ms=override(rename="ttlMs", struct_hook=positive_int_or_none),
        poll_interval_ms=override(rename="pollIntervalMs", struct_hook=positive_int_or_none),
        input_requests=override(rename="inputRequests", struct_hook=checked_input_requests),
        result=override(struct_hook=checked_result),
        error=override(struct_hook=checked_error),
        raw=override(struct_hook=as_is),
        era=override(struct_hook=as_is),
        session_id=override(struct_hook=as_is),
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
        session_id=override(omit=True),
    ),
)
