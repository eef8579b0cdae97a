"""How a task's progress looks (``notifications/progress``: a value, maybe a total and a
message): a bar of block characters on a terminal line, a ``<progress>`` element in a notebook.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, NamedTuple

from mcp_tasks._printable import printable

if TYPE_CHECKING:
    from mcp_tasks._status import Status

__all__ = ["BAR_WIDTH", "NARROW", "NARROW_BAR", "Reported", "Shown", "bar", "line_part", "progress_text"]

BAR_WIDTH = 12
"""Characters of the terminal bar (`NARROW_BAR` on a terminal under `NARROW` columns)."""
NARROW, NARROW_BAR = 60, 5
_EIGHTHS = " ▏▎▍▌▋▊▉"


class Reported(NamedTuple):
    """A task's latest progress, as an ``on_progress`` hears it."""

    progress: float
    total: float | None
    message: str | None


def _number(value: float) -> str:
    return f"{value:g}"


def _fraction(reported: Reported) -> float | None:
    total = reported.total
    if total is None or total <= 0:
        return None
    return min(max(reported.progress / total, 0.0), 1.0)


def progress_text(reported: Reported) -> str:
    """``3/4 (75%)``, or ``3`` when the total is unknown."""
    fraction = _fraction(reported)
    if fraction is None or reported.total is None:
        return _number(reported.progress)
    return f"{_number(reported.progress)}/{_number(reported.total)} ({fraction:.0%})"


def bar(reported: Reported, width: int = BAR_WIDTH) -> str:
    """``█████████▍  `` for 3/4: full blocks, an eighth block, blanks; empty when the total is unknown."""
    fraction = _fraction(reported)
    if fraction is None:
        return ""
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    drawn = "█" * full + (_EIGHTHS[part] if part else "")
    return "▕" + drawn.ljust(width) + "▏"


def line_part(reported: Reported | None, width: int = BAR_WIDTH) -> str:
    """What a status line says of the progress: `` ▕███   ▏ 1/4 (25%) copying`` (a bar `width` wide)."""
    if reported is None:
        return ""
    drawn = bar(reported, width)
    message = f" {reported.message}" if reported.message else ""
    return (f" {drawn}" if drawn else "") + f" {progress_text(reported)}{message}"


class Shown:
    """A status with its task's latest progress, as a notebook shows it (the status's own table,
    then a ``<progress>`` bar, the numbers and the message); its repr is the text form.
    """

    def __init__(self, status: Status | None, reported: Reported) -> None:
        self.status = status
        self.reported = reported

    def _repr_html_(self) -> str:
        table = self.status._repr_html_() if self.status is not None else ""
        fraction = _fraction(self.reported)
        element = ""
        if fraction is not None and self.reported.total is not None:
            element = f"<progress value='{self.reported.progress:g}' max='{self.reported.total:g}'></progress> "
        message = f" {html.escape(printable(self.reported.message))}" if self.reported.message else ""
        return f"{table}<div>{element}{html.escape(progress_text(self.reported))}{message}</div>"

    def __repr__(self) -> str:
        status = self.status.wire_status if self.status is not None else "waiting"
        return printable(f"{status}{line_part(self.reported)}")
