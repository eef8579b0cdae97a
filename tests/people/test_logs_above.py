"""Logs while a `StatusDisplay` line is live on a terminal: each record is written on
a line of its own above the status line, which is drawn again below it; the handlers are put back
when the line ends (even when the block ends with an error); on a pipe nothing changes. (Warnings:
tests/cli/test_detach.py, in a process of their own.)
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

import mcp_tasks as mt
from tests.screen.terminal import render


class Tty(io.StringIO):
    """A terminal, as far as `StatusDisplay` can tell (no descriptor: matched by identity)."""

    def isatty(self) -> bool:
        return True


def working(message: str) -> mt.Status:
    return mt.Status.from_map({"taskId": "task-0123456789abcdef", "status": "working", "statusMessage": message})


@pytest.fixture
def root_handler() -> Iterator[tuple[logging.StreamHandler[Tty], Tty]]:
    tty = Tty()
    handler = logging.StreamHandler(tty)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield handler, tty
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def test_a_log_record_goes_above_the_live_line_and_the_handler_comes_back(
    root_handler: tuple[logging.StreamHandler[Tty], Tty],
) -> None:
    handler, tty = root_handler
    with pytest.raises(RuntimeError), mt.StatusDisplay(tty, tick=0) as show:
        show(working("run 4 of 9"))
        logging.getLogger("train").warning("ask tool train raised ValueError")
        raise RuntimeError("the block fails")
    assert handler.stream is tty  # put back, even on error
    lines = render(tty.getvalue().encode(), 80)
    assert lines[0] == "ask tool train raised ValueError", lines
    assert lines[1].startswith("[") and lines[1].endswith("working: run 4 of 9"), lines
    logging.getLogger("train").warning("after the display")
    assert tty.getvalue().endswith("working: run 4 of 9\nafter the display\n")


def test_on_a_pipe_the_handlers_are_left_alone(root_handler: tuple[logging.StreamHandler[Tty], Tty]) -> None:
    handler, _ = root_handler
    pipe = io.StringIO()
    handler.setStream(pipe)  # type: ignore[arg-type]
    with mt.StatusDisplay(pipe, tick=0) as show:
        show(working("run 4 of 9"))
        assert handler.stream is pipe
        logging.getLogger("train").warning("a record")
    assert pipe.getvalue().splitlines()[1:] == ["a record"]
