"""Where a command goes: the task and its server, from the task store when the command names a
task by its short form, a prefix, or (``wait TASK_ID``) no TARGET at all.
"""

from __future__ import annotations

import argparse

from mcp_tasks._redact import short_id, shown_endpoint
from mcp_tasks._store import StoreError
from mcp_tasks.cli._ids import ambiguous, is_short_form, matching
from mcp_tasks.cli._parser import UsageError
from mcp_tasks.cli._store import existing_store, find_task, lookup_store, named_store, names_store, where
from mcp_tasks.cli._target import check_target, kind_of

__all__ = ["from_store", "full_id"]


def from_store(args: argparse.Namespace) -> None:
    """Open the command's store; for ``wait TASK_ID`` with no TARGET, find the task's endpoint
    there; with a TARGET, a TASK_ID in short form (or a prefix) is looked up there too.
    """
    if args.command == "wait" and args.task_id is None:
        if args.target is None:
            raise UsageError("wait needs a TASK_ID (and a TARGET, unless the task store knows it)")
        args.target, args.task_id = None, args.target
    if args.command not in ("call", "wait", "get", "cancel"):
        return
    if args.target is not None:
        check_target(args.target)
        if args.command != "call":
            args.task_id = full_id(args)
        if args.command in ("call", "wait"):
            args.store_opened = named_store(args)
        return
    args.store_opened = existing_store(args)
    if args.store_opened is None:
        raise UsageError(f"no task {args.task_id!r}: there is no task store yet (give the TARGET too)")
    try:
        ref = find_task(args.store_opened, args.task_id)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if kind_of(ref.endpoint) != "http":
        raise UsageError(
            f"task {short_id(ref.task_id)} ran on {ref.endpoint!r}, a server that lived in the process that started "
            "it: it cannot be resumed from here"
        )
    args.target, args.task_id, args.tool, args.ref = ref.endpoint, ref.task_id, ref.tool, ref
    if getattr(args, "session", None) is None and ref.era == "legacy":
        args.session = ref.session_id


def full_id(args: argparse.Namespace) -> str:
    """The TASK_ID given with a TARGET, made whole from the task store when it is in short form
    (``e294…b175``) or a prefix of one unfinished task of that TARGET there; else as given.
    """
    wanted = str(args.task_id)
    try:
        store = lookup_store(args)
        refs = [ref for ref in store.unfinished() if ref.endpoint == args.target] if store is not None else []
    except StoreError:
        if is_short_form(wanted) or names_store(args):
            raise
        return wanted  # a whole id needs no store: an unreadable default one is not this command's business
    whole = [ref for ref in refs if ref.task_id == wanted]
    if whole:
        args.tool, args.ref = whole[0].tool, whole[0]
        return wanted
    found = matching(wanted, refs, lambda ref: ref.task_id)
    if len(found) == 1:
        args.tool, args.ref = found[0].tool, found[0]
        if getattr(args, "session", None) is None and found[0].era == "legacy":
            args.session = found[0].session_id
        return found[0].task_id
    place = f"{where(store)} (on {shown_endpoint(args.target)})" if store is not None else ""
    if len(found) > 1:
        raise UsageError(ambiguous(wanted, [ref.task_id for ref in found], place))
    if is_short_form(wanted):
        raise UsageError(
            f"no task {wanted!r} in {place or 'a task store (there is none)'}: the server needs the whole id "
            "(mcp-tasks tasks --json shows it)"
        )
    return wanted
