"""An answer's status line and headers on the plain path (`transports._direct`), read without
the email package.

`http.client.HTTPResponse.begin` hands the header block to `email.parser`, which was about two
fifths of a poll's client CPU on loopback. `LeanResponse` reads the same lines the same way and
stores each field as the email parser would (its name as sent, its value with leading blanks and
the line end stripped), in the same `http.client.HTTPMessage`, so everything downstream
(``get``, ``get_all``, cookies, case-insensitive lookups, duplicates in order) is unchanged. A
block with anything else in it (an obs-fold continuation line, a name with characters outside
the token set, a stray CR) is handed to the email parser as it is, so an unusual answer means
exactly what it meant before. Framing (chunked over Content-Length, ``Connection: close``, an
HTTP/1.0 answer's keep-alive rules, no body for 1xx, 204, 304) follows `HTTPResponse.begin`.
"""

from __future__ import annotations

import email.parser
import http.client
import io
import re
import socket
from typing import Any, Final

__all__ = ["LeanResponse"]

MAX_LINE: Final = 65536
"""The longest status or header line read (http.client's limit)."""

MAX_HEADERS: Final = 100
"""The most header lines read (http.client's limit)."""

_FIELD: Final = re.compile(r"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*([^\r\n]*)\r?\n")
"""A header line whose meaning is plain (anything else goes to the email parser)."""


class LeanResponse(http.client.HTTPResponse):
    """`http.client.HTTPResponse` whose headers are parsed without the email package when they
    are plain (see the module's docstring); the body is read by the stdlib as before.
    """

    def __init__(self, sock: socket.socket, method: str) -> None:
        super().__init__(sock, method=method)
        self._no_body = method == "HEAD"  # an answer to HEAD has headers only

    def begin(self) -> None:
        """Read the status line and headers and decide the body's framing, as the stdlib does
        (called once, by whoever made the response).
        """
        while True:
            version, status, reason = self._status_line()
            if status != http.client.CONTINUE:
                break
            _header_lines(self.fp)  # an interim 100 answer's headers
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        self.headers = self.msg = _message(_header_lines(self.fp))
        get = self.headers.get
        encoding = get("transfer-encoding")
        self.chunked = encoding is not None and encoding.lower() == "chunked"
        if self.chunked:
            self.chunk_left = None
        self.will_close = self._closes()
        self.length = None
        length = get("content-length")
        if length and not self.chunked:
            try:
                self.length = int(length)
            except ValueError:
                self.length = None
            else:
                if self.length < 0:
                    self.length = None
        if status in (204, 304) or 100 <= status < 200 or self._no_body:
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True

    def _status_line(self) -> tuple[str, int, str]:
        line = str(self.fp.readline(MAX_LINE + 1), "iso-8859-1")
        if len(line) > MAX_LINE:
            raise http.client.LineTooLong("status line")
        if not line:
            raise http.client.RemoteDisconnected("Remote end closed connection without response")
        parts = line.split(None, 2)
        version = parts[0] if len(parts) >= 2 else ""
        if not version.startswith("HTTP/"):
            self.close()
            raise http.client.BadStatusLine(line)
        try:
            status = int(parts[1])
        except ValueError:
            raise http.client.BadStatusLine(line) from None
        if status < 100 or status > 999:
            raise http.client.BadStatusLine(line)
        return version, status, parts[2] if len(parts) > 2 else ""

    def _closes(self) -> bool:
        """Whether the connection closes after this answer (HTTP/1.1: ``Connection: close``;
        HTTP/1.0: unless it says keep-alive one of the ways such servers do).
        """
        get = self.headers.get
        conn = get("connection")
        if self.version == 11:
            return conn is not None and "close" in conn.lower()
        if get("keep-alive"):
            return False
        if conn and "keep-alive" in conn.lower():
            return False
        proxy = get("proxy-connection")
        return not (proxy is not None and "keep-alive" in proxy.lower())


def _header_lines(fp: io.BufferedIOBase) -> list[bytes]:
    """The header block's lines up to and including the blank line (or the end of the stream)."""
    readline = fp.readline
    lines: list[bytes] = []
    while True:
        line = readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise http.client.LineTooLong("header line")
        lines.append(line)
        if len(lines) > MAX_HEADERS:
            raise http.client.HTTPException(f"got more than {MAX_HEADERS} headers")
        if line in (b"\r\n", b"\n", b""):
            return lines


class _Fields(http.client.HTTPMessage):
    """The `http.client.HTTPMessage` of a plain header block, whose ``get`` and ``in`` look a
    name up in an index made with it (an answer is asked five names: the email package scans and
    lowercases every field for each). Once the fields change (any of the email package's ways
    replaces, extends or, by `replace_header`, edits the list in place), it answers as the email
    package does.
    """

    _headers: list[tuple[str, Any]]  # the email package's own list of the fields, in order
    _indexed: list[tuple[str, Any]] | None = None  # the list `_first` indexes, as `_count` long
    _count = 0
    _first: dict[str, Any]

    @classmethod
    def of(cls, fields: list[tuple[str, str]]) -> _Fields:
        """The message of these (name, value) fields, as the email parser stores them (its
        compat32 policy keeps both as they are), its payload empty, indexed.
        """
        message = cls()
        message._headers.extend(fields)
        message.set_payload("")
        message.index()
        return message

    def index(self) -> None:
        """Index the fields as they are now (the first of each name, as ``get`` finds it)."""
        fields = self._headers
        self._indexed, self._count = fields, len(fields)
        self._first = {name.lower(): value for name, value in reversed(fields)}

    def _index_of(self) -> dict[str, Any] | None:
        fields = self._headers
        if self._indexed is fields and len(fields) == self._count:
            return self._first
        return None

    def get(self, name: str, failobj: Any = None) -> Any:
        """See `email.message.Message.get`."""
        index = self._index_of()
        if index is None:
            return super().get(name, failobj)
        return index.get(name.lower(), failobj)

    def __contains__(self, name: str) -> bool:
        index = self._index_of()
        if index is None or not isinstance(name, str):
            return super().__contains__(name)
        return name.lower() in index

    def replace_header(self, _name: str, _value: Any) -> None:
        """See `email.message.Message.replace_header` (the index is dropped: it edits in place)."""
        self._indexed = None
        super().replace_header(_name, _value)


def _message(lines: list[bytes]) -> http.client.HTTPMessage:
    """The headers as the email parser makes them, without it when every line is plain."""
    text = b"".join(lines).decode("iso-8859-1")
    fields: list[tuple[str, str]] = []
    position = 0
    match = _FIELD.match
    for _ in range(len(lines) - 1):  # the last is the blank line (or the stream's end)
        found = match(text, position)
        if found is None:
            return email.parser.Parser(_class=http.client.HTTPMessage).parsestr(text)
        fields.append((found[1], found[2]))
        position = found.end()
    return _Fields.of(fields)
