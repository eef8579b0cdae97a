"""The HTTP side of a handshake (2025-era) session, for `HttpTransport`.

A 2025-era Streamable HTTP server keeps a session: its id comes back on the ``initialize`` answer
(``Mcp-Session-Id``; never taken from an earlier error answer, which some servers stamp with a
throwaway id), and every later request carries it with ``MCP-Protocol-Version``. The server sends
its own requests and notifications on POST answers (SSE) and on a separate GET stream, which some
send input requests on only: `transports._get_stream` keeps that stream open (reconnecting after a
drop, with ``Last-Event-ID`` and the server's ``retry:`` delay) until the session ends, and
``DELETE`` ends it. A 404 on a request that carried the session id means the server expired the
session: `SessionExpired` tells the client to set one up again. A POST answer (SSE) that ends
before its response, after the server gave its events ids, is resumed (SEP-1699, see
`transports._resume`). This module is the session itself: what it adds to each request, and what
it takes from answers.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

__all__ = ["LegacySession"]

log = logging.getLogger("mcp_tasks")

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"


def _visible_ascii(value: str) -> bool:
    return bool(value) and all(0x21 <= ord(c) <= 0x7E for c in value)


class LegacySession:
    """What one handshake session adds to each HTTP request, and what it takes from answers.

    A session is ours when an ``initialize`` answer gave its id (we DELETE it at the end), or
    joined when the id came from elsewhere (`join`): another process owns it, so it is never
    deleted from here.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.version: str | None = None
        self.session_id: str | None = None
        self.joined = False
        self.lost = False  # the server expired the session; no new one yet (see `expire`)

    @property
    def active(self) -> bool:
        """True from the ``initialize`` answer (or a `join`) on, until `end`: requests carry the
        session's headers, and none of the 2026-07-28 ones.
        """
        return self.version is not None or self.session_id is not None

    def join(self, session_id: str) -> None:
        """Carry `session_id`, a session another process set up, from the first request on."""
        if not isinstance(session_id, str) or not _visible_ascii(session_id):
            raise ValueError(f"session_id must be a non-empty string of visible ASCII, got {session_id!r}")
        with self._lock:
            self.session_id = session_id
            self.joined = True

    def headers(self, method: object) -> dict[str, str]:
        """The session's headers for one message (none for ``initialize`` itself)."""
        if method == "initialize":
            return {}
        with self._lock:
            return self._headers()

    def _headers(self) -> dict[str, str]:
        found: dict[str, str] = {}
        if self.session_id is not None:
            found[SESSION_HEADER] = self.session_id
        if self.version is not None:
            found[VERSION_HEADER] = self.version
        return found

    def learn(self, method: object, status: int, headers: Any) -> None:
        """Take the session id from a successful ``initialize`` answer (only from that): a new
        session, ours, which replaces whatever session was carried before.
        """
        if method != "initialize" or status >= 300:
            return
        value = headers.get(SESSION_HEADER)
        with self._lock:
            self.joined = self.lost = False
            if isinstance(value, str) and _visible_ascii(value):
                self.session_id = value
            elif value is not None:
                log.warning("ignoring an Mcp-Session-Id that is not visible ASCII")
                self.session_id = None
            else:
                self.session_id = None

    def expired(self, sent: dict[str, str], status: int) -> bool:
        """Whether a `status` answer to a request sent with `sent` headers means an expired session."""
        return status == 404 and SESSION_HEADER in sent

    def expire(self) -> None:
        """The server expired the session (a 404 to a message that carried its id): forget it,
        never DELETE it, and refuse every message but ``initialize`` until a new session (see
        `refuses`), so whoever sends next learns it and sets one up again.
        """
        with self._lock:
            self.session_id, self.version, self.joined = None, None, False
            self.lost = True

    def refuses(self, method: object) -> bool:
        """Whether a message of `method` is refused for a session the server expired."""
        return self.lost and method != "initialize"

    def keep(self) -> None:
        """Leave the session open at the end (no DELETE): its tasks are to be resumed elsewhere."""
        with self._lock:
            self.joined = True

    def begin(self, version: str) -> None:
        """The handshake is done at `version` (a joined session keeps its id)."""
        with self._lock:
            self.version = version

    def end(self) -> dict[str, str] | None:
        """Forget the session; returns the headers a ``DELETE`` of it carries (its id and
        ``MCP-Protocol-Version``), or None when there is none of ours to delete (no id, or a
        joined session, which its owner ends).
        """
        with self._lock:
            headers = self._headers() if self.session_id is not None and not self.joined else None
            self.session_id, self.version, self.joined = None, None, False
            return headers
