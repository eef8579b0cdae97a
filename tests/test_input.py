"""Input handlers: kinds, implied capabilities, response checks, strategies."""

from __future__ import annotations

from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._input import check_response, kind_of
from mcp_tasks._tasks._strategies import resolve_strategy

GOOD_SAMPLING = {"role": "assistant", "model": "m", "content": {"type": "text", "text": "hi"}}


@pytest.mark.parametrize(
    ("request_", "kind"),
    [
        ({"method": "elicitation/create", "params": {"message": "x"}}, "form"),
        ({"method": "elicitation/create", "params": {"mode": "form"}}, "form"),
        ({"method": "elicitation/create", "params": {"mode": "url", "url": "u"}}, "url"),
        ({"method": "elicitation/create", "params": {"mode": "other"}}, None),
        ({"method": "elicitation/create"}, "form"),
        ({"method": "sampling/createMessage", "params": {}}, "sampling"),
        ({"method": "roots/list"}, "roots"),
        ({"method": "ping"}, None),
        ("not a request", None),
    ],
)
def test_kind_of(request_: Any, kind: str | None) -> None:
    assert kind_of(request_) == kind


@pytest.mark.parametrize(
    ("kind", "response", "ok"),
    [
        ("form", {"action": "accept", "content": {"a": 1}}, True),
        ("form", {"action": "decline"}, True),
        ("url", {"action": "cancel"}, True),
        ("form", {"action": "ACCEPT"}, False),
        ("form", {"action": "accept", "content": {"a": float("nan")}}, False),
        ("sampling", GOOD_SAMPLING, True),
        (
            "sampling",
            {
                **GOOD_SAMPLING,
                "content": [{"type": "text", "text": "a"}, {"type": "image", "data": "x", "mimeType": "image/png"}],
            },
            True,
        ),
        ("sampling", {**GOOD_SAMPLING, "stopReason": "endTurn", "_meta": {}, "extra": 1}, True),
        ("sampling", {**GOOD_SAMPLING, "content": {"type": "text", "text": "x", "bogus": 1}}, False),
        ("sampling", {**GOOD_SAMPLING, "content": {"type": "tool_use", "id": "1", "name": "n", "input": {}}}, True),
        ("sampling", {**GOOD_SAMPLING, "content": {"type": "tool_result", "toolUseId": "1", "content": []}}, True),
        ("sampling", {**GOOD_SAMPLING, "model": 3}, False),
        ("sampling", {**GOOD_SAMPLING, "stopReason": 1}, False),
        ("roots", {"roots": []}, True),
        ("roots", {"roots": [{"uri": "file:///a", "name": "a", "_meta": {}}]}, True),
        ("roots", {"roots": [{"uri": "file:///a", "extra": 1}]}, False),
        ("roots", {"roots": [{"uri": "file:///a", "name": 3}]}, False),
        ("roots", {}, False),
    ],
)
def test_check_response(kind: str, response: dict[str, Any], ok: bool) -> None:
    assert (check_response(kind, response) is None) is ok


def test_handlers_must_be_callable() -> None:
    with pytest.raises(TypeError):
        mt.InputHandlers(form="not callable")  # type: ignore[arg-type]


def test_resolve_strategy() -> None:
    class Mine:
        def answer(self, client: Any, status: mt.Status, pending: dict[str, Any]) -> None:
            return None

    mine = Mine()
    assert resolve_strategy(mine) is mine
    assert resolve_strategy(lambda s: None).__class__.__name__ == "FunctionStrategy"
    with pytest.raises(ValueError):
        resolve_strategy("ask")
    with pytest.raises(TypeError):
        resolve_strategy(3)
