r"""A server's text as a person may safely be shown it, on a terminal or in a notebook.

`printable` writes every character a terminal or a browser would act on instead of show as the
escape Python's ``repr`` uses for it: control characters (C0 such as ESC, shown ``\x1b``; DEL;
C1 such as the 8-bit CSI, shown ``\x9b``), so no escape sequence (a CSI erase, an OSC 0 title, an
OSC 8 hyperlink) is ever interpreted; and the invisible formatting characters, among them the
bidirectional embeddings, overrides, isolates and marks (``\u202e``, ``\u2066``, ``\u200f``,
``\u061c``...), so the text reads in the order it was sent. Backslashes are left as they are.

`json_text` is the same for JSON a person may see (the command line's results): those characters
are ``\u`` escapes there, so the text still decodes to exactly what the server sent.

`link_to_open` is the check made before a person is offered a URL to open.
"""

from __future__ import annotations

import ipaddress
import json
import unicodedata
import urllib.parse
from typing import Any

__all__ = ["json_text", "link_to_open", "printable"]

# Format characters that are part of how a script or an emoji is written, not a trick: zero-width
# non-joiner and joiner, and the tag characters of flag emoji.
_KEPT_FORMAT = frozenset("\u200c\u200d") | frozenset(chr(c) for c in range(0xE0020, 0xE0080))
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _hidden(ch: str) -> bool:
    """Whether `ch` would be acted on (or not seen) rather than shown: a control (Cc), a format
    character (Cf: bidi controls, zero-width space, BOM...), a surrogate, a line or paragraph
    separator.
    """
    category = unicodedata.category(ch)
    return category in ("Cc", "Cs", "Zl", "Zp") or (category == "Cf" and ch not in _KEPT_FORMAT)


def _escape(ch: str) -> str:
    short = _SHORT.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: str, *, newlines: bool = False) -> str:
    r"""`text` with each control, escape and invisible formatting character shown as its escape
    (``\x1b``, ``\x9b``, ``\u202e``), never interpreted. With `newlines`, line ends stay line
    ends (``\r\n`` and ``\n`` both become ``\n``); otherwise they are shown as ``\n`` too, and the
    text stays on one line.
    """
    if text.isprintable():
        return text
    if newlines:
        return "\n".join(printable(line) for line in text.replace("\r\n", "\n").split("\n"))
    return "".join(_escape(ch) if _hidden(ch) else ch for ch in text)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code > 0xFFFF:  # JSON writes these as a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def json_text(value: Any, *, indent: int | None = None) -> str:
    r"""`value` as JSON (non-ASCII text as it is) with every character `printable` would escape
    written as a ``\u`` escape: a terminal shows it, and a JSON reader gets the same value back.
    """
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    if text.isprintable():
        return text
    # JSON's own syntax is ASCII: a character outside it can only be inside a string.
    return "".join(_json_escape(ch) if ord(ch) > 0x7E and _hidden(ch) else ch for ch in text)


def _loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def link_to_open(url: object) -> tuple[str, str]:
    """The URL and the host (with its port when one is given) to show a person asked to open
    `url`. Only an ``https`` URL is offered, or ``http`` to this machine's loopback; ValueError
    says why any other is not: a control, space or formatting character anywhere, a backslash
    (which browsers read as a slash, so the host they open is not the one shown), a user name
    before the host, no host, or a host or port that is not one.
    """
    if not isinstance(url, str) or not url:
        raise ValueError("it is empty")
    if any(ch.isspace() or _hidden(ch) for ch in url):
        raise ValueError(f"it holds control, space or invisible characters: {printable(url)}")
    if "\\" in url:
        raise ValueError("it holds a backslash, which browsers read as a slash: they would open another host")
    parts = urllib.parse.urlsplit(url)
    scheme, host = parts.scheme.lower(), parts.hostname or ""
    if scheme not in ("https", "http"):
        raise ValueError(f"it is not an https link (scheme {scheme or 'none'!r})")
    if not host:
        raise ValueError("it names no host")
    if "@" in parts.netloc:
        raise ValueError("it puts a user name before its host (user@host), which hides the host it opens")
    if not all(ch.isalnum() or ch in ".-_:" for ch in host):
        raise ValueError(f"its host {host!r} is not a host name")
    if scheme == "http" and not _loopback(host):
        raise ValueError("it is plain http to another machine: only https is offered (http to this machine only)")
    try:
        port = parts.port
    except ValueError:
        raise ValueError("its port is not a number from 0 to 65535") from None
    shown = (f"[{host}]" if ":" in host else host) + ("" if port is None else f":{port}")
    if not host.isascii():
        try:
            shown += f" ({host.encode('idna').decode('ascii')})"
        except UnicodeError:
            raise ValueError(f"its host {host!r} is not a valid international domain name") from None
    return url, shown
