"""The hook through which the value types (a `Status`, an error) show in IPython and notebooks.

The value types sit below everything that shows them: each hands a title and its (label, value)
rows to the renderer registered here, which `mcp_tasks._people._display` does when it loads: the
package names a loader for it, run when a value first shows (importing `mcp_tasks` loads no
renderer that no one looks at). So ``Status._repr_html_`` works while `_status` and `_errors`
import no renderer, and the renderer needs no value type to draw a table.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

__all__ = ["Rows", "html_table", "load_renderer_with", "pretty", "register_renderer"]

Rows = list[tuple[str, str]]
"""What a value shows: (label, value) pairs, in order, the values already safe to print."""

Pretty = Callable[[str, Rows, Any, bool], None]
Table = Callable[[str, Rows], str]


class _Renderer:
    """The registered pair (None before the package has loaded its renderer), and what loads it."""

    pretty: Pretty | None = None
    table: Table | None = None
    loader: Callable[[], None] | None = None


def load_renderer_with(loader: Callable[[], None]) -> None:
    """Have `loader` register the renderer when a value first shows and none is registered yet."""
    _Renderer.loader = loader


def _loaded() -> None:
    if _Renderer.table is None and _Renderer.loader is not None:
        loader, _Renderer.loader = _Renderer.loader, None  # once, whatever it does
        loader()


def register_renderer(pretty: Pretty, table: Table) -> None:
    """Show the value types with `pretty` (IPython's ``_repr_pretty_``: title, rows, printer,
    cycle) and `table` (an HTML table: caption, rows).
    """
    _Renderer.pretty, _Renderer.table = pretty, table


def pretty(title: str, rows: Rows, printer: Any, cycle: bool) -> None:
    """IPython's pretty form of a value: by the renderer (its title alone when there is none)."""
    _loaded()
    if _Renderer.pretty is None:
        printer.text(title)
        return
    _Renderer.pretty(title, rows, printer, cycle)


def html_table(caption: str, rows: Rows) -> str:
    """A value as an HTML table: by the renderer (its caption alone when there is none)."""
    _loaded()
    if _Renderer.table is None:
        return html.escape(caption)
    return _Renderer.table(caption, rows)
