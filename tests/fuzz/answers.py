"""Hypothesis strategies for hostile answers: lines a broken or malicious server might send."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

ID = "__ID__"
TASK_ID = "fuzz-task-0001"


def _line(message: Any) -> str:
    return json.dumps(message, ensure_ascii=False, allow_nan=True)


def _response(result: Any) -> str:
    return _line({"jsonrpc": "2.0", "id": ID, "result": result})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)

task_fields = st.fixed_dictionaries(
    {},
    optional={
        "taskId": st.sampled_from([TASK_ID, "", "\ud800", "ab\udfffcd"]) | json_values,
        "status": st.sampled_from(["working", "completed", "failed", "cancelled", "input_required", "odd"])
        | json_values,
        "result": json_values,
        "error": json_values | st.just({"code": -1, "message": "boom"}),
        "inputRequests": json_values | st.just({"k": {"method": "elicitation/create", "params": {}}}),
        "pollIntervalMs": json_values,
        "ttlMs": json_values,
        "statusMessage": json_values,
    },
)


@st.composite
def task_result(draw: st.DrawFn) -> str:
    fields = draw(task_fields)
    fields.setdefault("taskId", TASK_ID)
    fields["resultType"] = draw(st.sampled_from(["task", "complete", "input_required"]) | json_values)
    return _response(fields)


def _nested(depth: int, opener: str, closer: str) -> str:
    return '{"jsonrpc":"2.0","id":"__ID__","result":{"x":' + opener * depth + closer * depth + "}}"


deep = st.one_of(
    st.builds(lambda d: _nested(d, "[", "]"), st.sampled_from([100, 511, 513, 1200, 50_000])),
    st.builds(lambda d: _nested(d, '{"a":', "}"), st.sampled_from([300, 600, 5_000])),
)

broken = st.one_of(
    st.text(max_size=40),
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
    st.just("[1, 2, 3]"),
    st.just('{"jsonrpc": "2.0", "id": "__ID__"}'),
    st.just('{"jsonrpc": "2.0", "id": "__ID__", "result": {}, "error": {}}'),
    st.just('{"jsonrpc": "2.0", "id": "__ID__", "result": [1]}'),
    st.just('{"jsonrpc": "2.0", "id": "__ID__", "result": NaN}'),
    st.just('{"jsonrpc": "2.0", "id": "__ID__", "result": {"v": 1e999}}'),
    st.just('{"jsonrpc": "2.0", "id": "__ID__", "result": {"s": "\\ud800"}}'),
    st.builds(lambda v: _line({"jsonrpc": "2.0", "id": ID, "error": v}), json_values),
    st.builds(lambda v: _line({"jsonrpc": "2.0", "id": v, "result": {}}), json_values),
    st.builds(_response, json_values),
    st.builds(lambda n: _response({"big": "x" * n}), st.sampled_from([10_000, 300_000])),
)

input_required = st.builds(
    lambda requests, state: _response(
        {"resultType": "input_required", "inputRequests": requests, "requestState": state}
    ),
    json_values,
    json_values,
)

notification = st.builds(
    lambda method, params: _line({"jsonrpc": "2.0", "method": method, "params": params}),
    st.sampled_from(["notifications/tasks", "notifications/subscriptions/acknowledged", "notifications/message"])
    | json_values,
    json_values
    | task_fields.map(lambda f: {**f, "_meta": {"io.modelcontextprotocol/subscriptionId": ID}})
    | st.just({"notifications": {"taskIds": [TASK_ID]}, "_meta": {"io.modelcontextprotocol/subscriptionId": ID}}),
)

answer_line = st.one_of(task_result(), deep, broken, input_required)
answer = st.one_of(
    answer_line.map(lambda line: [line]),
    st.lists(notification, max_size=2).flatmap(lambda notes: answer_line.map(lambda line: [*notes, line])),
)
created = st.just([_response({"resultType": "task", "taskId": TASK_ID, "status": "working"})])
# Mostly a task that was created well, so the hostile answers reach tasks/get and the listen stream.
answers = st.tuples(st.one_of(created, created, created, answer), st.lists(answer, max_size=3)).map(
    lambda drawn: [drawn[0], *drawn[1]]
)
