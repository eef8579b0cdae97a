"""Status decoding (seed 001): scenarios 49 and 50, strictness, forward compatibility."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcp_tasks as mt

BASE = {
    "taskId": "task-1234567890",
    "createdAt": "2026-11-30T10:00:00Z",
    "lastUpdatedAt": "2026-11-30T10:00:01Z",
    "ttlMs": 60000,
    "pollIntervalMs": 5,
}


def decode(**fields: Any) -> mt.Status:
    return mt.Status.from_map({**BASE, **fields})


@pytest.mark.parametrize(
    ("task", "field"),
    [
        ({**BASE, "status": "working", "taskId": ""}, "taskId"),
        ({**BASE, "status": "working", "taskId": 7}, "taskId"),
        ({"status": "working"}, "taskId"),
        ({**BASE, "status": 3}, "status"),
        ({**BASE}, "status"),
        ("not a map", "task"),
        (None, "task"),
    ],
)
def test_task_id_and_status_are_required(task: Any, field: str) -> None:
    """Scenario 49: a missing or empty taskId, or a status that is not a string."""
    with pytest.raises(mt.InvalidStatus) as invalid:
        mt.Status.from_map(task)
    assert invalid.value.field == field
    assert field in str(invalid.value)
    assert isinstance(invalid.value, ValueError)


def test_a_creation_result_needs_no_payload_but_a_present_one_is_checked() -> None:
    """Scenario 49."""
    for status in ("working", "input_required", "completed", "failed", "cancelled"):
        decoded = decode(resultType="task", status=status)
        assert decoded.input_requests == {} and decoded.result is None and decoded.error is None
    with pytest.raises(mt.InvalidStatus) as bad:
        decode(resultType="task", status="completed", result="done")
    assert bad.value.field == "result"
    ok = decode(resultType="task", status="completed", result={"content": []})
    assert ok.detailed


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"status": "completed"}, "result"),
        ({"status": "completed", "result": [1]}, "result"),
        ({"status": "failed"}, "error"),
        ({"status": "failed", "error": {"code": "-32603", "message": "x"}}, "error"),
        ({"status": "failed", "error": {"code": True, "message": "x"}}, "error"),
        ({"status": "failed", "error": {"code": -32603}}, "error"),
        ({"status": "input_required"}, "inputRequests"),
        ({"status": "input_required", "inputRequests": {"k": "not a map"}}, "inputRequests"),
        ({"status": "input_required", "inputRequests": []}, "inputRequests"),
    ],
)
def test_other_maps_need_the_payload_their_status_implies(fields: dict[str, Any], field: str) -> None:
    """Scenario 49: tasks/get results and notifications need their payload."""
    with pytest.raises(mt.InvalidStatus) as invalid:
        decode(resultType="complete", **fields)
    assert invalid.value.field == field
    with pytest.raises(mt.InvalidStatus):
        decode(**fields)  # a notification has no resultType


def test_working_and_cancelled_ignore_payloads() -> None:
    """Scenario 49: a payload on a status that implies none is ignored."""
    status = decode(status="working", result={"x": 1}, error="junk", inputRequests="junk")
    assert status.result is None and status.error is None and status.input_requests == {}


@pytest.mark.parametrize("value", [0, -5, None, 1.5, "500", True])
def test_optional_numbers_are_coerced_not_rejected(value: Any) -> None:
    """Scenario 49: a non-positive, non-integer ttlMs or pollIntervalMs becomes None."""
    status = decode(status="working", ttlMs=value, pollIntervalMs=value)
    assert status.ttl_ms is None
    assert status.poll_interval_ms is None


@pytest.mark.parametrize("value", [5, None, ["x"], {"a": 1}])
def test_optional_strings_are_kept_only_when_strings(value: Any) -> None:
    status = decode(status="working", statusMessage=value, createdAt=value)
    assert status.status_message is None
    assert status.created_at is None


def test_the_decoded_fields() -> None:
    status = decode(status="input_required", statusMessage="need", inputRequests={"k": {"method": "roots/list"}})
    assert status.task_id == "task-1234567890"
    assert status.status is mt.TaskState.INPUT_REQUIRED
    assert status.status == "input_required"  # a str enum
    assert status.status_message == "need"
    assert (status.created_at, status.last_updated_at) == ("2026-11-30T10:00:00Z", "2026-11-30T10:00:01Z")
    assert (status.ttl_ms, status.poll_interval_ms) == (60000, 5)
    assert status.input_requests == {"k": {"method": "roots/list"}}
    assert status.raw["statusMessage"] == "need"
    assert status.era == "modern"


def test_meta_stays_in_raw() -> None:
    status = decode(status="working", _meta={"io.modelcontextprotocol/subscriptionId": 3})
    assert status.raw["_meta"] == {"io.modelcontextprotocol/subscriptionId": 3}


@pytest.mark.parametrize(
    ("fields", "detailed"),
    [
        ({"status": "working"}, True),
        ({"status": "cancelled"}, True),
        ({"status": "mystery"}, True),
        ({"status": "input_required", "inputRequests": {"k": {}}}, True),
        ({"status": "input_required", "inputRequests": {}}, False),
        ({"status": "input_required", "resultType": "task"}, False),
        ({"status": "completed", "result": {}}, True),
        ({"status": "completed", "resultType": "task"}, False),
        ({"status": "failed", "error": {"code": 1, "message": "m"}}, True),
        ({"status": "failed", "resultType": "task"}, False),
    ],
)
def test_detailed_truth_table(fields: dict[str, Any], detailed: bool) -> None:
    """Scenario 50."""
    assert decode(**fields).detailed is detailed


def test_terminal() -> None:
    terminal: dict[str, dict[str, Any]] = {
        "completed": {"result": {}},
        "failed": {"error": {"code": 1, "message": "m"}},
        "cancelled": {},
    }
    for state, payload in terminal.items():
        assert decode(status=state, **payload).terminal
    for state in ("working", "input_required", "mystery"):
        assert not decode(status=state, resultType="task").terminal


def test_an_unknown_status_is_kept_not_refused() -> None:
    """Forward compatibility (seed 004): a new status string decodes as UNKNOWN."""
    status = decode(status="paused")
    assert status.status is mt.TaskState.UNKNOWN
    assert status.wire_status == "paused"
    assert status.raw["status"] == "paused"


def test_legacy_keys_are_read_for_the_legacy_era() -> None:
    status = mt.Status.from_map({"taskId": "t", "status": "working", "ttl": 1000, "pollInterval": 50}, era="legacy")
    assert (status.ttl_ms, status.poll_interval_ms, status.era) == (1000, 50, "legacy")
    modern = mt.Status.from_map({"taskId": "t", "status": "working", "ttl": 1000})
    assert modern.ttl_ms is None


def test_repr_never_shows_a_full_id_or_input_key() -> None:
    status = decode(status="input_required", inputRequests={"task-1234567890:abcdef": {"method": "roots/list"}})
    text = repr(status)
    assert "task-1234567890" not in text
    assert "task-1…" in text or "task-1" in text


def test_status_is_frozen() -> None:
    status = decode(status="working")
    with pytest.raises(AttributeError):
        status.status = mt.TaskState.COMPLETED  # type: ignore[misc]


def test_with_input_requests_returns_a_copy() -> None:
    status = decode(status="input_required", inputRequests={"a": {}, "b": {}})
    reduced = status.with_input_requests({"b": {}})
    assert set(reduced.input_requests) == {"b"}
    assert set(status.input_requests) == {"a", "b"}


# -- to_map: a status saved as its wire map and read back -----------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_anything = _json | st.floats(allow_nan=False)


@st.composite
def wire_maps(draw: st.DrawFn, era: str = "modern") -> dict[str, Any]:
    """Task maps a server may send: every field present or not, well-formed or coerced away,
    with extra keys and ``_meta``; the payload the status implies is well-formed when present.
    """
    status = draw(st.sampled_from(["working", "input_required", "completed", "failed", "cancelled", "paused"]))
    task: dict[str, Any] = {"taskId": draw(st.text(min_size=1, max_size=12)), "status": status}
    ttl_key, poll_key = ("ttl", "pollInterval") if era == "legacy" else ("ttlMs", "pollIntervalMs")
    optional: dict[str, st.SearchStrategy[Any]] = {
        "statusMessage": st.text(max_size=10) | _anything,
        "createdAt": st.just("2026-07-28T10:00:00Z") | _anything,
        "lastUpdatedAt": st.just("2026-07-28T10:00:01Z") | _anything,
        ttl_key: st.integers(min_value=-5, max_value=10**9) | _anything,
        poll_key: st.integers(min_value=-5, max_value=10**6) | _anything,
        "_meta": st.dictionaries(st.text(max_size=5), _json, max_size=2),
        "extra": _json,
    }
    for key, values in optional.items():
        if draw(st.booleans()):
            task[key] = draw(values)
    creation = draw(st.booleans())
    if creation:
        task["resultType"] = "task"
    payloads: dict[str, tuple[str, st.SearchStrategy[Any]]] = {
        "input_required": ("inputRequests", st.dictionaries(st.text(max_size=6), st.just({"method": "roots/list"}))),
        "completed": ("result", st.dictionaries(st.text(max_size=6), _json, max_size=3)),
        "failed": ("error", st.fixed_dictionaries({"code": st.integers(), "message": st.text(max_size=10)})),
    }
    if status in payloads:
        key, values = payloads[status]
        if not creation or draw(st.booleans()):
            task[key] = draw(values)
    elif draw(st.booleans()):
        task["result"] = draw(_json)  # a payload its status does not imply is ignored
    return task


@given(wire_maps())
def test_a_status_reads_back_from_its_map(task: dict[str, Any]) -> None:
    status = mt.Status.from_map(task)
    assert status.to_map() == task
    assert mt.Status.from_map(status.to_map()) == status


@given(wire_maps(era="legacy"))
def test_a_legacy_status_reads_back_from_its_map(task: dict[str, Any]) -> None:
    status = mt.Status.from_map(task, era="legacy")
    assert status.to_map() == task
    assert mt.Status.from_map(status.to_map(), era="legacy") == status


def test_to_map_writes_the_fields_over_raw() -> None:
    status = mt.Status.from_map({"taskId": "t-1", "status": "working", "statusMessage": "a", "ttlMs": 5})
    changed = attrs.evolve(status, status=mt.TaskState.COMPLETED, result={"content": []}, status_message=None)
    assert changed.to_map() == {"taskId": "t-1", "status": "completed", "result": {"content": []}, "ttlMs": 5}
    built = mt.Status(task_id="t-2", status=mt.TaskState.WORKING, poll_interval_ms=250)
    assert built.to_map() == {"taskId": "t-2", "status": "working", "pollIntervalMs": 250}
    legacy = mt.Status(task_id="t-3", status=mt.TaskState.WORKING, ttl_ms=9, era="legacy")
    assert legacy.to_map() == {"taskId": "t-3", "status": "working", "ttl": 9}


def test_invalid_status_names_the_field_cattrs_reported() -> None:
    with pytest.raises(mt.InvalidStatus) as invalid:
        mt.Status.from_map({"taskId": "t-1", "status": "failed", "error": {"code": "1", "message": "m"}})
    assert invalid.value.field == "error"
    assert str(invalid.value) == "invalid task: error must be an object with an integer code and a string message"
    with pytest.raises(mt.InvalidStatus, match="taskId is missing"):
        mt.Status.from_map({"status": "working"})
