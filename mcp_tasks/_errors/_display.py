"""How the errors show: their text with control characters escaped, one repr shape for all, and
IPython's pretty form and an HTML table in notebooks.
"""

from __future__ import annotations

from typing import Any

from mcp_tasks._printable import printable
from mcp_tasks._redact import short_id

__all__ = ["Displayed"]


class Displayed:
    """Rich displays for the errors: IPython's pretty form and an HTML table in notebooks.

    The display module is imported only when something is displayed: raising and catching an error
    never loads it.
    """

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        from mcp_tasks._people._display import error_rows, pretty

        assert isinstance(self, BaseException)
        pretty(f"{type(self).__module__}.{type(self).__qualname__}", error_rows(self), printer, cycle)

    def _repr_html_(self) -> str:
        from mcp_tasks._people._display import error_html

        assert isinstance(self, BaseException)
        return error_html(self)

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
