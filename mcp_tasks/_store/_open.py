"""`open_store`: a task store from a location, as the CLI's ``--store`` and ``$MCP_TASKS_STORE``
take it: a path (SQLite), ``sqlite:///path``, or a ``postgresql://`` URL.
"""

from __future__ import annotations

import os
import re
import urllib.parse

from mcp_tasks._store._postgres import PostgresTaskStore
from mcp_tasks._store._protocol import LEASE_TTL
from mcp_tasks._store._sqlite import STORE_ENV, SqliteTaskStore

__all__ = ["open_store", "store_location"]

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
POSTGRES_SCHEMES = ("postgresql", "postgres")


def store_location(location: str | os.PathLike[str] | None) -> tuple[str, str | None]:
    """``("sqlite", path or None)`` or ``("postgres", url)`` for `location` (None: the default,
    ``$MCP_TASKS_STORE`` when set); ValueError for a URL of another kind.
    """
    if location is None:
        named = os.environ.get(STORE_ENV)
        if not named:
            return "sqlite", None
        location = named
    if not isinstance(location, str):
        return "sqlite", os.fspath(location)
    scheme = _SCHEME.match(location)
    if scheme is None:
        return "sqlite", location
    kind = scheme.group(1).lower()
    if kind in POSTGRES_SCHEMES:
        return "postgres", location
    if kind == "sqlite":
        parts = urllib.parse.urlsplit(location)
        path = urllib.parse.unquote(parts.netloc + parts.path)
        if not path or parts.query or parts.fragment:
            raise ValueError("a SQLite store location is sqlite:///path/to/file (no query)")
        return "sqlite", path
    raise ValueError(
        f"a task store location is a path, sqlite:///path or a postgresql:// URL; {kind}:// is none of these"
    )


def open_store(
    location: str | os.PathLike[str] | None = None, *, lease_ttl: float = LEASE_TTL
) -> SqliteTaskStore | PostgresTaskStore:
    """The task store at `location`: None (``$MCP_TASKS_STORE`` when set, else the default
    SQLite file), a path or ``sqlite:///path`` (a `SqliteTaskStore`), or a ``postgresql://``
    or ``postgres://`` URL (a `PostgresTaskStore`, in its default schema; needs the ``postgres``
    extra). `lease_ttl`: the seconds of the leases its waits take. ValueError for another kind
    of URL; `StoreError` for a store that cannot be used.
    """
    kind, where = store_location(location)
    if kind == "postgres":
        assert where is not None
        return PostgresTaskStore(where, lease_ttl=lease_ttl)
    return SqliteTaskStore(where, lease_ttl=lease_ttl)
