"""Task ids can act as bearer tokens: logs and reprs show only a short prefix."""

from __future__ import annotations

import re

__all__ = ["redact_text", "short_id"]

_SHOWN = 6

# A run of id characters long enough to be a token: 16+ with a digit (uuids, hex, most random
# ids), or 24+ of any kind. Words of prose stay readable.
_TOKEN = re.compile(r"[A-Za-z0-9_\-]{16,}")


def short_id(value: object) -> str:
    """A prefix of `value` that identifies it to a reader without giving it away."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= _SHOWN:
        return text[:2] + "…" if len(text) > 2 else text
    return text[:_SHOWN] + "…"


def _shorten(match: re.Match[str]) -> str:
    token = match.group(0)
    if len(token) >= 24 or any(c.isdigit() for c in token):
        return short_id(token)
    return token


def redact_text(text: str) -> str:
    """`text` (a line a server wrote, say) with everything that looks like an id or a token cut to
    its `short_id` prefix.
    """
    return _TOKEN.sub(_shorten, text)
