"""The single wait's decisions (`WaitCore`) over generated event sequences, driven by a model of
the shell that answers each step as the world might (a lease taken or not, answers replayed,
given, sent or lost, calls that fail), interleaved with statuses, lease changes, 2025-era stops,
the deadline and close. Whatever the order: the first terminal status taken in is the outcome,
nothing unfinished is recorded without the lease or after an end, no input key is sent twice,
and the deadline or close ends the wait for good.
"""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

import mcp_tasks as mt
from mcp_tasks._tasks._wait_core import Ask, Finish, Raise, ReadAgain, Replay, Send, Step, TakeLease, WaitCore
from tests.fixtures.servers import make_server

KEYS = ("a", "b", "c")
STATES = [*mt.TaskState, *[mt.TaskState.WORKING] * 3, *[mt.TaskState.INPUT_REQUIRED] * 9]  # an end ends it all


def status(state: mt.TaskState, keys: tuple[str, ...] = (), *, detailed: bool = True) -> mt.Status:
    requests = {key: {"method": "elicitation/create", "params": {"message": key}} for key in keys}
    return mt.Status(
        task_id="t-1",
        status=state,
        input_requests=requests if state is mt.TaskState.INPUT_REQUIRED else {},
        result={"content": []} if state is mt.TaskState.COMPLETED and detailed else None,
        error={"code": -1, "message": "no"} if state is mt.TaskState.FAILED and detailed else None,
    )


statuses = st.builds(
    status,
    st.sampled_from(STATES),
    st.lists(st.sampled_from(KEYS), unique=True, min_size=1, max_size=3).map(tuple),
    detailed=st.booleans(),
)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "seen": statuses,
    "lease": st.booleans(),
    "answered": st.none(),
    "stop": st.sampled_from(["status", "error"]),
}
# Statuses most often (a stop ends the wait at the next one); the deadline and close come last.
events = st.sampled_from(["seen"] * 12 + ["lease"] * 2 + ["answered", "stop"]).flatmap(
    lambda kind: st.tuples(st.just(kind), VALUES[kind])
)
closings = st.sampled_from([None, ("deadline", None), ("close", None)])


@attrs.define
class World:
    """What the model shell saw: the lease as the store has it, and what was recorded and sent."""

    held: bool = False
    recorded: list[mt.Status] = attrs.Factory(list)
    sent: list[str] = attrs.Factory(list)
    first_terminal: mt.Status | None = None
    stop_pending: bool = False


def carry_out(core: WaitCore, step: Step, world: World, draw: Any) -> Finish | None:
    """Do what `step` says as a shell would, drawing what the world answers; the end, if any."""
    while True:
        if step.record is not None:
            if not step.record.terminal:
                assert core.holding and world.held, "an unfinished status recorded without the lease"
                assert not any(s.terminal for s in world.recorded), "a finished task recorded unfinished"
            world.recorded.append(step.record)
        then = step.then
        if isinstance(then, (ReadAgain, Raise)):
            return None
        if isinstance(then, Finish):
            return then
        if isinstance(then, TakeLease):
            world.held = draw(st.booleans())
            step = core.took(world.held)
        elif isinstance(then, Replay):
            assert world.held, "answers replayed without the lease"
            if draw(st.booleans()):
                step = core.failed(mt.StoreError("the store is down"))
            else:
                keys = draw(st.lists(st.sampled_from(sorted(then.pending)), unique=True))
                step = core.replayed({key: {"action": "accept"} for key in keys})
        elif isinstance(then, Ask):
            choice = draw(st.sampled_from(["none", "bad", "raise", *["some"] * 9]))
            if choice == "raise":
                step = core.failed(RuntimeError("the handler failed"))
            elif choice == "none":
                step = core.responses(None)
            elif choice == "bad":
                step = core.responses(["not", "a", "mapping"])
            else:
                keys = draw(st.lists(st.sampled_from(sorted(set(then.pending) | set(world.sent))), unique=True))
                step = core.responses({key: {"action": "accept"} for key in keys})
        else:
            assert isinstance(then, Send)
            assert not set(then.responses) & set(world.sent), "an input key sent twice"
            outcome = draw(st.sampled_from(["done", "done", "taken", "lost"]))
            if outcome == "lost":  # the send failed on the way
                step = core.failed(mt.TransportError("the connection dropped"))
                continue
            world.held = outcome == "done"  # a send takes a lapsed lease again, or finds it taken
            core.lease_held(world.held)
            if world.held:
                world.sent.extend(then.responses)
            step = core.sent(world.held)


@settings(derandomize=True, deadline=None, max_examples=200)
@given(st.data(), st.one_of(st.none(), statuses), st.booleans(), st.booleans())
def test_the_core_keeps_its_rules_whatever_the_events(
    data: st.DataObject, start: mt.Status | None, store: bool, returns: bool
) -> None:
    core = WaitCore("t-1", start, store=store, returns=returns, timeout=5.0)
    world = World()
    end: Finish | None = None
    if start is not None:
        if start.terminal:
            world.first_terminal = start
        end = carry_out(core, core.start(start), world, data.draw)
    last = data.draw(closings)
    for kind, value in [*data.draw(st.lists(events, min_size=8, max_size=30)), *([last] if last else [])]:
        before = core.ended
        if kind == "seen":
            assert isinstance(value, mt.Status)
            if before is None and world.first_terminal is None and value.terminal and not world.stop_pending:
                world.first_terminal = value
            leaves = data.draw(st.booleans())
            end = carry_out(core, core.seen(value, leaves=leaves), world, data.draw) or end
        elif kind == "lease":
            world.held = bool(value)
            core.lease_held(world.held)
        elif kind == "stop":
            world.stop_pending = True
            core.stopped(status(mt.TaskState.INPUT_REQUIRED, ("z",)) if value == "status" else RuntimeError("no"))
        elif kind == "answered":
            core.answered_in_place()
        else:
            step = core.deadline() if kind == "deadline" else core.closed(mt.McpError(-1, "the client was closed"))
            assert isinstance(step.then, Finish) and core.ended is step.then, "the deadline or close did not end it"
            if before is None:
                assert step.then.error is not None
            end = step.then
        if before is not None:
            assert core.ended is before, "a wait over ended again otherwise"
    if end is not None and core.ended is not None:
        assert end == core.ended
        outcome = core.ended.status
        if outcome is not None and world.first_terminal is not None:
            assert outcome.status is world.first_terminal.status, "the first terminal status is not the outcome"
        if outcome is not None and outcome.terminal:
            assert world.first_terminal is not None and outcome.status is world.first_terminal.status
    assert len(world.sent) == len(set(world.sent)), "an input key sent twice"
    ends = [s for s in world.recorded if s.terminal]
    assert all(s.status is ends[0].status for s in ends), "two different ends recorded"


@settings(derandomize=True, deadline=None, max_examples=100)
@given(st.lists(events, max_size=15), st.sampled_from(["deadline", "close"]))
def test_the_deadline_or_close_always_ends_the_wait(before: list[tuple[str, Any]], last: str) -> None:
    """Whatever came before (an end too), the deadline or close leaves the wait over for good."""
    core = WaitCore("t-1", store=True, timeout=5.0)
    for kind, value in before:
        if kind == "seen":
            core.seen(value)
        elif kind == "lease":
            core.lease_held(bool(value))
    step = core.deadline() if last == "deadline" else core.closed(mt.McpError(-1, "the client was closed"))
    assert isinstance(step.then, Finish) and core.ended is step.then
    again = core.seen(status(mt.TaskState.COMPLETED))
    assert again.then is core.ended and again.record is None  # over: nothing is recorded any more


def test_a_status_read_without_the_lease_is_not_recorded_and_one_read_with_it_is() -> None:
    core = WaitCore("t-1", store=True)
    assert core.seen(status(mt.TaskState.WORKING)).record is None
    core.lease_held(True)
    working = status(mt.TaskState.WORKING)
    step = core.seen(attrs.evolve(working, status_message="half way"))
    assert step.record is not None and step.record.status_message == "half way"


def test_input_waits_for_the_lease_and_a_lease_just_taken_reads_again_first() -> None:
    core = WaitCore("t-1", store=True, min_poll_interval=0.01)
    asked = status(mt.TaskState.INPUT_REQUIRED, ("a",))
    assert isinstance(core.seen(asked).then, TakeLease)
    assert isinstance(core.took(True).then, ReadAgain) and core.when(asked) == 0.01
    step = core.seen(asked)
    assert isinstance(step.then, Replay) and list(step.then.pending) == ["a"]
    step = core.replayed({})
    assert isinstance(step.then, Ask)
    step = core.responses({"a": {"action": "accept"}})
    assert isinstance(step.then, Send) and list(step.then.responses) == ["a"]
    assert isinstance(core.sent(True).then, ReadAgain)
    assert isinstance(core.seen(asked).then, ReadAgain)  # the server has not caught up: "a" is not sent again


def test_a_refused_request_after_the_end_was_read_does_not_replace_it() -> None:
    """A 2025-era request refused on the delivery thread after the wait began from a completed
    status without its result: the end stays the outcome, and nothing unfinished is recorded.
    """
    core = WaitCore("t-1", store=True)
    core.lease_held(True)
    step = core.start(status(mt.TaskState.COMPLETED, detailed=False))
    assert isinstance(step.then, ReadAgain) and step.record is not None  # an end: recorded
    core.stopped(status(mt.TaskState.INPUT_REQUIRED, ("z",)))
    step = core.seen(status(mt.TaskState.COMPLETED))
    assert isinstance(step.then, Finish) and step.then.status is not None
    assert step.then.status.status is mt.TaskState.COMPLETED and step.record is not None
    assert step.record.status is mt.TaskState.COMPLETED


def test_an_answer_the_strategy_gives_again_is_not_sent_again() -> None:
    """Through the real shell: a strategy that remembers its answers returns the first one again
    when the task asks its second question; only the new key goes in the second tasks/update.
    """
    updates: list[list[str]] = []

    def heard(method: str, params: dict[str, Any]) -> None:
        if method == "tasks/update":
            updates.append(sorted(params.get("inputResponses", {})))

    remembered: dict[str, Any] = {}

    def remembering(status: mt.Status) -> dict[str, Any]:
        remembered.update({key: {"action": "accept"} for key in status.input_requests})
        return dict(remembered)

    server = make_server(on_request=heard)
    with mt.Client.direct(server) as client:
        result = mt.call_and_await(client, "ask_in_turn", input=remembering, timeout=30)
    server.close()
    assert set(result["structuredContent"]) == {"first", "second"}
    assert updates == [["first"], ["second"]]
