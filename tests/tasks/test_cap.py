"""The watch's decisions on refused listens (mcp_tasks/_tasks/_cap.py), ids in, listens out: a
refusal that names a limit teaches a cap on ids per stream; any other refusal has its refused ids
found by halving, and teaches none. Issue 33: one stale id among 16 halved the cap for good.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import pytest

from mcp_tasks._errors import McpError
from mcp_tasks._tasks._cap import CAP_TRUST, MAX_CAPPED_STREAMS, MAX_TRIES, Plan, Refusal, StreamCap, refusal

IDS = [f"t{n:02}" for n in range(16)]
Server = Callable[[list[str]], "Refusal | None"]


def refusing(bad: Collection[str] = (), cap: int | None = None, stated: bool = True) -> Server:
    """A server's answer to a listen: None (it opens), or its refusal."""

    def answer(ids: list[str]) -> Refusal | None:
        if cap is not None and len(ids) > cap:
            return Refusal(True, cap if stated else None)
        if set(ids) & set(bad):
            return Refusal(False)
        return None

    return answer


def run(plan: Plan, server: Server) -> tuple[list[list[str]], list[list[str]]]:
    """The streams `plan` opens against `server`, and every listen it tries."""
    streams: list[list[str]] = []
    tried: list[list[str]] = []
    while (attempt := plan.next()) is not None:
        tried.append(attempt.ids)
        answer = server(attempt.ids)
        if answer is None:
            if not attempt.probe:
                streams.append(attempt.ids)
            plan.opened()
        else:
            plan.refused(answer)
    return streams, tried


@pytest.mark.parametrize(
    ("message", "data", "expected"),
    [
        ("taskIds must contain at most 8 entries", None, Refusal(True, 8)),
        ("too many task ids", None, Refusal(True, None)),
        ("Too many taskIds (max 8)", None, Refusal(True, 8)),
        ("maximum 10", None, Refusal(True, 10)),
        ("a subscription takes a maximum of 10 task ids", None, Refusal(True, 10)),
        ("no more than 3 tasks per listen", None, Refusal(True, 3)),
        ("Invalid params", {"max": 8}, Refusal(True, 8)),
        ("Invalid params", {"maxTaskIds": 8}, Refusal(True, 8)),
        ("Invalid params", {"limit": 8}, Refusal(True, 8)),
        ("Invalid params", "at most 8 task ids", Refusal(True, 8)),
        ("Unknown or inaccessible taskId", None, Refusal(False)),
        ("Task nope not found", None, Refusal(False)),  # the official SDK's tasks/get (peers.md)
        ("Failed to retrieve task: Task not found", None, Refusal(False)),  # the TypeScript SDK's
        ("Task 1234 has expired", {"taskId": "1234"}, Refusal(False)),
        ("Task 1234 outlived its maximum lifetime", None, Refusal(False)),
        ("taskIds exceeds the maximum length", None, Refusal(True, None)),
        ("Invalid params", {"max": True, "limit": "8"}, Refusal(False)),
    ],
)
def test_what_a_refusal_says(message: str, data: object, expected: Refusal) -> None:
    assert refusal(McpError(-32602, message, data)) == expected


def test_only_a_refusal_of_params_is_read() -> None:
    assert refusal(McpError(-32601, "Method not found")) is None
    assert refusal(McpError(-32603, "too many task ids")) is None
    assert refusal(McpError(-32602, "too many", kind="transport")) is None


def test_one_stale_id_among_16_is_found_and_left_off_without_a_cap() -> None:
    cap = StreamCap()
    plan = Plan(IDS, (), 0, cap)
    streams, tried = run(plan, refusing(bad={"t11"}))
    assert streams == [[i for i in IDS if i != "t11"]]
    assert plan.bad == ["t11"] and cap.value is None
    assert len(tried) <= 6  # the refused listen, 4 halvings at most, the stream
    assert all(len(ids) <= 8 for ids in tried[1:-1])  # probes: halves


def test_every_bad_id_is_found() -> None:
    plan = Plan(IDS, (), 0, StreamCap())
    streams, _ = run(plan, refusing(bad={"t00", "t07", "t15"}))
    assert sorted(plan.bad) == ["t00", "t07", "t15"]
    assert streams == [[i for i in IDS if i not in {"t00", "t07", "t15"}]]


def test_a_stated_limit_of_8_puts_16_ids_on_two_streams_of_8() -> None:
    cap = StreamCap()
    streams, tried = run(Plan(IDS, (), 0, cap), refusing(cap=8))
    assert streams == [IDS[:8], IDS[8:]] and cap.value == 8
    assert tried == [IDS, IDS[:8], IDS[8:]]


def test_a_limit_unsaid_halves_until_it_fits_on_the_streams_it_may_open() -> None:
    cap = StreamCap()
    plan = Plan(IDS, (), 0, cap)
    streams, _ = run(plan, refusing(cap=5, stated=False))
    assert cap.value == 4 and [len(s) for s in streams] == [4] * MAX_CAPPED_STREAMS
    assert plan.pending == [] and plan.bad == []


def test_ids_beyond_the_capped_streams_are_left() -> None:
    ids = [f"t{n:02}" for n in range(40)]
    plan = Plan(ids, (), 0, StreamCap())
    streams, _ = run(plan, refusing(cap=8))
    assert len(streams) == MAX_CAPPED_STREAMS and plan.pending == ids[8 * MAX_CAPPED_STREAMS :]


def test_a_stated_maximum_above_the_ids_asked_is_about_something_else() -> None:
    cap = StreamCap()
    plan = Plan(["a", "b"], (), 0, cap)
    streams, _ = run(plan, lambda ids: Refusal(True, 3600) if "b" in ids else None)
    assert streams == [["a"]] and plan.bad == ["b"] and cap.value is None


def test_a_merge_refused_for_a_new_id_finds_it_and_keeps_the_others() -> None:
    cap = StreamCap()
    plan = Plan(["bad", "new"], ["a", "b"], 1, cap)
    streams, tried = run(plan, refusing(bad={"bad"}))
    assert streams == [["a", "b", "new"]] and plan.bad == ["bad"] and cap.value is None
    assert tried[1] == ["bad", "new"]  # the new ids are suspected first


def test_a_merge_refused_for_its_size_puts_the_new_ids_on_streams_of_their_own() -> None:
    cap = StreamCap()
    plan = Plan(IDS[8:], IDS[:8], 1, cap)
    streams, _ = run(plan, refusing(cap=8))
    assert streams == [IDS[8:]] and cap.value == 8


def test_an_id_of_the_open_stream_may_be_the_refused_one() -> None:
    plan = Plan(["a"], ["m"], 1, StreamCap())
    streams, tried = run(plan, refusing(bad={"m"}))
    assert streams == [] and tried == [["m", "a"], ["a"]] and plan.bad == ["m"]


def test_a_refusal_of_ids_each_taken_alone_ends_the_plan_and_teaches_no_cap() -> None:
    cap = StreamCap()
    plan = Plan(["a", "b", "c", "d"], (), 0, cap)
    streams, tried = run(plan, lambda ids: Refusal(False) if len(ids) > 1 else None)
    assert streams == [] and plan.pending == ["a", "c"] and cap.value is None
    assert tried[-1] == ["a", "c"]


def test_the_tries_are_bounded() -> None:
    ids = [f"t{n:03}" for n in range(200)]
    plan = Plan(ids, (), 0, StreamCap())
    _, tried = run(plan, refusing(bad=set(ids)))
    assert len(tried) == MAX_TRIES


def test_a_learnt_cap_grows_back_to_where_it_was_refused() -> None:
    cap = StreamCap()
    cap.learn(16, 4)
    for _ in range(CAP_TRUST - 1):
        cap.opened(4)
    cap.opened(3)  # not full: proves nothing
    assert cap.value == 4
    cap.opened(4)
    assert cap.value == 8
    for _ in range(CAP_TRUST):
        cap.opened(8)
    assert cap.value is None  # 16 was refused: tried again without a cap


def test_a_larger_stated_maximum_is_learnt() -> None:
    cap = StreamCap()
    cap.learn(16, 4)
    cap.learn(32, 12)
    assert cap.value == 12
    cap.learn(12, 40)  # a maximum above what was asked: not believed
    assert cap.value == 6


def test_a_plan_is_told_only_of_what_it_tried() -> None:
    with pytest.raises(ValueError, match="no listen was tried"):
        Plan(IDS, (), 0, StreamCap()).opened()
