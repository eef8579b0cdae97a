"""Logs and warnings above a live status line: while a `StatusDisplay` keeps its line on a
terminal, what the logging handlers and the warnings module write to that terminal would land on
the line (``… run 4…ttask tool train raised …``). `Above` gives them, for that time, a stream that
clears the line, writes, and draws the line again below (as rich's ``Live`` and tqdm's
``logging_redirect_tqdm`` do); it puts each one back when the line ends.

What it redirects: the root logger's stream handlers whose stream is the display's terminal,
``logging.lastResort`` (what logs when no handler is configured), and ``warnings.showwarning``
unless logging captures the warnings (they then come through the handlers).
"""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Callable
from typing import IO, Any, TextIO

__all__ = ["Above", "AboveStream"]

Writer = Callable[[IO[str], str], int]
"""How the display writes `text` to `stream` above its line (clear, write, draw again)."""

ShowWarning = Callable[..., None]
"""``warnings.showwarning``'s kind (its last two arguments optional)."""


class AboveStream:
    """A terminal stream as a handler sees it while the line is live: each write goes above it."""

    def __init__(self, stream: IO[str], write: Writer) -> None:
        self._stream = stream
        self._write = write

    @property
    def stream(self) -> IO[str]:
        """The terminal stream it writes to."""
        return self._stream

    def write(self, text: str) -> int:
        """Write `text` above the live line."""
        return self._write(self._stream, text)

    def flush(self) -> None:
        """Flush the terminal stream."""
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)  # isatty, fileno, encoding: the terminal's


def same_terminal(stream: object, terminal: IO[str]) -> bool:
    """Whether `stream` writes where `terminal` does (the same object, or the same descriptor)."""
    if stream is terminal:
        return True
    try:
        return bool(stream.fileno() == terminal.fileno())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False


class Above:
    """The redirections of one display's terminal: `start` when its line is drawn, `stop` when
    the line ends (idempotent both; called under the display's lock, they take no handler's lock).
    """

    def __init__(self, terminal: IO[str], write: Writer) -> None:
        self._terminal = terminal
        self._write = write
        self._handlers: list[tuple[logging.StreamHandler[Any], Any, AboveStream]] = []
        self._last_resort: tuple[logging.Handler | None, logging.Handler] | None = None
        self._shown: ShowWarning | None = None
        self.started = False

    def start(self) -> None:
        """Redirect what writes to the terminal (once until `stop`)."""
        if self.started:
            return
        self.started = True
        for handler in logging.getLogger().handlers:
            if not isinstance(handler, logging.StreamHandler) or isinstance(handler.stream, AboveStream):
                continue  # a socket, one of ours: left alone
            if same_terminal(handler.stream, self._terminal):
                above, stream = AboveStream(handler.stream, self._write), handler.stream
                try:
                    handler.stream = above  # no setStream: it takes the handler's lock, under ours
                except AttributeError:  # a stream it looks up each time (a property)
                    continue
                self._handlers.append((handler, stream, above))
        resort = logging.lastResort
        if resort is not None and same_terminal(getattr(resort, "stream", None), self._terminal):
            replacement = logging.StreamHandler(AboveStream(self._terminal, self._write))
            replacement.setLevel(resort.level)
            replacement.setFormatter(resort.formatter)
            self._last_resort = (resort, replacement)
            logging.lastResort = replacement
        shown = warnings.showwarning
        if getattr(shown, "__module__", None) != "logging":  # captured warnings come through the handlers
            self._shown = shown
            warnings.showwarning = self._show_warning

    def stop(self) -> None:
        """Put back each redirection still in place (one changed since is left as it is)."""
        if not self.started:
            return
        self.started = False
        for handler, stream, above in self._handlers:
            if handler.stream is above:
                handler.stream = stream
        self._handlers.clear()
        if self._last_resort is not None:
            resort, replacement = self._last_resort
            if logging.lastResort is replacement:
                logging.lastResort = resort
            self._last_resort = None
        if self._shown is not None:
            if warnings.showwarning == self._show_warning:
                warnings.showwarning = self._shown
            self._shown = None

    def _show_warning(
        self,
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        shown = self._shown or warnings.showwarning
        if file is None and same_terminal(sys.stderr, self._terminal):
            file = AboveStream(sys.stderr, self._write)  # type: ignore[assignment]
        shown(message, category, filename, lineno, file, line)
