"""Task ids can act as bearer tokens: logs and reprs show only a short prefix."""

from __future__ import annotations

__all__ = ["short_id"]

_SHOWN = 6


def short_id(value: object) -> str:
    """A prefix of `value` that identifies it to a reader without giving it away."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= _SHOWN:
        return text[:2] + "…" if len(text) > 2 else text
    return text[:_SHOWN] + "…"
