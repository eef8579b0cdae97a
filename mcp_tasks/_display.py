"""How a status and an error look to a person: a short text line, IPython's pretty form, an HTML
table for notebooks, and `StatusDisplay`, a ready ``on_status`` that keeps one line (or one
notebook output) up to date.

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
import unicodedata
from collections.abc import Callable
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from mcp_tasks._printable import printable
from mcp_tasks._redact import redact_ids, short_id
from mcp_tasks._threads import start_thread

if TYPE_CHECKING:
    from mcp_tasks._status import Status

__all__ = [
    "StatusDisplay",
    "clip",
    "error_html",
    "error_rows",
    "pretty",
    "status_html",
    "status_line",
    "status_rows",
]

TICK = 1.0
"""How often a live terminal line redraws its elapsed time (seconds)."""


def _redact(status: Status, text: str) -> str:
    return printable(redact_ids(text, status.task_id, status.session_id))


def _payload(status: Status) -> str | None:
    if status.input_requests:
        keys = sorted(status.input_requests)
        return "input requests: " + ", ".join(repr(redact_ids(k, status.task_id, status.session_id)) for k in keys)
    if status.result is not None:
        blocks = status.result.get("content")
        count = len(blocks) if isinstance(blocks, list) else 0
        parts = [f"{count} content block{'s' if count != 1 else ''}"]
        if "structuredContent" in status.result:
            parts.append("structuredContent")
        if status.result.get("isError"):
            parts.append("isError")
        return "result: " + ", ".join(parts)
    if status.error is not None:
        return _redact(status, f"error {status.error.get('code')}: {status.error.get('message')}")
    return None


def status_rows(status: Status) -> list[tuple[str, str]]:
    """What a display shows of a status, as (label, value) rows; empty fields are left out."""
    rows = [("status", _redact(status, status.wire_status)), ("task", short_id(status.task_id))]
    if status.status_message:
        rows.append(("message", _redact(status, status.status_message)))
    if status.created_at:
        rows.append(("created", status.created_at))
    if status.last_updated_at:
        rows.append(("updated", status.last_updated_at))
    payload = _payload(status)
    if payload:
        rows.append(("payload", payload))
    if status.era != "modern":
        rows.append(("era", status.era))
    if status.session_id is not None:
        rows.append(("session", short_id(status.session_id)))
    return rows


def status_line(status: Status, elapsed: float | None = None) -> str:
    """One line: ``[12s] working: exporting row 2 of 3``."""
    clock = f"[{_clock(elapsed)}] " if elapsed is not None else ""
    message = f": {status.status_message}" if status.status_message else ""
    return _redact(status, f"{clock}{status.wire_status}{message}")


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


def status_html(status: Status) -> str:
    """An HTML table of `status_rows`, for notebooks."""
    return _table(f"Task {short_id(status.task_id)}", status_rows(status))


def error_rows(error: BaseException) -> list[tuple[str, str]]:
    """What a display shows of an error: its message, code and kind, and its task if it has one."""
    status = getattr(error, "status", None)
    message = str(error)
    rows = [("message", _redact(status, message) if status is not None else printable(message))]
    code = getattr(error, "code", None)
    if code is not None:
        rows.append(("code", str(code)))
    kind = getattr(error, "kind", None)
    if kind is not None:
        rows.append(("kind", str(kind)))
    if status is not None:
        rows.append(("task", short_id(status.task_id)))
        rows.append(("task status", _redact(status, status.wire_status)))
        if status.status_message:
            rows.append(("status message", _redact(status, status.status_message)))
    return rows


def error_html(error: BaseException) -> str:
    """An HTML table of `error_rows`, for notebooks."""
    return _table(f"{type(error).__module__}.{type(error).__qualname__}", error_rows(error))


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


def _table(title: str, rows: list[tuple[str, str]]) -> str:
    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(label)}</th><td style='text-align:left'>"
        f"{html.escape(value)}</td></tr>"
        for label, value in rows
    )
    return f"<table><caption style='text-align:left'><b>{html.escape(title)}</b></caption>{body}</table>"


def _clock(seconds: float) -> str:
    whole = int(seconds)
    if whole < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


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
    """

    def __init__(self, stream: IO[str] | None = None, *, tick: float = TICK) -> None:
        self._stream = stream
        self._tick = tick
        self._started = time.monotonic()
        self._lock = threading.Lock()
        self._last: Status | None = None
        self._handle: Any = None
        self._ticker: threading.Thread | None = None
        self._stop = threading.Event()
        self._drawn = False

    @property
    def stream(self) -> IO[str]:
        """Where the terminal line goes (stderr unless given)."""
        return self._stream if self._stream is not None else sys.stderr

    def __call__(self, status: Status) -> None:
        with self._lock:
            self._last = status
            notebook = _notebook() if self._stream is None else None
            if notebook is not None:
                self._show_in_notebook(notebook, status)
                return
            if self._live():
                self._draw()
                if status.terminal:
                    self.stream.write("\n")
                    self._drawn = False
                elif self._ticker is None and self._tick > 0:
                    self._ticker = start_thread("status-line", self._run_ticker)
            else:
                self.stream.write(status_line(status, time.monotonic() - self._started) + "\n")
                self.stream.flush()

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
                self.stream.write("\n")
                self.stream.flush()
                self._drawn = False

    def close(self) -> None:
        """Stop ticking and end the terminal line. Idempotent."""
        self.suspend()

    def __enter__(self) -> StatusDisplay:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
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

    def _draw(self) -> None:
        assert self._last is not None
        line = clip(status_line(self._last, time.monotonic() - self._started), self._columns())
        self.stream.write("\r\x1b[K" + line)
        self.stream.flush()
        self._drawn = True

    def _run_ticker(self) -> None:
        stop = self._stop
        while not stop.wait(self._tick):
            with self._lock:
                if self._last is None or self._last.terminal or not self._drawn:
                    return
                self._draw()

    def _show_in_notebook(self, notebook: Any, status: Status) -> None:
        if self._handle is None:
            self._handle = notebook.display(status, display_id=True)
        else:
            self._handle.update(status)
