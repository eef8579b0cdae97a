"""The PostgreSQL store's tables (versioned, in a schema of their own, created or migrated in one
transaction) and how it names its server in errors (host:port and database, never a password).
psycopg is imported by the caller, lazily: the core works without the ``postgres`` extra.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from mcp_tasks._store._error import StoreError

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "EXTRA",
    "SCHEMA_VERSION",
    "check_conninfo",
    "check_schema_name",
    "load_psycopg",
    "migrate",
    "pg_error",
    "scrub",
    "server_name",
]

SCHEMA_VERSION = 2
"""The layout of the tables (the row of ``<schema>.version``); a larger one was made by a newer mcp_tasks."""
EXTRA = "pip install 'mcp_tasks[postgres]'"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_TABLES = ("version", "tasks", "answers", "leases")

_CREATE = """
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE {s}.version (version integer NOT NULL);
CREATE TABLE {s}.tasks (
    task_id text PRIMARY KEY,
    finished boolean NOT NULL,
    created_at double precision NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    ref text NOT NULL
);
CREATE INDEX tasks_unfinished ON {s}.tasks (created_at, task_id) WHERE NOT finished;
CREATE INDEX tasks_finished ON {s}.tasks (updated_at) WHERE finished;
CREATE TABLE {s}.answers (
    task_id text NOT NULL,
    key text NOT NULL,
    response text NOT NULL,
    acknowledged boolean NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_id, key)
);
CREATE TABLE {s}.leases (
    task_id text PRIMARY KEY,
    holder text NOT NULL,
    expires timestamptz NOT NULL
);
{intents};
INSERT INTO {s}.version VALUES ({version})
"""

_INTENTS = """
CREATE TABLE {s}.intents (
    endpoint text NOT NULL,
    key text NOT NULL,
    tool text NOT NULL,
    digest text NOT NULL,
    created_at double precision NOT NULL,
    task_id text,
    result text,
    PRIMARY KEY (endpoint, key)
);
CREATE INDEX intents_unrecorded ON {s}.intents (created_at) WHERE task_id IS NULL AND result IS NULL
"""
"""Version 2: the calls recorded before they are sent (_pg_intents.py)."""

MIGRATIONS: dict[int, str] = {1: _INTENTS}
"""The statements that take the tables from version N to N + 1."""


def load_psycopg() -> None:
    """Import psycopg and its pool, or say which extra to install (StoreError)."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise StoreError(f"PostgresTaskStore needs psycopg 3 and psycopg-pool: {EXTRA} ({exc})") from exc


def check_schema_name(schema: object) -> str:
    """A schema name: letters, digits and underscores, not starting with a digit, at most 63."""
    if not isinstance(schema, str) or not _NAME.fullmatch(schema):
        raise ValueError(f"schema must be a plain SQL name (letters, digits, _; at most 63), got {schema!r}")
    return schema


def check_conninfo(conninfo: str) -> None:
    """StoreError for a connection string libpq cannot read, without psycopg's text of it (which
    quotes the string, and so may quote its password).
    """
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        conninfo_to_dict(conninfo)
    except psycopg.Error:
        raise StoreError(
            "the PostgreSQL connection string cannot be read (not shown: it may hold a password); "
            "give key=value pairs or a postgresql:// URL"
        ) from None


def server_name(conninfo: str) -> str:
    """``PostgreSQL host:port/database`` from a connection string or URL, never its password."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(conninfo)
    except Exception:  # a string psycopg cannot read: say nothing of its contents
        return "PostgreSQL (a connection string that cannot be read)"
    host = str(parts.get("host") or parts.get("hostaddr") or "localhost")
    port = str(parts.get("port") or 5432)
    database = str(parts.get("dbname") or parts.get("user") or "")
    if "=" in database or "://" in database:  # a connection string given as the database's name: never shown
        database = "(a connection string)"
    return f"PostgreSQL {host}:{port}/{database}"


def scrub(text: str, conninfo: str) -> str:
    """`text` with the connection's password, if it shows, replaced by ``…``."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        password = conninfo_to_dict(conninfo).get("password")
    except Exception:
        return text
    return text.replace(str(password), "…") if password else text


def pg_error(exc: Exception, store: str, conninfo: str, doing: str) -> StoreError:
    """A psycopg failure as a `StoreError` naming `store` (its server and schema), the password
    scrubbed from psycopg's text, made one line; a refused right and a statement timeout said as such.
    """
    code = getattr(exc, "sqlstate", None)
    # libpq's text spans lines ("...refused\n\tIs the server running..."): said as one line
    text = " ".join(scrub(str(exc), conninfo).split()) or type(exc).__name__
    if code == "42501":
        why = f"the role may not do this ({text}): grant it the rights on the schema, or name another schema"
    elif code == "57014":
        why = f"it did not answer in time ({text})"
    else:
        why = text
    return StoreError(f"{store}: {doing}: {why}")


def migrate(conn: psycopg.Connection[tuple[object, ...]], schema: str, where: str) -> None:
    """Create the tables in `schema`, or migrate them to `SCHEMA_VERSION`, in one transaction
    (nothing half-created), serialized against other processes doing the same.
    """
    quoted = f'"{schema}"'
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"mcp_tasks schema {schema}",))
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        ).fetchall()
        tables = {str(row[0]) for row in rows}
        if not tables:
            conn.execute(_CREATE.format(s=quoted, version=SCHEMA_VERSION, intents=_INTENTS.format(s=quoted)).encode())
            return
        if "version" not in tables or not set(_TABLES) <= tables:
            shown = ", ".join(sorted(tables)[:5])
            raise StoreError(
                f"the schema {schema} of {where} is not a task store's (it holds {shown}): it was left as it "
                "is; name another schema (schema=...)"
            )
        row = conn.execute(f"SELECT max(version) FROM {quoted}.version").fetchone()
        found = int(str(row[0])) if row is not None and row[0] is not None else 0
        if found < 1:
            raise StoreError(
                f"the schema {schema} of {where} is not a task store's (its version table is empty): it was "
                "left as it is; name another schema (schema=...)"
            )
        if found > SCHEMA_VERSION:
            raise StoreError(
                f"the task store in schema {schema} of {where} was made by a newer mcp_tasks (version {found}; "
                f"this one reads {SCHEMA_VERSION}): upgrade mcp_tasks, or name another schema"
            )
        for version in range(found, SCHEMA_VERSION):
            conn.execute(MIGRATIONS[version].format(s=quoted).encode())
        if found < SCHEMA_VERSION:
            conn.execute(f"UPDATE {quoted}.version SET version = %s".encode(), (SCHEMA_VERSION,))
