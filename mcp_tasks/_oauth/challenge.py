"""The ``WWW-Authenticate`` header (RFC 9110 §11.6.1): which schemes a server challenges with, and
the parameters of its Bearer (or DPoP, RFC 9449 §7.1) challenge (RFC 6750 §3: ``error``,
``scope``; RFC 9728 §5.1: ``resource_metadata``).
"""

from __future__ import annotations

import re

__all__ = ["bearer_challenge", "parse_challenges", "token_challenge"]

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_SPACE = re.compile(r"[ \t]*")


def parse_challenges(header: str) -> list[tuple[str, dict[str, str]]]:
    """Each challenge of a header as (scheme in lower case, parameters with lower-case names).

    Lenient: a part it cannot read ends the parse, and what it read so far is returned.
    """
    challenges: list[tuple[str, dict[str, str]]] = []
    pos = 0
    length = len(header)
    while pos < length:
        pos = _skip(header, pos, " \t,")
        scheme = _TOKEN.match(header, pos)
        if scheme is None:
            break
        pos = scheme.end()
        params: dict[str, str] = {}
        challenges.append((scheme.group().lower(), params))
        while True:
            pos = _skip(header, pos, " \t,")
            name = _TOKEN.match(header, pos)
            if name is None:
                break
            after = _SPACE.match(header, name.end())
            assert after is not None
            if after.end() >= length or header[after.end()] != "=":
                break  # the next challenge's scheme (or a token68 we do not need)
            pos = _SPACE.match(header, after.end() + 1).end()  # type: ignore[union-attr]
            if pos < length and header[pos] == '"':
                value, pos = _quoted(header, pos)
            else:
                bare = _TOKEN.match(header, pos)
                value, pos = (bare.group(), bare.end()) if bare else ("", pos)
                while pos < length and header[pos] == "=":  # a token68's padding
                    value += "="
                    pos += 1
            params[name.group().lower()] = value
    return challenges


def bearer_challenge(header: str | None) -> dict[str, str] | None:
    """The parameters of the Bearer challenge in a ``WWW-Authenticate`` header, or None."""
    if not header:
        return None
    for scheme, params in parse_challenges(header):
        if scheme == "bearer":
            return params
    return None


def token_challenge(header: str | None) -> tuple[str, dict[str, str]] | None:
    """The scheme (``bearer`` or ``dpop``) and parameters of a token challenge, Bearer first."""
    if not header:
        return None
    found = dict(reversed(parse_challenges(header)))
    for scheme in ("bearer", "dpop"):
        if scheme in found:
            return scheme, found[scheme]
    return None


def _skip(text: str, pos: int, chars: str) -> int:
    while pos < len(text) and text[pos] in chars:
        pos += 1
    return pos


def _quoted(text: str, pos: int) -> tuple[str, int]:
    out = []
    pos += 1
    while pos < len(text):
        char = text[pos]
        if char == "\\" and pos + 1 < len(text):
            out.append(text[pos + 1])
            pos += 2
            continue
        if char == '"':
            return "".join(out), pos + 1
        out.append(char)
        pos += 1
    return "".join(out), pos
