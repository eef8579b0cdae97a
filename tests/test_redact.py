"""Ids that never look alike and never leak: `short_id` keeps both ends of an id, `redact_ids`
shortens ids inside a text, and no full task or session id reaches a message, a repr or a display.
"""

from __future__ import annotations

from typing import Any

import pytest

import mcp_tasks as mt
from mcp_tasks._input import input_failure
from mcp_tasks._people._display import status_line
from mcp_tasks._redact import SECRET_LENGTH, redact_ids, redact_text, short_id

# Two task ids as a server that prefixes every id with its session's hex makes them.
PREFIX = "9f86d081884c7d659a2f"
TASK_A = PREFIX + "ea0c55ad015a3bf4f1b2"
TASK_B = PREFIX + "0b822cd15d6c15b0f00a"
SESSION = "5feceb66ffc86f38d952786c6d696c79c2dbc239dd4e91b4"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("0123456789abcdef", "0123…cdef"),
        ("abcdefghijkl", "abcd…ijkl"),
        ("abcdefghijk", "ab…jk"),
        ("abcdefgh", "ab…gh"),
        ("abcdefg", "ab…"),
        ("abc", "ab…"),
        ("ab", "ab"),
        ("", ""),
        (12345678901234, "1234…1234"),
    ],
)
def test_short_id_keeps_both_ends(value: object, shown: str) -> None:
    assert short_id(value) == shown


def test_an_id_of_8_or_more_characters_is_never_shown_whole() -> None:
    for size in range(SECRET_LENGTH, 80):
        value = "".join(chr(ord("a") + i % 26) for i in range(size))
        assert value not in short_id(value)
        assert len(short_id(value)) < size


def test_ids_that_share_a_long_prefix_look_different() -> None:
    assert short_id(TASK_A) != short_id(TASK_B)
    assert (short_id(TASK_A), short_id(TASK_B)) == ("9f86…f1b2", "9f86…f00a")


def test_short_id_of_anything_never_fails() -> None:
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    assert short_id(10**5000) == "<int>"  # too long for repr
    assert short_id(Broken()) == "<Broken>"
    assert short_id(None) == "No…"


def test_redact_ids_shortens_every_occurrence() -> None:
    text = f"task {TASK_A} failed; retry {TASK_A}:7 or see {TASK_B}"
    shown = redact_ids(text, TASK_A, TASK_B)
    assert shown == f"task {short_id(TASK_A)} failed; retry {short_id(TASK_A)}:7 or see {short_id(TASK_B)}"
    assert TASK_A not in shown and TASK_B not in shown


def test_redact_ids_matches_the_longest_id_first_in_one_pass() -> None:
    inner = "abcdefgh12"
    outer = inner + "-and-more-0"
    assert redact_ids(f"<{outer}> <{inner}>", inner, outer) == f"<{short_id(outer)}> <{short_id(inner)}>"


def test_redact_ids_leaves_short_ids_and_other_text_alone() -> None:
    assert redact_ids("task t-1 in state t-1x", "t-1") == "task t-1 in state t-1x"
    assert redact_ids("nothing to hide", TASK_A, None, 7) == "nothing to hide"
    assert redact_ids(f"a{TASK_A}b") == f"a{TASK_A}b"  # no ids given


def test_redact_text_uses_the_new_short_form() -> None:
    assert redact_text(f"token {TASK_A} here") == f"token {short_id(TASK_A)} here"


# -- no full id anywhere a person looks ------------------------------------------------------------


class Printer:
    """Enough of IPython's pretty printer for `_repr_pretty_`."""

    def __init__(self) -> None:
        self.out: list[str] = []

    def text(self, text: str) -> None:
        self.out.append(text)

    def break_(self) -> None:
        self.out.append("\n")


def everything_shown(item: Any) -> str:
    printer = Printer()
    item._repr_pretty_(printer, False)
    return "\n".join([str(item), repr(item), item._repr_html_(), "".join(printer.out)])


def legacy_status(task_id: str, **fields: Any) -> mt.Status:
    saved = {"io.github.mcp-tasks/saved": {"era": "legacy", "sessionId": SESSION}}
    return mt.Status.from_map({"taskId": task_id, **fields, **saved})


def statuses(task_id: str) -> list[mt.Status]:
    """Statuses whose server texts and keys embed the task id (and the legacy one's session id)."""
    said = f"working on {task_id}"
    return [
        mt.Status.from_map({"taskId": task_id, "status": "working", "statusMessage": said}),
        mt.Status.from_map({"taskId": task_id, "status": f"paused:{task_id}"}),
        mt.Status.from_map(
            {
                "taskId": task_id,
                "status": "input_required",
                "statusMessage": said,
                "inputRequests": {f"{task_id}:0a1b": {"method": "roots/list"}},
            }
        ),
        mt.Status.from_map(
            {"taskId": task_id, "status": "failed", "error": {"code": -32050, "message": f"{task_id} crashed"}}
        ),
        mt.Status.from_map({"taskId": task_id, "status": "cancelled", "statusMessage": said}),
        legacy_status(task_id, status="working", statusMessage=f"{said} in session {SESSION}"),
    ]


def errors(status: mt.Status) -> list[Any]:
    made: list[Any] = [mt.TaskTimeout(status.task_id, 1.0, status), mt.TaskTimeout(status.task_id, 1.0, None)]
    if status.status is mt.TaskState.FAILED:
        made.append(mt.TaskFailed(status))
    if status.status is mt.TaskState.CANCELLED:
        made.append(mt.TaskCancelled(status))
    if status.status is mt.TaskState.INPUT_REQUIRED:
        made.append(mt.InputRequired(status))
        key = next(iter(status.input_requests))
        made.append(input_failure(key, mt.InputError(f"no answer for {status.task_id}").reason, status))
    return made


@pytest.mark.parametrize("task_id", [TASK_A, TASK_B])
def test_no_full_id_in_statuses_or_errors(task_id: str) -> None:
    for status in statuses(task_id):
        shown = everything_shown(status) + status_line(status, 1.0)
        assert task_id not in shown and SESSION not in shown, status
        assert short_id(task_id) in shown
        for error in errors(status):
            shown = everything_shown(error)
            assert task_id not in shown and SESSION not in shown, shown
            assert short_id(task_id) in shown, shown


def test_messages_keep_what_they_say_with_the_id_shortened() -> None:
    failed, paused = statuses(TASK_A)[3], statuses(TASK_A)[1]
    assert str(mt.TaskFailed(failed)) == "Task 9f86…f1b2 failed: 9f86…f1b2 crashed (error -32050)"
    assert failed.error == {"code": -32050, "message": f"{TASK_A} crashed"}  # the status keeps the text as sent
    assert "(last seen paused:9f86…f1b2)" in str(mt.TaskTimeout(TASK_A, 1.0, paused))
    needs = mt.InputRequired(statuses(TASK_A)[2])
    assert str(needs).startswith("Task 9f86…f1b2 needs input this wait did not answer ('9f86…f1b2:0a1b')")
    assert "session_id" not in repr(statuses(TASK_A)[0])
    assert repr(statuses(TASK_A)[5]).endswith("era='legacy', session_id='5fec…91b4')")


def test_two_tasks_with_one_prefix_read_differently() -> None:
    for one, other in zip(statuses(TASK_A), statuses(TASK_B), strict=True):
        assert repr(one) != repr(other)
        assert one._repr_html_() != other._repr_html_()


def test_a_session_scoped_id_is_shortened_whole_and_by_its_parts() -> None:
    from mcp_tasks._redact import ids_in, redact_server_text

    scope, part = "9f86d081884c7d659a2fea0c55ad015a", "2c1acac3-daa3-49d4-a28c-f1ddcc435a06"
    task = f"{scope}:{part}"
    assert redact_ids(f"Task not found: {task}", task) == f"Task not found: {short_id(task)}"
    assert redact_ids(f"no task {part} in {scope}", task) == f"no task {short_id(part)} in {short_id(scope)}"
    assert redact_ids("ab:cd is short", "ab:cd") == "ab:cd is short"
    # The server's own form of the id (a key the client never sent) is cut as a token.
    assert redact_server_text(f"Task {scope}:{LEGACY_UUID} not found", "other") == (
        f"Task {short_id(scope)}:{short_id(LEGACY_UUID)} not found"
    )
    params = {"taskId": task, "notifications": {"taskIds": [TASK_A, 3, TASK_B]}, "other": {"taskId": 7}}
    assert ids_in(params) == [task, TASK_A, TASK_B]
    assert ids_in(["not", "a", "dict"]) == []


LEGACY_UUID = "240f77c3-a8f3-45f2-9eb0-d3ae89bbd98b"
