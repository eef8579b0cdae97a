"""The era negotiation of the `Channel`: once, under the caller's deadline and one lock, the
`Agreement` published in one assignment when the negotiation is complete (never half of one).

A module of its own because settling what the connection speaks (``server/discover``, a
handshake, a joined 2025-era session) is one job, done before any other request; `_agreement`
says what an agreement holds, this how one is reached and kept.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import McpError, RequestTimeout, name_request
from mcp_tasks._options import ClientSettings
from mcp_tasks._session._agreement import (
    LEGACY_VERSION,
    Agreement,
    from_discover,
    from_initialize,
    is_handshake_refusal,
    joined,
    offer,
    pinned_modern,
)
from mcp_tasks._session._requester import Requester
from mcp_tasks._wire import PROTOCOL_VERSION, decode_response, notification, request
from mcp_tasks.transports._base import Transport

__all__ = ["Negotiation"]

log = logging.getLogger("mcp_tasks")


class Negotiation:
    """The agreement of one channel over `transport`, negotiated as `settings` ask (the requests
    of the negotiation go through `requester`).
    """

    def __init__(self, transport: Transport, settings: ClientSettings, requester: Requester) -> None:
        self._transport = transport
        self._settings = settings
        self._requester = requester
        self._lock = threading.Lock()
        self._agreement: Agreement | None = None
        self._joining = transport.session_id  # a 2025-era session made elsewhere, to join as it is

    @property
    def agreed(self) -> Agreement | None:
        """The agreement, or None before the first negotiation completed (never half of one)."""
        return self._agreement

    def agree(self, deadline: Deadline) -> Agreement:
        """The agreement, negotiated within `deadline` if there is none yet (one thread does it;
        the others wait for it, within their own deadlines).
        """
        agreed = self._agreement
        if agreed is not None:
            return agreed
        if not self._lock.acquire(timeout=deadline.step() or -1):
            raise RequestTimeout(deadline.timeout or 0.0, "Timed out waiting for the connection's handshake")
        try:
            agreed = self._agreement
            if agreed is None:
                agreed = self._negotiate(deadline)
                self._agreement = agreed  # published whole, once the handshake is complete
            return agreed
        finally:
            self._lock.release()

    def forget(self, seen: Agreement) -> None:
        """Drop agreement `seen` (its session expired): the next request negotiates again. A newer
        agreement that another thread made meanwhile is kept.
        """
        with self._lock:
            if self._agreement is seen:
                self._agreement = None

    def discover(self, deadline: Deadline) -> Agreement:
        """Send ``server/discover`` on a modern connection and publish what it says."""
        agreed = from_discover(self._discover(deadline))
        with self._lock:
            self._agreement = agreed
        return agreed

    def _discover(self, deadline: Deadline) -> dict[str, Any]:
        return self._requester.modern("server/discover", {}, deadline, None, None, True)

    def _negotiate(self, deadline: Deadline) -> Agreement:
        protocol = self._settings.protocol
        if self._joining is not None and self._transport.session_id == self._joining:
            # A 2025-era session made by another client: join it as it is, no handshake.
            if protocol == PROTOCOL_VERSION:
                raise ValueError("a session id joins a 2025-era session: protocol cannot be 2026-07-28")
            version = LEGACY_VERSION if protocol == "auto" else protocol
            self._transport.begin_session(version)
            log.debug("joined an existing %s session", version)
            return joined(version)
        if protocol == PROTOCOL_VERSION:
            return pinned_modern()
        if protocol == "auto":
            try:
                result = self._discover(deadline)
            except McpError as exc:
                if not is_handshake_refusal(exc):
                    raise
                log.debug("server/discover refused (%s): a handshake server", exc)
            else:
                if isinstance(result.get("supportedVersions"), list):
                    return from_discover(result)
                # A server that answers any method with {} does not know server/discover.
                log.debug("server/discover answered without supportedVersions: a handshake server")
        return self._handshake(deadline)

    def _handshake(self, deadline: Deadline) -> Agreement:
        """``initialize``, then the session's headers, then ``notifications/initialized``."""
        offered = offer(self._settings.protocol)
        settings = self._settings
        params = {"protocolVersion": offered, "capabilities": settings.capabilities, "clientInfo": settings.info}
        message = request(self._requester.next_id(), "initialize", params)
        log.debug("-> initialize #%s offering %s", message["id"], offered)
        try:
            result = decode_response(self._transport.request(message, deadline))
        except McpError as exc:
            name_request(exc, "initialize")
            raise
        agreed = from_initialize(result, offered, settings.protocol, settings.capabilities)
        self._transport.begin_session(agreed.version)
        self._transport.notify(notification("notifications/initialized"), deadline)
        log.debug("handshake done: %s, server %s", agreed.version, agreed.server_info.get("name"))
        return agreed
