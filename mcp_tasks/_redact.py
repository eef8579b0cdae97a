"""Task ids can act as bearer tokens: logs, messages and reprs show only a short form of each.

The short form keeps both ends of an id (``abcd…wxyz``): some servers start every task id of a
session with the same prefix, so a prefix alone would make all their tasks look alike. A 2025-era
id of the form ``<session>:<uuid>`` is shortened whole, and each of its parts where a text quotes
one alone.
"""

from __future__ import annotations

import re
import urllib.parse

__all__ = ["ids_in", "redact_ids", "redact_server_text", "redact_text", "short_id", "shown_endpoint"]

SECRET_LENGTH = 8
"""Ids this long or longer are never shown whole; shorter ones are too short to be secrets."""

# A run of id characters long enough to be a token: 16+ with a digit (uuids, hex, most random
# ids), or 24+ of any kind. Words of prose stay readable.
_TOKEN = re.compile(r"[A-Za-z0-9_\-]{16,}")


def short_id(value: object) -> str:
    """`value` cut to a form that tells ids apart without giving any away: ``abcd…wxyz`` for 12
    characters or more, ``ab…yz`` for 8 to 11, ``ab…`` for 3 to 7 (shorter ones as they are).
    """
    if isinstance(value, str):
        text = value
    else:
        try:
            text = repr(value)
        except Exception:  # an int too long for repr, a repr that fails: the type still says something
            return f"<{type(value).__name__}>"
    size = len(text)
    if size >= 12:
        return f"{text[:4]}…{text[-4:]}"
    if size >= SECRET_LENGTH:
        return f"{text[:2]}…{text[-2:]}"
    return text[:2] + "…" if size > 2 else text


def redact_ids(text: str, *ids: object) -> str:
    """`text` with every occurrence of each of `ids` replaced by its `short_id`.

    For texts that may embed an id: a server's message, an input key such as ``<taskId>:<n>``.
    Ids shorter than `SECRET_LENGTH` (and anything not a string) are left alone, so a short id
    does not garble the words around it; longer ids are matched first, all in one pass. An id
    made of parts (``<session>:<uuid>``) has each long part shortened too, where it stands alone.
    """
    named = {i for i in ids if isinstance(i, str)}
    named |= {part for i in named if ":" in i for part in i.split(":")}
    secrets = sorted({i for i in named if len(i) >= SECRET_LENGTH}, key=len, reverse=True)
    if not secrets or not any(secret in text for secret in secrets):
        return text
    pattern = "|".join(re.escape(secret) for secret in secrets)
    return re.sub(pattern, lambda match: short_id(match.group(0)), text)


def _shorten(match: re.Match[str]) -> str:
    token = match.group(0)
    if len(token) >= 24 or any(c.isdigit() for c in token):
        return short_id(token)
    return token


def redact_text(text: str) -> str:
    """`text` (a line a server wrote, say) with everything that looks like an id or a token cut to
    its `short_id`.
    """
    return _TOKEN.sub(_shorten, text)


def shown_endpoint(endpoint: str) -> str:
    """An endpoint fit to show: a URL without its userinfo, query and fragment (they may carry a
    key); anything else (a command line, ``direct:<name>``) as it is.
    """
    try:
        parts = urllib.parse.urlsplit(endpoint)
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is no number: show the scheme alone
        return endpoint.partition(":")[0] + "://…" if "://" in endpoint else endpoint
    if not parts.scheme or not parts.netloc:
        return endpoint
    if host is not None and ":" in host:
        host = f"[{host}]"
    netloc = (host or "") + (f":{port}" if port is not None else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def ids_in(params: object, depth: int = 3) -> list[str]:
    """The task ids a request's params name: each ``taskId`` and ``taskIds`` entry, also inside
    nested objects (a listen filter), up to `depth` levels down.
    """
    found: list[str] = []
    if depth <= 0 or not isinstance(params, dict):
        return found
    for key, value in params.items():
        if key == "taskId" and isinstance(value, str):
            found.append(value)
        elif key == "taskIds" and isinstance(value, list):
            found.extend(v for v in value if isinstance(v, str))
        elif isinstance(value, dict):
            found.extend(ids_in(value, depth - 1))
    return found


def redact_server_text(text: str, *ids: object) -> str:
    """A server's text about the tasks `ids` (an error answering a request that named them): the
    ids, and anything else that looks like an id or a token (the server's own form of the id, a
    session's), cut to their short forms.
    """
    return redact_text(redact_ids(text, *ids))
