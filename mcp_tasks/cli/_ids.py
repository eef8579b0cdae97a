"""Task ids as the command line shows and takes them: both ends of the id (``e294…b175``, the
reprs' `short_id`), as much more of its start as it takes to tell the listed tasks apart, and
never the whole id; a TASK_ID given in that form (``…`` or ``...``), or as a prefix, names the one
task it matches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from mcp_tasks._redact import short_id

__all__ = ["ambiguous", "is_short_form", "matching", "pick", "shown_ids"]

T = TypeVar("T")

_ELLIPSES = ("…", "...")
HIDDEN = 4
"""At least this many characters of an id are never shown when it is widened to tell it apart."""


def _form(task_id: str, head: int) -> str:
    if head <= 4:
        return short_id(task_id)
    return f"{task_id[:head]}…{task_id[-4:]}"


def shown_ids(ids: Iterable[str]) -> dict[str, str]:
    """Each id's form for a listing: its `short_id`, with more of its start where two ids would
    otherwise look the same (up to all but `HIDDEN` characters hidden in the middle).
    """
    unique = list(dict.fromkeys(ids))
    shown = {task_id: short_id(task_id) for task_id in unique}
    head = 4
    while True:
        seen: dict[str, list[str]] = {}
        for task_id, form in shown.items():
            seen.setdefault(form, []).append(task_id)
        alike = [group for group in seen.values() if len(group) > 1]
        if not alike:
            return shown
        head += 2
        widened = False
        for group in alike:
            for task_id in group:
                if len(task_id) >= 12 and head + 4 + HIDDEN <= len(task_id):
                    shown[task_id] = _form(task_id, head)
                    widened = True
        if not widened:
            return shown


def is_short_form(wanted: str) -> bool:
    """Whether `wanted` is an id in both-ends form (``e294…b175`` or ``e294...b175``)."""
    return any(mark in wanted for mark in _ELLIPSES)


def _matches(wanted: str, task_id: str) -> bool:
    for mark in _ELLIPSES:
        if mark in wanted:
            head, _, tail = wanted.partition(mark)
            return task_id.startswith(head) and task_id.endswith(tail) and len(task_id) >= len(head) + len(tail)
    return task_id.startswith(wanted)


def matching(wanted: str, items: Sequence[T], id_of: Callable[[T], str]) -> list[T]:
    """The items whose id is `wanted`, or else those whose id it matches (both ends, or a prefix)."""
    exact = [item for item in items if id_of(item) == wanted]
    return exact or [item for item in items if _matches(wanted.strip(), id_of(item))]


def pick(wanted: str, items: Sequence[T], id_of: Callable[[T], str], where: str) -> T:
    """The one item whose id `wanted` names; ValueError (naming `where`, and the candidates in
    their listed form) when none or several match.
    """
    found = matching(wanted, items, id_of)
    if len(found) == 1:
        return found[0]
    if not found:
        raise ValueError(f"no task {wanted!r} in {where} (list them with: mcp-tasks tasks)")
    raise ValueError(ambiguous(wanted, [id_of(item) for item in found], where))


def ambiguous(wanted: str, ids: Sequence[str], where: str) -> str:
    """What to say when `wanted` matches each of `ids` in `where`: the candidates, in short form."""
    forms = shown_ids(ids)
    listed = ", ".join(forms[task_id] for task_id in ids)
    return f"{len(ids)} tasks in {where} match {wanted!r}: {listed}; give one of these, or more of the id"
