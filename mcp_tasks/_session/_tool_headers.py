"""Which arguments of each tool travel in ``Mcp-Param`` headers, as learned from ``tools/list``,
for the `Channel`.

A module of its own because what the client has learned of the tools' header annotations is one
piece of state with its own rules (a tool whose annotations are invalid is left out), apart from
sending requests.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mcp_tasks._wire import param_header_values, param_headers

__all__ = ["ToolHeaders"]

log = logging.getLogger("mcp_tasks")


class ToolHeaders:
    """The header annotations of the tools listed so far (None marks a tool whose annotations are
    invalid: a client must refuse it).
    """

    def __init__(self) -> None:
        self._headers: dict[str, dict[str, str] | None] = {}

    def known(self, name: object) -> bool:
        """Whether tool `name` was listed (valid or not)."""
        return name in self._headers

    def wanted(self, name: str) -> bool:
        """Whether tool `name` was listed with arguments that travel in headers."""
        return bool(self._headers.get(name))

    def acceptable(self, tool: dict[str, Any]) -> bool:
        """Whether a listed tool may be offered (its annotations, if learned, are valid)."""
        name = tool.get("name")
        return isinstance(name, str) and self._headers.get(name, {}) is not None

    def values(self, params: Mapping[str, Any]) -> dict[str, str] | None:
        """The ``Mcp-Param`` headers of one ``tools/call`` (None when its tool wants none)."""
        annotated = self._headers.get(params.get("name"))  # type: ignore[arg-type]
        return param_header_values(annotated, params.get("arguments")) if annotated else None

    def learn(self, result: Mapping[str, Any]) -> None:
        """Remember which arguments of each listed tool travel in Mcp-Param headers (None marks a
        tool whose annotations are invalid).
        """
        listed = result.get("tools")
        if not isinstance(listed, list):
            return
        for tool in listed:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                continue
            try:
                self._headers[tool["name"]] = param_headers(tool.get("inputSchema"))
            except ValueError as exc:
                log.warning("leaving out tool %r: %s", tool["name"], exc)
                self._headers[tool["name"]] = None
