"""A person's turn: a question to whoever runs the code waits for the one before it to be answered,
and live status lines hold still while it is on the screen.

The queue itself (`mcp_tasks._session._turns`) stands below the session, which ends the waits of
its questions when it closes; this is how a prompt and a live line take part in it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from mcp_tasks._session._turns import TURNS, Line, Until, current_until

__all__ = ["hold_lines", "lines_held", "turn"]


def turn(until: Until | None = None) -> AbstractContextManager[int]:
    """Wait for this thread's turn to ask a person, first come first served; the block holds it
    and yields how many other questions wait behind it. Live status lines hold still meanwhile.
    The wait ends as `until` says (by default what `waiting_until` set in this thread, if any).
    """
    return TURNS.turn(until if until is not None else current_until())


def lines_held() -> bool:
    """Whether a question is on the screen now: a live line waits to draw."""
    return TURNS.held()


def hold_lines(line: Line) -> None:
    """Have `line` hold still while questions are asked (kept weakly)."""
    TURNS.register(line)
