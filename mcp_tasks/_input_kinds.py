"""The kinds of input request a server may ask for (form, url, sampling, roots), by method and
elicitation mode. Pure data, shared by the client's input handlers and the reference server's
capability check, so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

__all__ = ["INPUT_KINDS", "InputKind", "kind_of"]

INPUT_KINDS = ("form", "url", "sampling", "roots")

InputKind = Literal["form", "url", "sampling", "roots"]
"""A kind of input request: a form or URL elicitation, a sampling request, a roots request."""


def kind_of(request: object) -> str | None:
    """The kind of an input request: form, url, sampling, roots, or None for one not handled."""
    if not isinstance(request, Mapping):
        return None
    method = request.get("method")
    if method == "elicitation/create":
        params = request.get("params")
        mode = params.get("mode") if isinstance(params, Mapping) else None
        if mode is None or mode == "form":
            return "form"
        return "url" if mode == "url" else None
    if method == "sampling/createMessage":
        return "sampling"
    if method == "roots/list":
        return "roots"
    return None
