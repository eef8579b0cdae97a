"""The SQLite store's file: where it is by default, its tables, and the check that a file is a
task store's (or empty) before anything in it is changed.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

from mcp_tasks._store._error import StoreError
from mcp_tasks._store._location import STORE_ENV, store_location

__all__ = ["SCHEMA", "STORE_ENV", "TABLES", "check_layout", "default_store_path"]

SCHEMA = 1
"""The layout of the file (``PRAGMA user_version``); a larger one was made by a newer mcp_tasks.
An optional field of a `TaskRef` (``trace_context``) lives in its JSON, not in a column: files
stay at this layout, so older mcp_tasks versions keep opening them."""

TABLES = """
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY,
    finished INTEGER NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    ref TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_finished ON tasks (finished, updated_at);
CREATE TABLE IF NOT EXISTS answers (
    task_id TEXT NOT NULL,
    key TEXT NOT NULL,
    response TEXT NOT NULL,
    acknowledged INTEGER NOT NULL,
    written_at REAL NOT NULL,
    PRIMARY KEY (task_id, key)
);
CREATE TABLE IF NOT EXISTS leases (
    task_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires REAL NOT NULL
);
"""
_COLUMNS = {
    "tasks": ("task_id", "finished", "created_at", "updated_at", "ref"),
    "answers": ("task_id", "key", "response", "acknowledged", "written_at"),
    "leases": ("task_id", "holder", "expires"),
}
"""What a task store file has (another program's SQLite file has not)."""


def default_store_path() -> Path:
    """The store file when none is named: ``$MCP_TASKS_STORE``, else ``tasks.sqlite3`` in the
    user's data folder (XDG_DATA_HOME on Linux, LOCALAPPDATA on Windows).
    """
    try:
        kind, named = store_location(None)
    except ValueError as exc:
        raise StoreError(f"${STORE_ENV}: {exc}") from None
    if kind != "sqlite":
        raise StoreError(f"${STORE_ENV} names a store that is no SQLite file: open it with mt.open_store()")
    if named:
        return Path(named).expanduser()
    if os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "mcp_tasks" / "tasks.sqlite3"


def check_layout(db: sqlite3.Connection, path: Path) -> int:
    """The file's schema version, once it is known to be a task store's or empty (StoreError
    naming what else it holds otherwise).
    """
    # The tables first: a store is made in one commit (tables and version), so a version read
    # after its tables were seen is that commit's, even while another process makes the store.
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    found = int(db.execute("PRAGMA user_version").fetchone()[0])
    _check_schema(found, path)
    if found == 0 and not tables:
        return 0
    missing = [
        f"{table}.{column}"
        for table, columns in _COLUMNS.items()
        for column in columns
        if column not in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
    ]
    if found == 0 or missing:
        held = ", ".join(sorted(tables)[:5]) + (", …" if len(tables) > 5 else "")
        raise StoreError(
            f"{path} is not a task store (it holds the tables {held or 'none'}"
            f"{'; without ' + ', '.join(missing[:3]) if found and missing else ''}): it was left as it is; "
            "name another file for the task store"
        )
    return found


def _check_schema(found: int, path: Path) -> None:
    if found > SCHEMA:
        raise StoreError(
            f"the task store {path} was made by a newer mcp_tasks (schema {found}; this one "
            f"reads {SCHEMA}): upgrade mcp_tasks, or name another store"
        )
