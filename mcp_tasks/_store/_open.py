"""`open_store`: a task store from a location, as the CLI's ``--store`` and ``$MCP_TASKS_STORE``
take it: a path (SQLite), ``sqlite:///path``, a ``postgresql://`` URL or libpq key=value pairs.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from mcp_tasks._store._location import store_location
from mcp_tasks._store._protocol import LEASE_TTL
from mcp_tasks._store._sqlite import SqliteTaskStore

if TYPE_CHECKING:
    from mcp_tasks._store._postgres import PostgresTaskStore

__all__ = ["open_store"]


def open_store(
    location: str | os.PathLike[str] | None = None, *, lease_ttl: float = LEASE_TTL
) -> SqliteTaskStore | PostgresTaskStore:
    """The task store at `location`; `lease_ttl`: the seconds of the leases its waits take.

    `location` is one of:

    - None: ``$MCP_TASKS_STORE`` when set (read as below), else the default SQLite file;
    - ``postgresql://`` or ``postgres://`` URL, or libpq key=value pairs (a string that starts
      with a keyword and ``=``: ``host=db port=5432 user=app password=… dbname=app``, values
      quoted ``'…'`` as libpq quotes them): a `PostgresTaskStore` in its default schema (needs
      the ``postgres`` extra);
    - ``sqlite:///path``, a path object, or any other string, a path: absolute, relative to the
      working folder, or starting with ``~`` (the home folder): a `SqliteTaskStore`. A file whose
      name starts with ``word=`` is written with its folder, ``./tasks=2.db``.

    ValueError, never quoting `location` (it may hold a password), for a URL of another scheme
    (``mysql://``) and for key=value pairs libpq would refuse (a keyword it does not know, a
    quote left open); `StoreError` for a store that cannot be used.
    """
    kind, where = store_location(location)
    if kind == "postgres":
        assert where is not None
        from mcp_tasks._store._postgres import PostgresTaskStore  # (PostgreSQL code loads only for it)

        return PostgresTaskStore(where, lease_ttl=lease_ttl)
    return SqliteTaskStore(where, lease_ttl=lease_ttl)
