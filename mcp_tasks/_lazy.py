"""Names a package re-exports, loaded on first use (PEP 562): importing the package costs nothing
until one of them is asked for, and then only the module that defines it.

A package lists where each name lives and takes the module ``__getattr__`` this gives; it imports
the same names under ``if TYPE_CHECKING:``, so type checkers and IDEs see them as before.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["homes_of", "load_on_first_use"]


def homes_of(homes: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Each name's module, from the modules' lists of names."""
    return {name: module for module, names in homes.items() for name in names}


def load_on_first_use(namespace: dict[str, Any], homes: Mapping[str, Sequence[str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the package whose globals are `namespace`: a name of `homes`
    (module -> names) is imported from its module and kept there, so it is looked up once.
    """
    where = homes_of(homes)
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        home = where.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    return __getattr__
