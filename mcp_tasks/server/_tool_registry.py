"""The reference server's registered tools: a registry that builds a `Tool` from a function (its
schema from the signature unless given), keeps them by name under a lock, and says when the set
changes, so the server can tell its listeners.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from mcp_tasks.server._tools import TASK_SUPPORT, Tool, keyword_names, schema_from_signature

__all__ = ["ToolRegistry"]


class ToolRegistry:
    """The tools by name; `on_change` is called after each registration or removal."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self._on_change = on_change
        self._lock = threading.Lock()
        self._tools: dict[str, Tool] = {}

    def add(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        task: str = "forbidden",
    ) -> Tool:
        """Register `fn` as a tool (its first docstring line is the default description)."""
        if task not in TASK_SUPPORT:
            raise ValueError(f"task must be one of {', '.join(TASK_SUPPORT)}, got {task!r}")
        tool = Tool(
            name=name or fn.__name__,
            fn=fn,
            description=description if description is not None else _first_line(fn.__doc__),
            input_schema=dict(input_schema) if input_schema is not None else schema_from_signature(fn),
            task_support=task,  # type: ignore[arg-type]
            takes=keyword_names(fn),
        )
        with self._lock:
            self._tools[tool.name] = tool
        self._on_change()
        return tool

    def remove(self, name: str) -> None:
        """Unregister a tool (an unknown name is no error)."""
        with self._lock:
            self._tools.pop(name, None)
        self._on_change()

    def snapshot(self) -> dict[str, Tool]:
        """The registered tools by name, a copy."""
        with self._lock:
            return dict(self._tools)


def _first_line(text: str | None) -> str | None:
    if not text:
        return None
    return text.strip().splitlines()[0]
