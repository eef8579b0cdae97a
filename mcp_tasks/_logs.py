r"""The library's log lines never carry a raw control character, whatever a server sent.

Log lines quote a server's text: its error messages, a task's status message, its log
notifications, the lines of a stdio server's stderr. A filter on each of the library's loggers
writes every control and invisible formatting character of such a line as its escape (``\x1b``,
``\r``, ``\u202e``: `mcp_tasks._printable.printable`), so a line shown on a terminal cannot rewrite
it, and a line break a server sent cannot forge a log line of its own. A line that has none is
left exactly as logged (its ``msg`` and ``args`` untouched, for handlers that group by them).
`install` puts the filter on the loggers; importing `mcp_tasks` does it.
"""

from __future__ import annotations

import logging

from mcp_tasks._printable import printable

__all__ = ["LOGGERS", "EscapeControls", "install"]

LOGGERS = ("mcp_tasks", "mcp_tasks.server", "mcp_tasks.server_stderr")
"""Every logger the library logs on (a logger's filters apply only to what is logged on it)."""


class EscapeControls(logging.Filter):
    """Rewrites a record whose message holds a control character into its printable form."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Always True (no line is dropped); the record escaped when it needs it."""
        try:
            text = record.getMessage()
        except Exception:  # a bad format: the handler reports it, as logging does
            return True
        if not text.isprintable():
            record.msg, record.args = printable(text), None
        return True


def install() -> None:
    """Put an `EscapeControls` on each of `LOGGERS` (once)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(existing, EscapeControls) for existing in logger.filters):
            logger.addFilter(EscapeControls())
