"""Many tasks as a person sees them: `StatusDisplay` and `SetProgress` given to `wait_all`,
`as_completed`, `wait_any` and a batch of futures show the set (counts by state, the failures by
their call and short id, the latest message); questions from several tasks name their task by its
call and are asked one whole form at a time, the live line holding still meanwhile.
"""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._people._asking import turn
from mcp_tasks._people._prompt import TextPrompter
from mcp_tasks._redact import short_id
from mcp_tasks._session._turns import TURNS, Turns
from mcp_tasks.server import Server, ToolError

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
FORM = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
MISSING = "no-such-task-0123456789abcdef"


class Tools:
    """A server whose `step` tasks report a message and wait for their gate."""

    def __init__(self) -> None:
        self.gates: dict[int, threading.Event] = {}
        self.server = Server(poll_interval=0.02)
        self.server.add_tool(self.step, name="step", task="required")
        self.server.add_tool(self.boom, name="boom", task="required")
        self.server.add_tool(self.oops, name="oops", task="required")
        self.server.add_tool(self.ask, name="ask", task="required")
        self.server.add_tool(self.inline, name="inline", task="forbidden")

    def gate(self, n: int) -> threading.Event:
        return self.gates.setdefault(n, threading.Event())

    def step(self, ctx: Any, n: int) -> dict[str, Any]:
        ctx.report(f"step {n} under way")
        self.gate(n).wait(60)
        return {"n": n}

    def boom(self, ctx: Any, report: str = "", api_key: str = "") -> dict[str, Any]:
        raise RuntimeError("boom on purpose")

    def oops(self, ctx: Any) -> dict[str, Any]:
        raise ToolError("a tool error")

    def ask(self, ctx: Any, who: str) -> dict[str, Any]:
        answer = ctx.elicit("form", f"Tell me, {who}", FORM)["content"]
        return {"who": who, "name": answer["name"], "age": answer["age"]}

    def inline(self, ctx: Any) -> dict[str, Any]:
        return {"ran": "inline"}


@pytest.fixture
def tools() -> Iterator[Tools]:
    made = Tools()
    try:
        yield made
    finally:
        for gate in made.gates.values():
            gate.set()
        made.server.close()


def started(client: mt.Client, name: str, arguments: dict[str, Any] | None = None) -> mt.Status:
    status = mt.call_tool(client, name, arguments)
    assert isinstance(status, mt.Status)
    return status


class Tty(io.StringIO):
    """A terminal 60 columns wide, as far as `StatusDisplay` can tell (a shared transcript)."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self.lock:
            return super().write(text)


def test_set_progress_counts_every_state_and_names_the_failures(tools: Tools) -> None:
    seen: list[mt.SetSnapshot] = []

    def watch(snapshot: mt.SetSnapshot) -> None:
        seen.append(snapshot)
        if snapshot.latest and "under way" in snapshot.latest:  # a message was seen: let them end
            tools.gate(1).set()
            tools.gate(2).set()

    with mt.Client.direct(tools.server) as client:
        tasks = [started(client, "step", {"n": 1}), started(client, "step", {"n": 2})]
        tasks.append(started(client, "boom", {"report": "q3", "api_key": "sk-live-0123456789"}))
        tasks.append(started(client, "oops"))
        finals = mt.wait_all(client, [*tasks, MISSING], timeout=30, on_status=mt.SetProgress(watch))
    assert isinstance(finals[-1], mt.FailedWait)
    first, last = seen[0], seen[-1]
    assert (first.total, first.working, first.over) == (5, 5, 0)  # the whole set from the start
    assert (last.total, last.completed, last.failed, last.cancelled, last.working) == (5, 2, 3, 0, 0)
    assert last.finished and last.counts() == "2/5 done, 3 failed"
    boom, oops = tasks[2].task_id, tasks[3].task_id
    # Each failure named by its call (a secret-looking value hidden), or its short id when unknown.
    named = {f'boom {{"report": "q3", "api_key": "***"}} {short_id(boom)}', f"oops {short_id(oops)}"}
    assert set(last.failures) == named | {short_id(MISSING)}
    assert f'boom {{"report": "q3", "api_key": "***"}} {short_id(boom)}' in str(last)
    assert all("sk-live" not in str(s) for s in seen)
    assert [s.over for s in seen] == sorted(s.over for s in seen)
    assert any(re.fullmatch(r"\S+…\S+: step \d under way", s.latest or "") for s in seen)
    assert all(boom not in str(s) and MISSING not in str(s) for s in seen)  # short ids only


def test_a_status_display_writes_the_sets_counts_on_a_pipe(tools: Tools) -> None:
    out = io.StringIO()
    with mt.Client.direct(tools.server) as client:
        tasks = [started(client, "step", {"n": n}) for n in (1, 2, 3)]
        with mt.StatusDisplay(out) as show:
            for n in (1, 2, 3):
                tools.gate(n).set()
            finished = list(mt.as_completed(client, tasks, timeout=30, on_status=show))
            assert show.snapshot() is not None and repr(show) == "<StatusDisplay 3/3 done>"
    assert len(finished) == 3
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("0/3 done, 3 working")
    assert re.match(r"\[\d+\.\ds\] 3/3 done( · .*)?$", lines[-1]), lines
    assert len(lines) == len(set(lines))  # a line when the counts change, not per message


def test_on_a_terminal_the_set_is_one_line_clipped_and_ended(tools: Tools, monkeypatch: pytest.MonkeyPatch) -> None:
    tty = Tty()
    monkeypatch.setattr(mt.StatusDisplay, "_columns", lambda self: 40)
    with mt.Client.direct(tools.server) as client:
        tasks = [started(client, "step", {"n": n}) for n in (1, 2)] + [started(client, "boom")]
        with mt.StatusDisplay(tty, tick=0) as show:
            tools.gate(1).set()
            tools.gate(2).set()
            mt.wait_all(client, tasks, timeout=30, on_status=show)
    drawn = tty.getvalue()
    assert drawn.endswith("\n") and drawn.count("\n") == 1  # one line, ended once the set is over
    frames = drawn.rstrip("\n").split("\r\x1b[K")[1:]
    assert frames and all(len(frame) <= 39 for frame in frames)  # never wraps
    assert frames[-1].startswith("[") and "2/3 done, 1 failed" in frames[-1]


def test_wait_any_shows_the_set_it_was_given(tools: Tools) -> None:
    seen: list[mt.SetSnapshot] = []
    with mt.Client.direct(tools.server) as client:
        tasks = [started(client, "step", {"n": 1}), started(client, "step", {"n": 2})]
        tools.gate(2).set()
        first = mt.wait_any(client, tasks, timeout=30, on_status=mt.SetProgress(seen.append))
        tools.gate(1).set()
    assert first.task_id == tasks[1].task_id
    assert (seen[-1].total, seen[-1].completed, seen[-1].working) == (2, 1, 1)


def test_a_batch_of_futures_is_counted_to_its_end(tools: Tools) -> None:
    progress = mt.SetProgress()
    with mt.Client.direct(tools.server) as client:
        futures = [mt.submit(client, "step", {"n": n}, on_status=progress) for n in (1, 2)]
        futures.append(mt.submit(client, "boom", on_status=progress))
        futures.append(mt.submit(client, "inline", on_status=progress))  # ran synchronously: done at once
        assert progress.snapshot().total == 4
        tools.gate(1).set()
        tools.gate(2).set()
        for future in futures[:2] + futures[3:]:
            future.result(timeout=30)
        with pytest.raises(mt.TaskFailed):
            futures[2].result(timeout=30)
    snapshot = progress.snapshot()
    assert (snapshot.total, snapshot.completed, snapshot.failed, snapshot.working) == (4, 3, 1, 0)
    assert snapshot.failures == (f"boom {short_id(futures[2].task_id)}",)
    first = futures[0]
    assert (first.tool, first.arguments, futures[2].arguments) == ("step", {"n": 1}, None)
    assert first.label == f'step {{"n": 1}} {short_id(first.task_id)}' and futures[3].label == "inline"


def test_a_callback_must_be_callable() -> None:
    with pytest.raises(TypeError, match="callback must be callable"):
        mt.SetProgress(42)  # type: ignore[arg-type]


def test_turns_are_first_come_first_served_and_say_how_many_wait() -> None:
    order: list[tuple[str, int]] = []
    first = threading.Event()
    release = threading.Event()

    def ask(name: str) -> None:
        with turn() as waiting:
            order.append((name, waiting))
            if name == "a":
                first.set()
                release.wait(30)

    threads = [threading.Thread(target=ask, args=("a",))]
    threads[0].start()
    assert first.wait(30)
    for index, name in enumerate(("b", "c"), start=1):
        threads.append(threading.Thread(target=ask, args=(name,)))
        threads[-1].start()
        assert TURNS.queued(index, 30)  # b is queued before c
    release.set()
    for thread in threads:
        thread.join(30)
    assert order == [("a", 0), ("b", 1), ("c", 0)]


class HeldStdin(io.StringIO):
    """Answers a line at a time; the first only once another question waits its turn."""

    def __init__(self, *answers: str) -> None:
        super().__init__("".join(a + "\n" for a in answers))
        self.first = True

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        if self.first:
            self.first = False
            assert TURNS.queued(1, 30), "the second task never asked"
        return super().readline()


def test_two_tasks_asking_at_once_are_asked_one_after_the_other_each_named(tools: Tools) -> None:
    tty = Tty()
    prompter = TextPrompter(stdin=HeldStdin("Ada", "36", "Bob", "41"), out=tty)
    handlers = mt.InputHandlers.interactive(prompter)
    with mt.Client.direct(tools.server, input_handlers=handlers) as client, mt.StatusDisplay(tty, tick=0) as show:
        futures = [mt.submit(client, "ask", {"who": who}, on_status=show) for who in ("first", "second")]
        results = [f.result(timeout=30)["structuredContent"] for f in futures]
    text = tty.getvalue()
    headers = re.findall(r'\[ask \{"who": "(\w+)"\} (\S+)\] The server asks: Tell me, (\w+)', text)
    ids = {short_id(f.task_id): f for f in futures}
    assert sorted(who for _, _, who in headers) == ["first", "second"]
    assert all(short in ids and ids[short].arguments == {"who": who} for who, short, _ in headers)
    # Each form is asked whole: its two fields, before the other task's header.
    questions = re.findall(r"Tell me, (\w+)|  (name|age) \[", text)
    flat = [who or field for who, field in questions]
    assert flat in (
        ["first", "name", "age", "second", "name", "age"],
        ["second", "name", "age", "first", "name", "age"],
    )
    # The live line held still while each form was asked (between two forms it may be drawn again).
    for start in [m.start() for m in re.finditer("The server asks", text)]:
        prompts = [m.end() for m in re.finditer(r"\(empty to (?:decline|skip)\): ", text[start:])]
        assert len(prompts) >= 2
        assert "\r\x1b[K" not in text[start : start + prompts[1]]
    answered = {r["who"]: (r["name"], r["age"]) for r in results}
    first_who = flat[0]
    other = "second" if first_who == "first" else "first"
    assert answered == {first_who: ("Ada", 36), other: ("Bob", 41)}
    assert text.rstrip("\n").split("\n")[-1].startswith("\r\x1b[K[") and "2/2 done" in text.splitlines()[-1]


def test_a_servers_message_is_shown_printable_and_with_short_ids() -> None:
    task_id = "abcd0123456789efghij"
    progress = mt.SetProgress()
    progress(mt.Status(task_id=task_id, status=mt.TaskState.WORKING, status_message=f"\x1b[2Jwiped {task_id}"))
    latest = progress.snapshot().latest
    assert latest == "abcd…ghij: \\x1b[2Jwiped abcd…ghij"


def test_a_question_ends_the_live_line_and_it_is_drawn_again_after_unless_closed() -> None:
    working = mt.Status(task_id="t" * 20, status=mt.TaskState.WORKING, status_message="busy")
    tty = Tty()
    show = mt.StatusDisplay(tty, tick=0)
    show(working)
    with turn():
        tty.write("question? ")
        show(working)  # news while the question is on the screen: not drawn over it
        assert tty.getvalue().endswith("busy\nquestion? ")
    assert re.search(r"question\? \r\x1b\[K\[[\d.]+s\] working: busy$", tty.getvalue())
    show.close()
    closed = tty.getvalue()
    with turn():
        tty.write("another\n")
    assert tty.getvalue() == closed + "another\n"  # a closed display stays closed


def test_a_future_that_stops_for_input_counts_as_needing_it(tools: Tools) -> None:
    progress = mt.SetProgress()
    with mt.Client.direct(tools.server) as client:
        future = mt.submit(client, "ask", {"who": "nobody"}, input="return", on_status=progress)
        with pytest.raises(mt.InputRequired):
            future.result(timeout=30)
        snapshot = progress.snapshot()
        assert (snapshot.total, snapshot.input_required, snapshot.failed) == (1, 1, 0)
        assert snapshot.counts() == "0/1 done, 1 needs input"
        mt.cancel_task(client, future.task_id or "")


def test_a_single_waits_failure_does_not_make_a_display_of_a_set(tools: Tools) -> None:
    out = io.StringIO()
    with mt.Client.direct(tools.server) as client, mt.StatusDisplay(out) as show:
        with pytest.raises(mt.McpError):
            mt.wait_task(client, MISSING, timeout=30, listen=True, on_status=show)
        assert show.snapshot() is None


def test_a_question_interrupted_while_it_waits_its_turn_leaves_the_queue() -> None:
    turns = Turns()
    real_wait = turns._changed.wait
    interrupted = threading.Event()

    def wait(timeout: float | None = None) -> bool:
        if threading.current_thread().name == "b" and not interrupted.is_set():
            interrupted.set()
            raise KeyboardInterrupt  # Ctrl-C while waiting its turn
        return real_wait(timeout)

    turns._changed.wait = wait  # type: ignore[method-assign]
    served: list[str] = []
    with turns.turn():
        outcome: list[BaseException] = []

        def ask() -> None:
            try:
                with turns.turn():
                    served.append(threading.current_thread().name)
            except KeyboardInterrupt as exc:
                outcome.append(exc)

        b = threading.Thread(target=ask, name="b")
        b.start()
        b.join(30)
        c = threading.Thread(target=ask, name="c")
        c.start()
        assert turns.queued(1, 30)
    c.join(30)
    assert served == ["c"] and len(outcome) == 1 and interrupted.is_set()
