"""A tool call as a person may be shown it, and as a store may keep it: its arguments with the
values under secret-looking keys hidden, long values cut, and what JSON cannot hold written as
its ``repr``.

`arguments_text` is the short form (about 40 characters) that names a task beside its short id
(``export {"report": "q3"} e294…b175``): in a set's failures, a question's header, the command
line. `kept_arguments` is the longer form a `TaskRef` keeps. Both are bounded however large the
arguments are, and neither fails on what they hold (cycles, objects with a failing ``repr``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mcp_tasks._printable import json_text, printable
from mcp_tasks._redact import short_id

__all__ = [
    "CUT",
    "HIDDEN",
    "KEPT_CHARS",
    "KEPT_TEXT",
    "SECRET_WORDS",
    "SHOWN_CHARS",
    "arguments_text",
    "call_text",
    "kept_arguments",
    "secret_key",
    "task_label",
]

SECRET_WORDS = ("token", "secret", "passw", "pwd", "key", "auth", "hidden", "credential", "cookie", "signature")
"""A key holding one of these (any case: ``api_key``, ``accessToken``, ``Authorization``) has its
value hidden. Erring on the side of hiding: ``author`` and ``keyword`` are hidden too."""
HIDDEN = "***"
"""What a hidden value is shown as."""
CUT = "…"
"""Where a value, a list or an object was cut."""
SHOWN_CHARS = 40
"""About how long `arguments_text` is."""
KEPT_CHARS = 2000
"""About how many characters of text `kept_arguments` keeps (keys and values)."""
KEPT_TEXT = 200
"""About how many characters of one text (a key, a value) `kept_arguments` keeps."""
_DEEPEST = 16


def secret_key(key: str) -> bool:
    """Whether a value under `key` is hidden (`SECRET_WORDS`, any case)."""
    folded = key.casefold()
    return any(word in folded for word in SECRET_WORDS)


def _repr(value: object) -> str:
    try:
        return repr(value)
    except Exception:  # an int too long for repr, a repr that fails: the type still says something
        return f"<{type(value).__name__}>"


class _Budget:
    """The characters left to spend, and at most `each` on one text; once spent, what remains
    is cut (`CUT`), so that one long value does not hide all the others.
    """

    def __init__(self, chars: int, each: int) -> None:
        self.left = chars
        self.each = each

    def text(self, value: str) -> str:
        most = min(self.left, self.each)
        if len(value) > most:
            value = value[: max(most, 0)] + CUT
        self.left -= len(value)
        return value


def _masked(value: object, budget: _Budget, depth: int) -> Any:
    """`value` as JSON can hold it, within `budget`: secret-looking keys' values hidden."""
    if budget.left <= 0 or depth > _DEEPEST:
        return CUT
    if value is None or isinstance(value, bool):
        budget.left -= 4
        return value
    if isinstance(value, int):
        text = _repr(value)
        if len(text) > 20 or not text.lstrip("-").isdigit():  # as text: a huge number is cut as a long string
            return budget.text(text)
        budget.left -= len(text)
        return value
    if isinstance(value, float):
        budget.left -= 8
        return value if math.isfinite(value) else repr(value)  # NaN and infinities are not JSON
    if isinstance(value, str):
        return budget.text(value)
    if isinstance(value, Mapping):
        kept: dict[str, Any] = {}
        for key, item in value.items():
            if budget.left <= 0:
                kept[CUT] = CUT
                break
            whole = key if isinstance(key, str) else _repr(key)
            name = budget.text(whole)
            budget.left -= 4
            kept[name] = HIDDEN if secret_key(whole) else _masked(item, budget, depth + 1)
        return kept
    if isinstance(value, (list, tuple)):
        items: list[Any] = []
        for item in value:
            if budget.left <= 0:
                items.append(CUT)
                break
            budget.left -= 2
            items.append(_masked(item, budget, depth + 1))
        return items
    return budget.text(_repr(value))  # bytes, a set, a date, an object of one's own


def kept_arguments(arguments: object) -> dict[str, Any] | None:
    """What a store keeps of a call's arguments: None for none, else a JSON object with the
    values under secret-looking keys hidden (`HIDDEN`), other non-JSON values as their ``repr``,
    each text cut at about `KEPT_TEXT` characters and about `KEPT_CHARS` in all (the rest cut,
    `CUT`). Taking its own
    output, it gives it back unchanged. ValueError when `arguments` is not a mapping.
    """
    if arguments is None:
        return None
    if not isinstance(arguments, Mapping):
        raise ValueError(f"arguments must be a mapping or None, got {type(arguments).__name__}")
    kept: dict[str, Any] = _masked(arguments, _Budget(KEPT_CHARS, KEPT_TEXT), 0)
    return kept


def arguments_text(arguments: object, width: int = SHOWN_CHARS) -> str:
    """A call's arguments in one short line (at most `width` characters): JSON-ish, values
    under secret-looking keys hidden, control and invisible characters escaped, cut with
    `CUT`. Empty for no arguments (None or an empty mapping); the ``repr`` of anything else.
    """
    if not arguments:
        return ""
    if isinstance(arguments, Mapping):
        text = json_text(_masked(arguments, _Budget(width * 2, width), 0))  # JSON all through
    else:
        text = printable(_repr(arguments)[: width * 2])
    return text if len(text) <= width else text[: width - 1] + CUT


def call_text(tool: str | None, arguments: object) -> str:
    """``export {"report": "q3"}``: the tool (printable) and its arguments' short form; empty
    when neither is known.
    """
    shown = arguments_text(arguments)
    name = printable(tool) if tool else ""
    return f"{name} {shown}".strip()


def task_label(task_id: str, tool: str | None, shown: str = "") -> str:
    """``export {"report": "q3"} e294…b175``: a task named by its call, when its `tool` is known
    (`shown`: its arguments as `arguments_text` gave them), and its short id; ``task e294…b175``
    when its call is not known.
    """
    if not tool:
        return f"task {short_id(task_id)}"
    return " ".join(part for part in (printable(tool), shown, short_id(task_id)) if part)
