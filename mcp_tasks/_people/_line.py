"""One line of text about a task on a terminal: the status line a single wait's display draws,
and any line clipped to the terminal's width so that it never wraps.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

from mcp_tasks._people._bar import BAR_WIDTH, Reported, line_part
from mcp_tasks._people._progress import clock_text
from mcp_tasks._printable import printable
from mcp_tasks._status_rows import shown

if TYPE_CHECKING:
    from mcp_tasks._status import Status

__all__ = ["clip", "status_line"]


def status_line(
    status: Status | None,
    elapsed: float | None = None,
    reported: Reported | None = None,
    bar: int = BAR_WIDTH,
    label: str | None = None,
) -> str:
    """One line: ``[12s] working: exporting row 2 of 3``; with the task's latest progress,
    ``[12s] working ▕█████▋      ▏ 19/40 (48%) rows: exporting`` (a bar `bar` wide); with the
    task's call (`label`), ``[12s] working ▕…▏ 19/40 · export {"report": "q3"} e294…b175: exporting``
    (the state first: what a narrow terminal cuts is the end).
    """
    clock = f"[{clock_text(elapsed)}] " if elapsed is not None else ""
    named = f" · {printable(label)}" if label else ""
    if status is None:
        return f"{clock}working{line_part(reported, bar)}{named}"
    message = f": {status.status_message}" if status.status_message else ""
    return shown(status, f"{clock}{status.wire_status}{line_part(reported, bar)}{named}{message}")


def clip(text: str, columns: int) -> str:
    """`text` on one line of a terminal `columns` wide: control characters (a server's newlines,
    tabs, escapes) are shown as escapes (`printable`), wide characters count twice, and what does not fit is cut with
    an ellipsis, so the line never wraps (the last column is left free: some terminals wrap there).
    """
    flat = printable(text)
    room = max(columns - 1, 1)
    width, cut = 0, None
    for index, ch in enumerate(flat):
        width += _width(ch)
        if width > room - 1 and cut is None:
            cut = index
        if width > room:
            return flat[: cut if cut is not None else index] + "…"
    return flat


def _width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
