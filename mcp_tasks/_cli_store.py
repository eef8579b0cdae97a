"""The command line's task store: ``--store LOCATION`` (a path, ``sqlite:///path`` or a
``postgresql://`` URL; or ``$MCP_TASKS_STORE``, or the default file),
``mcp-tasks tasks`` (the unfinished tasks it keeps) and the lookup of ``mcp-tasks wait TASK_ID``.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import IO, Any

from mcp_tasks._printable import printable
from mcp_tasks._redact import shown_endpoint
from mcp_tasks._store import TaskRef, TaskStore
from mcp_tasks._store import open_store as open_location
from mcp_tasks._store._error import StoreError
from mcp_tasks._store._sqlite import STORE_ENV

__all__ = ["add_store_option", "find_task", "list_tasks", "named_store", "open_store", "store_options"]

STORE_HELP = (
    f"the task store: a file, sqlite:///path or a postgresql:// URL (default: ${STORE_ENV}, else tasks.sqlite3 "
    "in your data folder)"
)
PREFIX = 8
"""How much of a task id the listing shows: enough to pick it with ``mcp-tasks wait``."""


def add_store_option(parser: argparse.ArgumentParser, what: str = STORE_HELP) -> None:
    """Add ``--store LOCATION`` to a command."""
    parser.add_argument("--store", metavar="LOCATION", default=None, help=what)


def open_store(args: argparse.Namespace) -> TaskStore:
    """The store the command names (``--store``, else ``$MCP_TASKS_STORE``, else the default file)."""
    try:
        return open_location(getattr(args, "store", None))
    except ValueError as exc:
        raise StoreError(f"--store: {exc}") from None


def where(store: TaskStore) -> str:
    """How messages name `store`: its file, or its server."""
    return str(getattr(store, "path", None) or getattr(store, "server", None) or store)


def named_store(args: argparse.Namespace) -> TaskStore | None:
    """The store the command names with ``--store`` or ``$MCP_TASKS_STORE``; None when it names none."""
    if getattr(args, "store", None) is None and not os.environ.get(STORE_ENV):
        return None
    return open_store(args)


def store_options(args: argparse.Namespace) -> dict[str, Any]:
    """The client options that record into the command's store (none when it names none)."""
    store = getattr(args, "store_opened", None)
    return {"store": store} if store is not None else {}


def find_task(store: TaskStore, wanted: str) -> TaskRef:
    """The task kept under `wanted`, or the one unfinished task whose id starts with it
    (ValueError naming the store otherwise).
    """
    exact = store.get(wanted)
    if exact is not None:
        return exact
    matches = [ref for ref in store.unfinished() if ref.task_id.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ValueError(f"no task {wanted!r} in {where(store)} (list them with: mcp-tasks tasks)")
    raise ValueError(f"{len(matches)} unfinished tasks in {where(store)} start with {wanted!r}: give more of the id")


def _age(seconds: float) -> str:
    if seconds < 90:
        return f"{max(seconds, 0):.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.0f}m"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.0f}h"
    return f"{seconds / 86400:.0f}d"


def list_tasks(store: TaskStore, out: IO[str], *, as_json: bool) -> int:
    """Write the store's unfinished tasks to `out`, oldest first: id prefix, tool, endpoint, age,
    last status (with ``as_json``, each ref's JSON on a line of its own). Returns how many.
    """
    refs = store.unfinished()
    now = time.time()
    rows = []
    for ref in refs:
        if as_json:
            out.write(ref.to_json() + "\n")
            continue
        status = ref.last_status.wire_status if ref.last_status is not None else "-"
        cells = (
            ref.task_id[:PREFIX] + "…",
            ref.tool or "-",
            shown_endpoint(ref.endpoint),
            _age(now - ref.created_at),
            status,
        )
        rows.append(tuple(printable(cell) for cell in cells))
    if not as_json:
        if not rows:
            out.write(f"no unfinished tasks in {where(store)}\n")
            return 0
        rows.insert(0, ("TASK", "TOOL", "ENDPOINT", "AGE", "STATUS"))
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        for row in rows:
            out.write(
                "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)) + "  " + row[4] + "\n"
            )
    out.flush()
    return len(refs)
