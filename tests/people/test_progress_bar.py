"""A task's progress as a person sees it: `StatusDisplay` draws value/total as a bar on the live
terminal line (fitting the width), writes a line per report on a pipe, and shows a ``<progress>``
bar in a notebook; a wait given the display as ``on_status`` feeds it.
"""

from __future__ import annotations

import io
import threading

import mcp_tasks as mt
from mcp_tasks._people._bar import Reported, Shown, bar, progress_text
from mcp_tasks._people._display import status_line
from tests.foreign.progress_http import LegacyProgressServer

WORKING = mt.Status.from_map(
    {"taskId": "a" * 32, "status": "working", "statusMessage": "copying", "createdAt": "2026-12-01T10:00:00Z"}
)


class Tty(io.StringIO):
    """A terminal 80 columns wide (as far as the display asks)."""

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        raise OSError("no descriptor")  # the display then takes 80 columns


def test_the_bar_and_the_numbers() -> None:
    assert bar(Reported(0, 4, None)) == "▕" + " " * 12 + "▏"
    assert bar(Reported(4, 4, None)) == "▕" + "█" * 12 + "▏"
    assert bar(Reported(1, 3, None)) == "▕████" + " " * 8 + "▏"
    assert bar(Reported(1, 16, None)) == "▕▊" + " " * 11 + "▏"  # eighths of a cell
    assert bar(Reported(9, 4, None)) == "▕" + "█" * 12 + "▏"  # past the total: full, not wider
    assert bar(Reported(3, None, None)) == ""  # no total: no bar
    assert progress_text(Reported(3, 4, None)) == "3/4 (75%)"
    assert progress_text(Reported(2.5, None, None)) == "2.5"


def test_a_status_line_carries_the_bar_and_the_progress_message() -> None:
    line = status_line(WORKING, 12, Reported(3, 4, "rows"))
    assert line == "[12s] working ▕█████████   ▏ 3/4 (75%) rows: copying"
    assert status_line(None, None, Reported(1, None, None)) == "working 1"  # before the first status
    assert status_line(WORKING, 12) == "[12s] working: copying"  # no progress: as before


def test_a_live_terminal_line_shows_the_bar_and_a_pipe_a_line_per_report() -> None:
    tty = Tty()
    display = mt.StatusDisplay(tty, tick=0)
    display(WORKING)
    display.progress(1, 4, "rows")
    display.progress(1, 4, "rows")  # the same again: not drawn again
    display.progress(3, 4, "rows")
    display.close()
    frames = tty.getvalue().split("\r\x1b[K")[1:]
    assert [f.split("working")[1].split(":")[0] for f in frames] == [
        "",
        " ▕███         ▏ 1/4 (25%) rows",
        " ▕█████████   ▏ 3/4 (75%) rows",
    ]
    assert all(len(f.rstrip("\n")) <= 79 for f in frames)  # one line on an 80-column terminal
    pipe = io.StringIO()
    shown = mt.StatusDisplay(pipe)
    shown(WORKING)
    shown.progress(2, 4, None)
    lines = pipe.getvalue().splitlines()
    assert len(lines) == 2 and lines[1].endswith("working ▕██████      ▏ 2/4 (50%): copying")


def test_a_notebook_shows_a_progress_element() -> None:
    page = Shown(WORKING, Reported(3, 4, "rows <b>"))._repr_html_()
    assert "<progress value='3' max='4'></progress>" in page
    assert "3/4 (75%) rows &lt;b&gt;" in page  # the server's text escaped
    assert "<table>" in page  # the status's own table above it
    assert "<progress" not in Shown(None, Reported(3, None, None))._repr_html_()  # no total, no bar
    assert repr(Shown(WORKING, Reported(1, 2, None))) == "working ▕██████      ▏ 1/2 (50%)"


def test_a_display_given_to_a_wait_shows_what_the_server_reports() -> None:
    class Watched(Tty):
        def __init__(self) -> None:
            super().__init__()
            self.changed = threading.Condition()

        def write(self, text: str) -> int:
            with self.changed:
                self.changed.notify_all()
                return super().write(text)

        def until(self, text: str) -> None:
            with self.changed:
                self.changed.wait_for(lambda: text in self.getvalue())

    tty = Watched()
    with LegacyProgressServer() as server, mt.Client.http(server.url) as client:
        status = mt.call_tool(client, "report", {"before": [[1, 4, "rows"]]})
        assert isinstance(status, mt.Status)
        with mt.StatusDisplay(tty, tick=0) as display:
            waiting = threading.Thread(target=lambda: mt.wait_task(client, status, on_status=display, timeout=None))
            waiting.start()
            tty.until("1/4 (25%) rows")  # kept from the call, shown by the later wait
            server.step(status.task_id, 3, 4, "rows")
            tty.until("▕█████████   ▏ 3/4 (75%) rows")
            server.finish(status.task_id)
            waiting.join()
