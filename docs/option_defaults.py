"""A Griffe extension of the API reference: the default of each option that `unpack_typeddict`
spreads into a function's signature (where it can only write ``= ...``), read from the end of
the option's docstring ("... Default: 60.0."). A default that is no Python literal ("Default: the
client's timeout.") stays in the description, and the signature keeps ``...``.
"""

from __future__ import annotations

import ast
import re
from typing import Any

import griffe

DEFAULT = re.compile(r"\s*Default: (?P<value>.+?)\.\s*$", re.S)


def _literal(text: str) -> str | None:
    """`text` (its ``code`` marks dropped) when it is a Python literal, else None."""
    text = text.replace("``", "")
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return text


def _fill(func: griffe.Function) -> None:
    sections = func.docstring.parsed if func.docstring else []
    listed = {
        item.name: item
        for section in sections
        if section.kind is griffe.DocstringSectionKind.parameters
        for item in section.value
    }
    for parameter in func.parameters:
        item = listed.get(parameter.name)
        if parameter.default != "..." or item is None or item.value != "...":
            continue
        found = DEFAULT.search(item.description)
        value = _literal(found.group("value")) if found else None
        if found is None or value is None:
            item.value = None  # the description says it in words
            continue
        parameter.default = value
        item.value = value
        item.description = item.description[: found.start()].rstrip()


class OptionDefaults(griffe.Extension):
    """Fills the options' defaults in after `unpack_typeddict` (list it after that one)."""

    def on_function(self, *, func: griffe.Function, **kwargs: Any) -> None:
        """A function that takes ``**options: Unpack[...]``."""
        _fill(func)

    def on_class(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        """A TypedDict, whose keys `unpack_typeddict` made the parameters of an ``__init__``."""
        init = cls.members.get("__init__")
        if isinstance(init, griffe.Function):
            _fill(init)
