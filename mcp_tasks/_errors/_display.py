"""How the errors show: their text with control characters escaped, one repr shape for all, and
IPython's pretty form and an HTML table in notebooks, whose rows they hand to the renderer
(`mcp_tasks._render_hook`: the errors import no renderer).
"""

from __future__ import annotations

from typing import Any

from mcp_tasks._printable import printable
from mcp_tasks._redact import short_id
from mcp_tasks._render_hook import Rows, html_table, pretty
from mcp_tasks._status_rows import shown

__all__ = ["Displayed", "error_rows"]


def error_rows(error: BaseException) -> Rows:
    """What a display shows of an error: its message, code and kind, and its task if it has one."""
    status = getattr(error, "status", None)
    message = str(error)
    rows = [("message", shown(status, message) if status is not None else printable(message))]
    code = getattr(error, "code", None)
    if code is not None:
        rows.append(("code", str(code)))
    kind = getattr(error, "kind", None)
    if kind is not None:
        rows.append(("kind", str(kind)))
    if status is not None:
        rows.append(("task", short_id(status.task_id)))
        rows.append(("task status", shown(status, status.wire_status)))
        if status.status_message:
            rows.append(("status message", shown(status, status.status_message)))
    return rows


class Displayed:
    """Rich displays for the errors: IPython's pretty form and an HTML table in notebooks, their
    rows made only when something is displayed.
    """

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        assert isinstance(self, BaseException)
        pretty(_title(self), error_rows(self), printer, cycle)

    def _repr_html_(self) -> str:
        assert isinstance(self, BaseException)
        return html_table(_title(self), error_rows(self))

    def __str__(self) -> str:
        """The error's text with its control and formatting characters shown as escapes."""
        return printable(super().__str__())

    def __repr__(self) -> str:
        """One shape for every error: ``Name(message=..., code=..., kind=..., task=...)``, the
        fields it has, the task by its short id.
        """
        assert isinstance(self, BaseException)
        parts = [f"message={getattr(self, 'message', str(self))!r}"]
        for name in ("code", "kind"):
            value = getattr(self, name, None)
            if value is not None:
                parts.append(f"{name}={value!r}")
        status = getattr(self, "status", None)
        if status is not None:
            parts.append(f"task={short_id(status.task_id)!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


def _title(error: BaseException) -> str:
    return f"{type(error).__module__}.{type(error).__qualname__}"
