"""libpq's key=value connection strings (``host=db port=5432 dbname=app``), read as libpq reads
them, without psycopg: so a store location can be told from a file name before the ``postgres``
extra is loaded. Errors never quote the string: it may hold a password.

libpq's rules: pairs ``keyword = value`` separated by whitespace, spaces around ``=`` allowed; a
value in single quotes may hold spaces (an empty one is ``''``); a backslash takes the character
after it as it is, in a quoted value or not. Keywords are lower case (``host``, ``dbname``, …).
"""

from __future__ import annotations

import difflib
import re

__all__ = ["KEYWORDS", "LOOKS_LIKE_CONNINFO", "known_keywords", "parse_conninfo", "unknown_keywords"]

KEYWORDS = frozenset(
    """
    application_name channel_binding client_encoding connect_timeout dbname fallback_application_name
    gssdelegation gssencmode gsslib host hostaddr keepalives keepalives_count keepalives_idle
    keepalives_interval krbsrvname load_balance_hosts max_protocol_version min_protocol_version
    oauth_client_id oauth_client_secret oauth_issuer oauth_scope options passfile password port
    replication require_auth requirepeer scram_client_key scram_server_key service
    ssl_max_protocol_version ssl_min_protocol_version sslcert sslcertmode sslcompression sslcrl sslcrldir
    sslkey sslkeylogfile sslmode sslnegotiation sslpassword sslrootcert sslsni target_session_attrs
    tcp_user_timeout user
    """.split()  # noqa: SIM905 - a list of words reads best as words
)
"""libpq's connection keywords (as of PostgreSQL 18); a newer libpq's own list is added when
psycopg is there (`known_keywords`)."""

_SPACE = " \t\n\r\f\v"  # C's isspace, as libpq skips
LOOKS_LIKE_CONNINFO = re.compile(rf"[{_SPACE}]*[A-Za-z_][A-Za-z0-9_]*[{_SPACE}]*=")
"""What makes a string a connection string rather than a file name: it starts with a keyword and
``=`` (``host=…``, ``dbname = app``), as libpq's keywords are words."""


def parse_conninfo(text: str) -> list[tuple[str, str]]:
    """The ``(keyword, value)`` pairs of `text`, in order, as libpq's parser reads them (keywords
    not checked); ValueError saying what is wrong, never quoting `text`.
    """
    pairs: list[tuple[str, str]] = []
    i, end = 0, len(text)

    def skip(at: int) -> int:
        while at < end and text[at] in _SPACE:
            at += 1
        return at

    while (i := skip(i)) < end:
        start = i
        while i < end and text[i] != "=" and text[i] not in _SPACE:
            i += 1
        keyword = text[start:i]
        i = skip(i)
        if i >= end or text[i] != "=":
            raise ValueError(f"word {len(pairs) + 1} has no '=' after it")
        i = skip(i + 1)
        value: list[str] = []
        quoted = i < end and text[i] == "'"
        i += quoted
        while i < end:
            char = text[i]
            if char == "\\":
                value.append(text[i + 1 : i + 2])  # a backslash last of all stands for nothing, as in libpq
                i += 2
                continue
            if (quoted and char == "'") or (not quoted and char in _SPACE):
                break
            value.append(char)
            i += 1
        if quoted:
            if i >= end:
                shown = keyword if keyword in KEYWORDS else "a keyword"  # an unknown one may be part of a password
                raise ValueError(f"the quoted value of {shown} has no closing quote")
            i += 1
        pairs.append((keyword, "".join(value)))
    return pairs


def known_keywords() -> frozenset[str]:
    """`KEYWORDS`, and those of the libpq psycopg uses when it is installed (a newer one may know more)."""
    try:
        from psycopg import pq

        return KEYWORDS | {option.keyword.decode() for option in pq.Conninfo.get_defaults()}
    except Exception:  # no psycopg (the postgres extra), or a libpq that cannot list them
        return KEYWORDS


def unknown_keywords(pairs: list[tuple[str, str]]) -> str | None:
    """None when libpq knows every keyword of `pairs`; else what to say of the unknown ones: how
    many, and the known keyword each looks like (never the unknown word itself: a value with an
    unquoted space makes part of a password look like a keyword).
    """
    unknown = [keyword for keyword, _ in pairs if keyword not in KEYWORDS]
    if unknown:
        known = known_keywords()
        unknown = [keyword for keyword in unknown if keyword not in known]
    if not unknown:
        return None
    meant = sorted({m for k in unknown for m in difflib.get_close_matches(k.lower(), KEYWORDS, n=1, cutoff=0.75)})
    said = f"{len(unknown)} keyword{'s' if len(unknown) > 1 else ''} libpq does not know"
    return said + (f" (did you mean {', '.join(meant)}?)" if meant else "")
