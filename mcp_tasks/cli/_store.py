"""The command line's task store: ``--store LOCATION`` (a path, ``sqlite:///path``, a
``postgresql://`` URL or libpq key=value pairs; or ``$MCP_TASKS_STORE``, or the default file), ``mcp-tasks tasks`` (the
unfinished tasks it keeps: a table, a JSON array, or JSON lines) and the lookup of a TASK_ID
(``mcp-tasks wait TASK_ID``, a short form or prefix with a TARGET).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from mcp_tasks._call_text import call_text
from mcp_tasks._printable import printable
from mcp_tasks._redact import shown_endpoint
from mcp_tasks._store._error import StoreError
from mcp_tasks._store._location import STORE_ENV, store_location
from mcp_tasks._store._sqlite_file import default_store_path
from mcp_tasks.cli._ids import pick, shown_ids

if TYPE_CHECKING:  # (the parser, and so --help, loads no store)
    from mcp_tasks._store import Intent, TaskRef, TaskStore

__all__ = [
    "add_store_option",
    "close_store",
    "existing_store",
    "find_task",
    "iso_time",
    "list_tasks",
    "lookup_store",
    "named_store",
    "names_store",
    "open_store",
    "store_options",
    "where",
]

log = logging.getLogger("mcp_tasks")

STORE_HELP = (
    "the task store: a file path (absolute, relative, ~/...), sqlite:///path, a postgresql:// URL, or libpq "
    "key=value pairs ('host=db dbname=app'; a file named word=... is written ./word=...) "
    f"(default: ${STORE_ENV}, else tasks.sqlite3 in your data folder)"
)


def add_store_option(parser: argparse.ArgumentParser, what: str = STORE_HELP) -> None:
    """Add ``--store LOCATION`` to a command."""
    parser.add_argument("--store", metavar="LOCATION", default=None, help=what)


def open_store(args: argparse.Namespace) -> TaskStore:
    """The store the command names (``--store``, else ``$MCP_TASKS_STORE``, else the default
    file), opened once per command: `close_store` closes it when the command ends.
    """
    opened: TaskStore | None = getattr(args, "store_kept", None)
    if opened is not None:
        return opened
    from mcp_tasks._store import open_store as open_location

    try:
        opened = open_location(getattr(args, "store", None))
    except ValueError as exc:  # its text never quotes the location: it may hold a password
        named = "--store" if getattr(args, "store", None) is not None else f"${STORE_ENV}"
        raise StoreError(f"{named}: {exc}") from None
    args.store_kept = opened
    return opened


def existing_store(args: argparse.Namespace) -> TaskStore | None:
    """The store of `open_store`, for a command that only reads it (``tasks``, a lookup): a
    SQLite file that is not there is not created. One the command names is a ValueError naming
    its path (a typo must not become an empty store); the default file is None (no task kept yet).
    """
    try:
        kind, location = store_location(getattr(args, "store", None))
    except ValueError:
        return open_store(args)  # says it as open_store does
    if kind == "sqlite" and getattr(args, "store_kept", None) is None:
        path = Path(location).expanduser() if location is not None else default_store_path()
        if not path.exists():
            if names_store(args):
                named = "--store" if getattr(args, "store", None) is not None else f"${STORE_ENV}"
                raise ValueError(f"{named}: there is no task store at {path} (mcp-tasks call --store makes one)")
            return None
    return open_store(args)


def close_store(args: argparse.Namespace) -> None:
    """Close the store the command opened, if it did (a PostgreSQL store's connections and threads)."""
    opened, args.store_kept = getattr(args, "store_kept", None), None
    close = getattr(opened, "close", None)
    if callable(close):
        try:
            close()
        except StoreError as exc:  # the command is over: what it did stands
            log.warning("could not close the task store: %s", exc)


def where(store: TaskStore) -> str:
    """How messages name `store`: its file, or its server."""
    return str(getattr(store, "path", None) or getattr(store, "server", None) or store)


def named_store(args: argparse.Namespace) -> TaskStore | None:
    """The store the command names with ``--store`` or ``$MCP_TASKS_STORE``; None when it names none."""
    return open_store(args) if names_store(args) else None


def names_store(args: argparse.Namespace) -> bool:
    """Whether the command names a store (``--store`` or ``$MCP_TASKS_STORE``)."""
    return getattr(args, "store", None) is not None or bool(os.environ.get(STORE_ENV))


def lookup_store(args: argparse.Namespace) -> TaskStore | None:
    """The store to look a short TASK_ID up in: the one the command names, else the default file
    when there is one (None when there is none: it is not created for a lookup; see `existing_store`).
    """
    return existing_store(args)


def store_options(args: argparse.Namespace) -> dict[str, Any]:
    """The client options that record into the command's store (none when it names none)."""
    store = getattr(args, "store_opened", None)
    return {"store": store} if store is not None else {}


def find_task(store: TaskStore, wanted: str, endpoint: str | None = None) -> TaskRef:
    """The task kept under `wanted`, or the one unfinished task (of `endpoint`, when given) whose
    id it names in both-ends form (``e294…b175``) or as a prefix; ValueError naming the store,
    and the candidates in short form, otherwise.
    """
    exact = store.get(wanted)
    if exact is not None and endpoint in (None, exact.endpoint):
        return exact
    refs = [ref for ref in store.unfinished() if endpoint in (None, ref.endpoint)]
    named = where(store) if endpoint is None else f"{where(store)} (on {shown_endpoint(endpoint)})"
    return pick(wanted, refs, lambda ref: ref.task_id, named)


def iso_time(value: float | str | None) -> str | None:
    """A time as the listings show it: ISO 8601 in UTC to the millisecond (``2026-07-28T09:30:00.000Z``),
    from seconds since the epoch or a server's ISO text (text that does not parse is kept as it is).
    """
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return value
        when = parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed.astimezone(timezone.utc)
    else:
        when = datetime.fromtimestamp(value, timezone.utc)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _listed(ref: TaskRef) -> dict[str, Any]:
    """The ref as ``tasks --json`` shows it: its saved form, every time in ISO 8601 UTC."""
    saved: dict[str, Any] = json.loads(ref.to_json())
    saved["createdAt"] = iso_time(ref.created_at)
    last = saved.get("lastStatus")
    if isinstance(last, dict):
        for key in ("createdAt", "lastUpdatedAt"):
            if isinstance(last.get(key), str):
                last[key] = iso_time(last[key])
    return saved


def _age(seconds: float) -> str:
    if seconds < 90:
        return f"{max(seconds, 0):.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.0f}m"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.0f}h"
    return f"{seconds / 86400:.0f}d"


NEVER_RECORDED = "started, id never recorded"
"""What the listings say of a call whose intent its task id never joined (its outcome is unknown)."""


def _unrecorded(store: TaskStore) -> list[Intent]:
    """The calls started whose id was never recorded (none from a store without intents)."""
    listing = getattr(store, "unrecorded_intents", None)
    return list(listing()) if callable(listing) else []


def _listed_intent(intent: Intent) -> dict[str, Any]:
    """An intent never joined as ``tasks --json`` shows it: no task id, the call's key instead."""
    return {
        "endpoint": intent.endpoint,
        "taskId": None,
        "key": intent.key,
        "tool": intent.tool,
        "createdAt": iso_time(intent.created_at),
        "lastStatus": None,
        "started": NEVER_RECORDED,
    }


def list_tasks(store: TaskStore | None, out: IO[str], *, form: Literal["table", "json", "jsonl"] = "table") -> int:
    """Write the store's unfinished tasks to `out`, oldest first: a table (id in both-ends form,
    tool and its arguments in short, endpoint, age, last status), one JSON array (``json``: full
    ids, times in ISO 8601 UTC), or each task's JSON on a line of its own (``jsonl``); then the
    calls started whose task id was never recorded (``started, id never recorded``, with their
    key; ``taskId`` null in JSON). Returns how many (none with no store: the default file, not made yet).
    """
    refs = store.unfinished() if store is not None else []
    intents = _unrecorded(store) if store is not None else []
    listed = [_listed(ref) for ref in refs] + [_listed_intent(intent) for intent in intents]
    if form == "json":
        out.write(json.dumps(listed, ensure_ascii=False, indent=2) + "\n")
    elif form == "jsonl":
        out.writelines(json.dumps(entry, ensure_ascii=False) + "\n" for entry in listed)
    now = time.time()
    shown = shown_ids(ref.task_id for ref in refs)
    rows = []
    for ref in refs:
        status = ref.last_status.wire_status if ref.last_status is not None else "-"
        called = call_text(ref.tool, ref.arguments) or "-"  # the tool and its arguments in short
        cells = (shown[ref.task_id], called, shown_endpoint(ref.endpoint), _age(now - ref.created_at), status)
        rows.append(tuple(printable(cell) for cell in cells))
    for intent in intents:
        key, endpoint, age = f"key {intent.key}", shown_endpoint(intent.endpoint), _age(now - intent.created_at)
        rows.append(tuple(printable(cell) for cell in (key, intent.tool, endpoint, age, NEVER_RECORDED)))
    if form == "table":
        if not rows:
            kept = where(store) if store is not None else f"{default_store_path()} (there is none yet)"
            out.write(f"no unfinished tasks in {kept}\n")
            return 0
        rows.insert(0, ("TASK", "TOOL", "ENDPOINT", "AGE", "STATUS"))
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        for row in rows:
            out.write(
                "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)) + "  " + row[4] + "\n"
            )
    out.flush()
    return len(listed)
