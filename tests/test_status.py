"""Status decoding (seed 001): scenarios 49 and 50, strictness, forward compatibility."""

from __future__ import annotations

import json
import random
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcp_tasks as mt
from mcp_tasks._status import MAX_SAFE_INT, SAVED_KEY, _decode_detailed, _decode_fast, _saved

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


def test_repr_never_shows_a_full_id_nor_one_inside_an_input_key() -> None:
    status = decode(status="input_required", inputRequests={"task-1234567890:abcdef": {"method": "roots/list"}})
    text = repr(status)
    assert "task-1234567890" not in text
    assert "task_id='task…7890'" in text
    assert "input_requests=['task…7890:abcdef']" in text  # the key, with the id part shortened


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
        "failed": (
            "error",
            st.fixed_dictionaries({"code": st.integers(-MAX_SAFE_INT, MAX_SAFE_INT), "message": st.text(max_size=10)}),
        ),
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
    assert status.to_map() == {**task, SAVED_KEY: {"era": "legacy"}}
    assert mt.Status.from_map(status.to_map(), era="legacy") == status
    assert mt.Status.from_map(status.to_map()) == status  # the saved map knows its era


def test_to_map_writes_the_fields_over_raw() -> None:
    status = mt.Status.from_map({"taskId": "t-1", "status": "working", "statusMessage": "a", "ttlMs": 5})
    changed = attrs.evolve(status, status=mt.TaskState.COMPLETED, result={"content": []}, status_message=None)
    assert changed.to_map() == {"taskId": "t-1", "status": "completed", "result": {"content": []}, "ttlMs": 5}
    built = mt.Status(task_id="t-2", status=mt.TaskState.WORKING, poll_interval_ms=250)
    assert built.to_map() == {"taskId": "t-2", "status": "working", "pollIntervalMs": 250}
    legacy = mt.Status(task_id="t-3", status=mt.TaskState.WORKING, ttl_ms=9, era="legacy")
    assert legacy.to_map() == {"taskId": "t-3", "status": "working", "ttl": 9, SAVED_KEY: {"era": "legacy"}}


def test_invalid_status_names_the_field_cattrs_reported() -> None:
    with pytest.raises(mt.InvalidStatus) as invalid:
        mt.Status.from_map({"taskId": "t-1", "status": "failed", "error": {"code": "1", "message": "m"}})
    assert invalid.value.field == "error"
    assert str(invalid.value) == "invalid task: error must be an object with an integer code and a string message"
    with pytest.raises(mt.InvalidStatus, match="taskId is missing"):
        mt.Status.from_map({"status": "working"})


# -- hostile maps: a Status or an InvalidStatus, never anything else -------------------------------

DEEP: Any = []
for _ in range(200):
    DEEP = [DEEP]


class _Odd:
    """An object no JSON decoder makes (a server reached in-process can still hand one over)."""


JUNK: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    7,
    2**53,
    10**30,
    -(10**30),
    10**5000,  # too long for repr
    1.5,
    float("nan"),
    float("inf"),
    "",
    "x",
    "working",
    "input_required",
    "completed",
    "failed",
    "\ud800",
    "\u00e9t\u00e9",
    [],
    [1, [2, {"a": None}]],
    {},
    {"a": {"b": []}},
    {"code": 1, "message": "m"},
    {"code": "1", "message": "m"},
    {"code": 10**30, "message": "m"},
    {"k": {"method": "roots/list"}},
    {"k": "no"},
    {"content": []},
    DEEP,
    (1, 2),
    {1, 2},
    frozenset({3}),
    b"bytes",
    _Odd(),
    {1: "int key"},
    {"era": "legacy", "sessionId": "s" * 20},
    {"era": ["legacy"]},
    {"era": "legacy", "sessionId": 5},
]
KEYS = [
    "taskId",
    "status",
    "statusMessage",
    "createdAt",
    "lastUpdatedAt",
    "ttlMs",
    "pollIntervalMs",
    "ttl",
    "pollInterval",
    "inputRequests",
    "result",
    "error",
    "resultType",
    "_meta",
    SAVED_KEY,
    "raw",
    "era",
    "session_id",
    "task_id",
]
VALID: list[dict[str, Any]] = [
    {"taskId": "task-1234567890", "status": "working", "statusMessage": "m", "ttlMs": 5, "pollIntervalMs": 10},
    {"taskId": "task-1234567890", "status": "input_required", "inputRequests": {"k": {"method": "roots/list"}}},
    {"taskId": "task-1234567890", "status": "completed", "result": {"content": []}, "_meta": {"a": 1}},
    {"taskId": "task-1234567890", "status": "failed", "error": {"code": -1, "message": "m"}},
    {"taskId": "task-1234567890", "status": "cancelled", "resultType": "task"},
    {"taskId": "t", "status": "working", "ttl": 5, "pollInterval": 9, SAVED_KEY: {"era": "legacy", "sessionId": "s"}},
]


def hostile_maps(count: int, seed: int = 20260728) -> list[Any]:
    """Maps a broken or hostile server might send: valid ones with fields replaced by junk, junk
    added or removed, whole maps of junk, and values that are not maps at all.
    """
    rng = random.Random(seed)
    maps: list[Any] = list(JUNK)
    for _ in range(count):
        task: dict[Any, Any] = dict(rng.choice(VALID))
        for _ in range(rng.randint(1, 4)):
            action = rng.random()
            key = rng.choice(KEYS)
            if action < 0.6:
                task[key] = rng.choice(JUNK)
            elif action < 0.8:
                task.pop(key, None)
            else:
                task[rng.choice(JUNK[:13])] = rng.choice(JUNK)  # keys that are not strings
        maps.append(task)
    return maps


HOSTILE = hostile_maps(3000)


def outcome(task: Any, era: Any) -> mt.Status | mt.InvalidStatus:
    try:
        return mt.Status.from_map(task, era=era)
    except mt.InvalidStatus as invalid:
        return invalid


def test_hostile_maps_decode_to_a_status_or_an_invalid_status() -> None:
    decoded = refused = 0
    for task in HOSTILE:
        for era in (None, "modern", "legacy"):
            result = outcome(task, era)  # anything but InvalidStatus escapes and fails the test
            if isinstance(result, mt.InvalidStatus):
                refused += 1
                assert result.field in (*KEYS, "task"), result
                assert str(result).startswith(f"invalid task: {result.field} ")
                continue
            decoded += 1
            repr(result), result._repr_html_(), result.to_map(), result.terminal, result.detailed
            assert result.raw.keys() == task.keys() - {SAVED_KEY}
    assert decoded > 1000 and refused > 1000  # the corpus exercises both outcomes


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"status": ["working"]}, "status"),  # once TypeError: unhashable type
        ({"status": {"state": "working"}}, "status"),
        ({"status": None}, "status"),
        ({"taskId": 12345}, "taskId"),
        ({"taskId": ["task-1"]}, "taskId"),
        ({"taskId": {"id": "task-1"}}, "taskId"),
        ({"taskId": 10**5000}, "taskId"),
        ({"status": "input_required", "inputRequests": ["k"]}, "inputRequests"),
        ({"status": "input_required", "inputRequests": {"k": ["roots/list"]}}, "inputRequests"),
        ({"status": "input_required", "inputRequests": {7: {"method": "roots/list"}}}, "inputRequests"),
        ({"status": "input_required", "inputRequests": {10**5000: {}}}, "inputRequests"),
        ({"status": "completed", "result": "done"}, "result"),
        ({"status": "completed", "result": DEEP}, "result"),
        ({"status": "failed", "error": ["boom"]}, "error"),
        ({"status": "failed", "error": {"code": 1.0, "message": "m"}}, "error"),
        ({"status": "failed", "error": {"code": 2**53, "message": "m"}}, "error"),
        ({"status": "failed", "error": {"code": -(10**5000), "message": "m"}}, "error"),
        ({"status": "working", "_meta": ["a"]}, "_meta"),
        ({"status": "working", "_meta": "meta"}, "_meta"),
        ({"status": "working", SAVED_KEY: "legacy"}, SAVED_KEY),
        ({"status": "working", SAVED_KEY: {"era": "ancient"}}, SAVED_KEY),
        ({"status": "working", SAVED_KEY: {"era": ["legacy"]}}, SAVED_KEY),
        ({"status": "working", SAVED_KEY: {"sessionId": ""}}, SAVED_KEY),
        ({"status": "working", SAVED_KEY: {"sessionId": {"id": 1}}}, SAVED_KEY),
    ],
)
def test_each_hostile_field_is_named(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(mt.InvalidStatus) as invalid:
        decode(**fields)
    assert invalid.value.field == field
    assert f"invalid task: {field} " in str(invalid.value)


def test_huge_numbers_in_optional_fields_are_ignored() -> None:
    status = decode(status="working", ttlMs=2**53, pollIntervalMs=10**5000)
    assert (status.ttl_ms, status.poll_interval_ms) == (None, None)
    assert decode(status="working", ttlMs=MAX_SAFE_INT).ttl_ms == MAX_SAFE_INT
    assert decode(status="working", _meta=None).raw["_meta"] is None  # null is no _meta at all


def test_keys_that_are_not_strings_are_kept_in_raw() -> None:
    status = mt.Status.from_map({"taskId": "t", "status": "working", 3: "three", None: []})
    raw: dict[Any, Any] = status.raw
    assert raw[3] == "three" and raw[None] == []


def test_an_era_that_is_not_one_is_refused() -> None:
    with pytest.raises(ValueError, match="era must be"):
        mt.Status.from_map({"taskId": "t", "status": "working"}, era="future")  # type: ignore[arg-type]


# -- the fast path and the detailed one agree -----------------------------------------------------


def both_paths(task: Any, era: Any) -> tuple[mt.Status | None, mt.Status | mt.InvalidStatus] | None:
    """What the fast path and the detailed one make of a map (None when the envelope refuses it)."""
    if not isinstance(task, dict):
        return None
    try:
        saved_era, session_id = _saved(task)
    except mt.InvalidStatus:
        return None
    era = era or saved_era
    fast = _decode_fast(task, era, session_id)
    try:
        detailed: mt.Status | mt.InvalidStatus = _decode_detailed(task, era, session_id)
    except mt.InvalidStatus as invalid:
        detailed = invalid
    return fast, detailed


def test_the_fast_path_makes_what_cattrs_makes_of_hostile_maps() -> None:
    fast_taken = 0
    for task in HOSTILE + VALID:
        for era in (None, "modern", "legacy"):
            paths = both_paths(task, era)
            if paths is None:
                continue
            fast, detailed = paths
            if fast is not None:
                fast_taken += 1
                assert fast == detailed, task
                assert attrs.asdict(fast, recurse=False) == attrs.asdict(detailed, recurse=False)
            else:
                assert isinstance(detailed, mt.InvalidStatus), task  # the fast path refused only what is wrong
    assert fast_taken > 1000


@given(wire_maps())
def test_the_fast_path_decodes_every_well_formed_map(task: dict[str, Any]) -> None:
    for era in ("modern", "legacy"):
        paths = both_paths(task, era)
        assert paths is not None
        fast, detailed = paths
        assert fast is not None and fast == detailed


@given(wire_maps(era="legacy"))
def test_the_fast_path_decodes_every_well_formed_legacy_map(task: dict[str, Any]) -> None:
    paths = both_paths(task, "legacy")
    assert paths is not None and paths[0] is not None and paths[0] == paths[1]


# -- era and session: saved with the map, read back ------------------------------------------------

SESSION_ID = "5feceb66ffc86f38d952786c6d696c79"


def test_a_modern_status_saves_as_its_wire_map() -> None:
    task = {"taskId": "task-1234567890", "status": "working", "ttlMs": 5}
    status = mt.Status.from_map(task)
    assert status.to_map() == task and SAVED_KEY not in status.to_map()
    assert mt.Status.from_map(status.to_map()) == status
    assert mt.Status.from_map(status.to_map(), era=status.era) == status


def test_a_legacy_status_reloads_as_legacy() -> None:
    status = mt.Status.from_map({"taskId": "task-1234567890", "status": "working", "ttl": 5}, era="legacy")
    saved = json.loads(json.dumps(status.to_map()))
    assert saved[SAVED_KEY] == {"era": "legacy"}
    reloaded = mt.Status.from_map(saved)
    assert reloaded == status and reloaded.era == "legacy" and reloaded.ttl_ms == 5
    assert mt.Status.from_map(saved, era=status.era) == status
    assert SAVED_KEY not in reloaded.raw


def test_a_legacy_status_reloads_with_its_session() -> None:
    live = mt.Status.from_map({"taskId": "task-1234567890", "status": "completed"}, era="legacy")
    status = attrs.evolve(live, session_id=SESSION_ID)
    saved = json.loads(json.dumps(status.to_map()))
    assert saved[SAVED_KEY] == {"era": "legacy", "sessionId": SESSION_ID}
    assert mt.Status.from_map(saved) == status
    assert mt.Status.from_map(saved, era=status.era) == status
    assert mt.Status.from_map(saved).session_id == SESSION_ID
    assert SESSION_ID not in repr(status) and "session_id='5fec…6c79'" in repr(status)


def test_an_era_given_wins_over_the_saved_one() -> None:
    saved = attrs.evolve(
        mt.Status.from_map({"taskId": "t", "status": "working"}, era="legacy"), session_id=SESSION_ID
    ).to_map()
    modern = mt.Status.from_map(saved, era="modern")
    assert modern.era == "modern" and modern.session_id == SESSION_ID
    assert modern.to_map() == saved | {SAVED_KEY: {"sessionId": SESSION_ID}}


def test_a_session_given_wins_over_the_saved_one() -> None:
    task = {"taskId": "t", "status": "working", SAVED_KEY: {"era": "legacy", "sessionId": "old-session"}}
    assert mt.Status.from_map(task).session_id == "old-session"
    assert mt.Status.from_map(task, session_id=SESSION_ID).session_id == SESSION_ID
    live = mt.Status.from_map({"taskId": "t", "status": "working"}, era="legacy", session_id=SESSION_ID)
    assert (live.era, live.session_id) == ("legacy", SESSION_ID)
    assert mt.Status.from_map(live.to_map()) == live


def test_durations_in_seconds_beside_the_wires_milliseconds() -> None:
    task = {"taskId": "t-1", "status": "working", "ttlMs": 90_000, "pollIntervalMs": 250}
    status = mt.Status.from_map(task)
    assert (status.ttl_ms, status.poll_interval_ms) == (90_000, 250)
    assert (status.ttl, status.poll_interval) == (90.0, 0.25)
    assert mt.Status.from_map({"taskId": "t-1", "status": "working"}).ttl is None
    assert mt.Status.from_map(task).to_map() == task  # the properties are not fields: the map is unchanged
