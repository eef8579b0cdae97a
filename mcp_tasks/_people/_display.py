"""How a status and an error look to a person: a short text line, IPython's pretty form, an HTML
table for notebooks, and `StatusDisplay`, a ready ``on_status`` that keeps one line (or one
notebook output) up to date. The value types hand their rows to `pretty` and `table` through
`mcp_tasks._render_hook`, where this module registers them when it loads (which the package has
happen when a value first shows).

IPython is used only when it is already imported (a notebook or an IPython shell); it is never a
dependency. Task and session ids appear only in their short forms, even inside a server's text,
and a server's text is shown through `printable` (control and escape characters as escapes).
"""

from __future__ import annotations

import html
import importlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from mcp_tasks._people._above import Above
from mcp_tasks._people._asking import hold_lines, lines_held
from mcp_tasks._people._bar import BAR_WIDTH, NARROW, NARROW_BAR, Reported, Shown
from mcp_tasks._people._line import clip, status_line
from mcp_tasks._people._progress import SetProgress, SetSnapshot, set_line
from mcp_tasks._render_hook import register_renderer
from mcp_tasks._threads import start_thread

if TYPE_CHECKING:
    from mcp_tasks._status import Status

__all__ = [
    "StatusDisplay",
    "clip",
    "pretty",
    "status_line",
    "table",
]

TICK = 1.0
"""How often a live terminal line redraws its elapsed time (seconds)."""


def pretty(title: str, rows: list[tuple[str, str]], printer: Any, cycle: bool) -> None:
    """IPython's ``_repr_pretty_``: a title and indented rows."""
    if cycle:
        printer.text(f"{title}(...)")
        return
    width = max((len(label) for label, _ in rows), default=0)
    printer.text(title)
    for label, value in rows:
        printer.break_()
        printer.text(f"  {label.ljust(width)}  {value}")


def table(title: str, rows: list[tuple[str, str]]) -> str:
    """An HTML table of `rows` under `title`, for notebooks."""
    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(label)}</th><td style='text-align:left'>"
        f"{html.escape(value)}</td></tr>"
        for label, value in rows
    )
    return f"<table><caption style='text-align:left'><b>{html.escape(title)}</b></caption>{body}</table>"


def _notebook() -> Any:
    """IPython's display module when this runs in a notebook kernel, else None."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    shell = ipython.get_ipython() if hasattr(ipython, "get_ipython") else None
    if shell is None or not hasattr(shell, "kernel"):
        return None
    return importlib.import_module("IPython.display")


class StatusDisplay:
    """A ready ``on_status``: shows each status a wait sees, in one place.

    In a notebook it keeps one output area up to date; on a terminal it redraws one line in
    place (elapsed time, status, status message), ticking the elapsed time every second until
    `close`; on anything else (a pipe, a log file) it writes one line per change. Use it as a
    context manager, or call `close` when the wait is over::

        with mt.StatusDisplay() as show:
            mt.await_task(client, task, on_status=show)

    Given to a wait on many tasks (`wait_all`, `as_completed`, `wait_any`, or each `submit` of
    a batch) it shows the set instead: ``[12s] 37/50 done, 2 failed, 11 working · failed:
    ab12…cd34 · e294…b175: exporting`` (a `SetSnapshot`), on one line clipped to the terminal's
    width, or one updating table in a notebook; on a pipe, a line each time the counts change.
    While an interactive input handler asks a question, the line holds still. While the line is
    live on a terminal, log records the root logger's handlers write there, and warnings, go on
    lines of their own above it (see `mcp_tasks._people._above`).
    """

    def __init__(self, stream: IO[str] | None = None, *, tick: float = TICK) -> None:
        self._stream = stream
        self._tick = tick
        self._started = time.monotonic()
        self._lock = threading.RLock()  # (a log record written while it is held goes through it again)
        self._last: Status | None = None
        self._reported: Reported | None = None  # the task's latest progress (`progress`)
        self._label: str | None = None  # the task's call and short id, when the wait knows it
        self._handle: Any = None
        self._ticker: threading.Thread | None = None
        self._stop = threading.Event()
        self._drawn = False
        self._set: SetProgress | None = None  # made when a set wait says what its tasks are
        self._snapshot: SetSnapshot | None = None
        self._printed: object = None  # what the last line on a pipe said of the set
        self._ended = False  # the set's last line is written
        self._closed = False  # closed: a question's end does not draw it again
        self._above: Above | None = None  # logs and warnings above the line while it is live
        self._mid_line = False  # a log wrote part of a line: the status line waits for its end

    @property
    def stream(self) -> IO[str]:
        """Where the terminal line goes (stderr unless given)."""
        return self._stream if self._stream is not None else sys.stderr

    def __call__(self, status: Status) -> None:
        progress = self._set
        if progress is not None:
            progress(status)  # shown by `_set_changed`
            return
        with self._lock:
            self._last = status
            self._closed = False
            notebook = _notebook() if self._stream is None else None
            if notebook is not None:
                self._show_in_notebook(notebook, status)
                return
            if self._live():
                if lines_held():
                    return  # a question is on the screen: drawn when it is answered
                self._draw()
                if status.terminal:
                    self._end_line()
                elif self._ticker is None and self._tick > 0:
                    self._ticker = start_thread("status-line", self._run_ticker)
            else:
                self.stream.write(status_line(status, time.monotonic() - self._started, label=self._label) + "\n")
                self.stream.flush()

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Show the task's latest progress as a bar beside its status (a wait given this display
        as ``on_status`` calls it, from the client's progress thread). A set's display ignores it.
        """
        if self._set is not None:
            return
        with self._lock:
            reported = Reported(progress, total, message)
            if reported == self._reported:
                return
            self._reported = reported
            notebook = _notebook() if self._stream is None else None
            if notebook is not None:
                self._show_in_notebook(notebook, self._last)
            elif not self._live():
                elapsed = time.monotonic() - self._started
                self.stream.write(status_line(self._last, elapsed, reported, label=self._label) + "\n")
                self.stream.flush()
            elif not lines_held() and not self._closed:
                self._draw()
                if self._ticker is None and self._tick > 0:
                    self._ticker = start_thread("status-line", self._run_ticker)

    def task_named(self, label: str) -> None:
        """The task's call and short id (``export {"report": "q3"} e294…b175``), which its line
        starts with (a single wait calls it when the client knows the call; a set ignores it).
        """
        with self._lock:
            self._label = label

    # -- a set of tasks (told by the set waits; see `SetProgress`) ----------------------------

    def expect(self, task_ids: Iterable[str]) -> None:
        """Show a set of tasks, these among them (a set wait calls it as it starts)."""
        self._progress().expect(task_ids)

    def wait_failed(self, failed: Status) -> None:
        """A set's task whose wait failed (a `FailedWait`) counts as failed (a single wait's
        failure reaches its caller: it does not make this a display of a set).
        """
        progress = self._set
        if progress is not None:
            progress.wait_failed(failed)

    def named(self, labels: Mapping[str, str]) -> None:
        """The calls of a set's tasks, by task id: failures are named by them (see `SetProgress`)."""
        self._progress().named(labels)

    def follow(self, future: Future[Any]) -> None:
        """Show `future` (a `TaskFuture` of a batch) in the set (`submit` calls it)."""
        self._progress().follow(future)

    def snapshot(self) -> SetSnapshot | None:
        """Where the set stands (None unless this display shows a set)."""
        progress = self._set
        return progress.snapshot() if progress is not None else None

    def _progress(self) -> SetProgress:
        with self._lock:
            if self._set is None:
                self._set = SetProgress(self._set_changed, started=self._started)
            return self._set

    def _set_changed(self, snapshot: SetSnapshot) -> None:
        with self._lock:
            self._snapshot = snapshot
            self._closed = False
            notebook = _notebook() if self._stream is None else None
            if notebook is not None:
                if self._handle is None:
                    self._handle = notebook.display(snapshot, display_id=True)
                else:
                    self._handle.update(snapshot)
                return
            if not self._live():
                said = (snapshot.counts(), snapshot.failures)
                if said != self._printed and snapshot.total:
                    self._printed = said
                    self.stream.write(set_line(snapshot) + "\n")
                    self.stream.flush()
                return
            if lines_held() or (snapshot.finished and self._ended):
                return
            self._ended = False
            self._draw()
            if snapshot.finished:
                self._end_line()
                self._ended = True  # the set's last line is written: later news does not repeat it
            elif self._ticker is None and self._tick > 0:
                self._ticker = start_thread("status-line", self._run_ticker)

    def resume(self) -> None:
        """Draw the line again after `suspend` (a question answered), unless it is over."""
        snapshot = self._set.snapshot() if self._set is not None else None
        with self._lock:
            if self._closed or not self._live() or lines_held() or self._drawn:
                return
            if snapshot is not None:
                self._snapshot = snapshot
                if snapshot.finished or not snapshot.total:
                    return
            elif self._last is None or self._last.terminal:
                return
            self._draw()
            if self._ticker is None and self._tick > 0:
                self._ticker = start_thread("status-line", self._run_ticker)

    def suspend(self) -> None:
        """End the terminal line and stop ticking until the next status: call it before writing
        anything else to the stream (a prompt, a message).
        """
        self._stop.set()
        ticker, self._ticker = self._ticker, None
        if ticker is not None and ticker is not threading.current_thread():
            ticker.join()
        with self._lock:
            self._stop.clear()
            if self._drawn:
                self._end_line()
            elif self._above is not None:
                self._above.stop()

    def close(self) -> None:
        """Stop ticking and end the terminal line. Idempotent."""
        self.suspend()
        self._closed = True

    def __enter__(self) -> StatusDisplay:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        snapshot = self.snapshot()
        if snapshot is not None:
            return f"<StatusDisplay {snapshot.counts()}>"
        return f"<StatusDisplay {self._last.wire_status if self._last else 'waiting'}>"

    # -- internals ----------------------------------------------------------------------------

    def _live(self) -> bool:
        isatty: Callable[[], bool] | None = getattr(self.stream, "isatty", None)
        try:
            return bool(isatty and isatty())
        except ValueError:  # a closed stream
            return False

    def _columns(self) -> int:
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 80
        except (AttributeError, OSError, ValueError):
            return 80

    def _end_line(self) -> None:
        """The line stays as it is, and what is written next goes below it."""
        self.stream.write("\n")
        self.stream.flush()
        self._drawn = self._mid_line = False
        if self._above is not None:
            self._above.stop()

    def _write_above(self, stream: IO[str], text: str) -> int:
        """`text` from a log handler or a warning, on lines of its own above the live line."""
        with self._lock:
            if not self._drawn:
                return stream.write(text)
            if not self._mid_line:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            written = stream.write(text)
            self._mid_line = not text.endswith("\n")
            if not self._mid_line and not lines_held():
                stream.flush()
                self._draw()
            return written

    def _draw(self) -> None:
        if self._mid_line:
            return  # a log line is being written: drawn again at its end
        if self._snapshot is not None:
            text = set_line(self._snapshot)
        else:
            bar = NARROW_BAR if self._columns() < NARROW else BAR_WIDTH
            text = status_line(self._last, time.monotonic() - self._started, self._reported, bar, self._label)
        self.stream.write("\r\x1b[K" + clip(text, self._columns()))
        self.stream.flush()
        self._drawn = True
        hold_lines(self)  # still while a question is asked
        if self._above is None:
            self._above = Above(self.stream, self._write_above)
        self._above.start()

    def _run_ticker(self) -> None:
        stop = self._stop
        while not stop.wait(self._tick):
            progress = self._set
            snapshot = progress.snapshot() if progress is not None else None  # (its lock before ours)
            with self._lock:
                if snapshot is not None:
                    if snapshot.finished or not self._drawn:
                        return
                    self._snapshot = snapshot
                elif not self._drawn or (self._last.terminal if self._last is not None else self._reported is None):
                    return
                if not lines_held():
                    self._draw()

    def _show_in_notebook(self, notebook: Any, status: Status | None) -> None:
        shown = status if self._reported is None else Shown(status, self._reported)
        if self._handle is None:
            self._handle = notebook.display(shown, display_id=True)
        else:
            self._handle.update(shown)


register_renderer(pretty, table)  # how a Status or an error shows in IPython and notebooks
