"""Which store one string names (`open_store`, the CLI's ``--store``, ``$MCP_TASKS_STORE``), decided
before anything is opened: a URL by its scheme, libpq key=value pairs by their first ``keyword=``,
a path otherwise. A string that is none of these is refused without being quoted (a connection
string may hold a password): a typo must not become a file named after it.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from typing import Literal

from mcp_tasks._store._conninfo import LOOKS_LIKE_CONNINFO, parse_conninfo, unknown_keywords

__all__ = ["FORMS", "POSTGRES_SCHEMES", "STORE_ENV", "store_location"]

STORE_ENV = "MCP_TASKS_STORE"
POSTGRES_SCHEMES = ("postgresql", "postgres")
FORMS = (
    "a task store location is a path (absolute, relative to the working folder, or ~/...), sqlite:///path, "
    "a postgresql:// (or postgres://) URL, or libpq key=value pairs ('host=db port=5432 dbname=app')"
)
"""What a location may be, as errors say it."""
NOT_SHOWN = "(the location is not shown: it may hold a password)"

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def store_location(location: str | os.PathLike[str] | None) -> tuple[Literal["sqlite", "postgres"], str | None]:
    """``("sqlite", path or None)`` or ``("postgres", conninfo)`` for `location`: None is
    ``$MCP_TASKS_STORE`` when set (else the default file: ``("sqlite", None)``); a path object is a
    path; a string is, in this order, a URL when it starts with ``scheme://`` (``postgresql://``,
    ``postgres://``, ``sqlite:///path``), a connection string when it starts with a keyword and
    ``=`` (``host=…``: it must be one libpq reads, with keywords libpq knows), else a path. So a
    file whose name starts with ``word=`` is written with its folder, ``./tasks=2.db``.
    ValueError, not quoting `location`, for a URL of another kind and a connection string libpq
    would refuse.
    """
    if location is None:
        named = os.environ.get(STORE_ENV)
        if not named or not named.strip():
            return "sqlite", None
        location = named
    if not isinstance(location, str):
        return "sqlite", os.fspath(location)
    scheme = _SCHEME.match(location.strip())
    if scheme is not None:
        return _url(location.strip(), scheme.group(1).lower())
    if LOOKS_LIKE_CONNINFO.match(location):
        _check_conninfo(location)
        return "postgres", location
    return "sqlite", location


def _url(location: str, kind: str) -> tuple[Literal["sqlite", "postgres"], str]:
    if kind in POSTGRES_SCHEMES:
        return "postgres", location
    if kind == "sqlite":
        parts = urllib.parse.urlsplit(location)
        path = urllib.parse.unquote(parts.netloc + parts.path)
        if not path or parts.query or parts.fragment:
            raise ValueError(f"a SQLite store location is sqlite:///path/to/file (no query) {NOT_SHOWN}")
        return "sqlite", path
    raise ValueError(f"{FORMS}; {kind}:// is none of these {NOT_SHOWN}")


def _check_conninfo(location: str) -> None:
    """ValueError unless libpq would read `location` (it starts with ``keyword=``) as a connection string."""
    reads_as = "the location starts with keyword=, so it is read as libpq key=value pairs"
    try:
        unknown = unknown_keywords(parse_conninfo(location))
    except ValueError as exc:
        raise ValueError(f"{reads_as}, and libpq cannot read it: {exc}; {FORMS} {NOT_SHOWN}") from None
    if unknown is not None:
        raise ValueError(
            f"{reads_as}, and it has {unknown}; {FORMS}. A file whose name starts with word= is written "
            f"with its folder: ./word=... {NOT_SHOWN}"
        )
