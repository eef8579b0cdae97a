"""One request of the `Channel` on the wire: its id, its ``_meta`` (the 2026-07-28 envelope, or a
2025-era session's bare params), its ``Mcp-Param`` headers, the tracing hook around it, the one
retry a version refusal is worth, and the check that the answer is this request's.

A module of its own because building and sending one request is one job, below what the channel
does with requests (negotiating, input rounds, a session set up again): the channel decides which
requests to send, this sends each.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping
from typing import Any

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import UNSUPPORTED_PROTOCOL_VERSION, McpError, name_request, redact_request
from mcp_tasks._session._dispatch import Dispatcher, RequestOwner
from mcp_tasks._session._tool_headers import ToolHeaders
from mcp_tasks._tracing import Tracing
from mcp_tasks._wire import META_PROTOCOL_VERSION, PROTOCOL_VERSION, decode_response, malformed, merge_meta, request
from mcp_tasks.transports._base import Transport

__all__ = ["Envelope", "Requester"]

log = logging.getLogger("mcp_tasks")


class Envelope(dict[str, Any]):
    """A request's whole ``_meta``, merged once (`Channel.envelope`) and sent as it is: a wait
    that polls for minutes merges its meta once, not on every poll.
    """


class Requester:
    """Sends the channel's requests over `transport`, each with an id of its own (from one count,
    which the handshake's ``initialize`` shares: `next_id`).
    """

    def __init__(
        self,
        transport: Transport,
        envelope: dict[str, Any],
        dispatcher: Dispatcher,
        tracing: Tracing,
        tool_headers: ToolHeaders,
    ) -> None:
        self._transport = transport
        self._envelope = envelope
        self._dispatcher = dispatcher
        self._tracing = tracing
        self._tool_headers = tool_headers
        self._ids = itertools.count(1)  # next() on a count is atomic under the GIL

    def next_id(self) -> int:
        """A request id never used on this channel."""
        return next(self._ids)

    def meta_of(self, own: object, meta: Mapping[str, Any] | None) -> dict[str, Any]:
        """The ``_meta`` of a modern request: the envelope, the params' `own` over it, `meta` last
        (an `Envelope` alone is sent as it is).
        """
        if own is None and isinstance(meta, Envelope):
            return meta
        if own is not None and not isinstance(own, Mapping):
            raise TypeError("params['_meta'] must be a dict")
        return merge_meta(self._envelope, own, meta)

    def modern(
        self,
        method: str,
        params: dict[str, Any],
        deadline: Deadline,
        request_meta: Mapping[str, Any] | None,
        on_request: RequestOwner | None,
        cancellable: bool,
    ) -> dict[str, Any]:
        """One modern request; a -32022 that lists the very version sent is worth one retry."""
        if request_meta is None:
            request_meta = self.meta_of(params.get("_meta"), None)
        headers = self._tool_headers.values(params) if method == "tools/call" else None
        sent = {**params, "_meta": request_meta}
        for attempt in (1, 2):
            try:
                return self.round_trip(method, sent, deadline, headers, on_request, cancellable)
            except McpError as exc:
                if attempt == 2 or not _may_retry_version(exc, request_meta):
                    raise
                log.debug("the server refused protocol version %s but lists it; trying once more", PROTOCOL_VERSION)
        raise AssertionError("unreachable")

    @staticmethod
    def legacy_params(params: dict[str, Any], meta: Mapping[str, Any] | None) -> dict[str, Any]:
        """The params of a request on a handshake session: no envelope (only a `meta` of the
        caller's own, over the params' own).
        """
        own = params.get("_meta")
        sent = {key: value for key, value in params.items() if key != "_meta"}
        extra = merge_meta(own if isinstance(own, Mapping) else None, None if isinstance(meta, Envelope) else meta)
        if extra:
            sent["_meta"] = extra
        return sent

    def round_trip(
        self,
        method: str,
        params: dict[str, Any],
        deadline: Deadline,
        headers: Mapping[str, str] | None,
        on_request: RequestOwner | None,
        cancellable: bool,
    ) -> dict[str, Any]:
        """Send one request as it is, under the tracing hook; its result."""
        deadline.step()  # out of time: RequestTimeout before anything is sent
        request_id = self.next_id()
        return self._tracing.round_trip(
            method,
            request_id,
            params,
            lambda sent: self._one_request(request_id, method, sent, deadline, headers, on_request, cancellable),
        )

    def _one_request(
        self,
        request_id: int,
        method: str,
        params: dict[str, Any],
        deadline: Deadline,
        headers: Mapping[str, str] | None,
        on_request: RequestOwner | None,
        cancellable: bool,
    ) -> dict[str, Any]:
        message = request(request_id, method, params)
        log.debug("-> %s #%s", method, request_id)
        if on_request is not None:
            self._dispatcher.claim(request_id, on_request)
        try:
            response = self._transport.request(message, deadline, headers, cancellable=cancellable)
            if not _answers(response, request_id):
                raise malformed(f"The server answered {method} with another request's id", response)
            return decode_response(response)
        except McpError as exc:
            redact_request(exc, params)
            name_request(exc, method)
            raise
        finally:
            if on_request is not None:
                self._dispatcher.release(request_id)


def _may_retry_version(error: McpError, request_meta: Mapping[str, Any]) -> bool:
    """-32022 whose supported list holds the version this request used: worth one retry."""
    if error.code != UNSUPPORTED_PROTOCOL_VERSION or not isinstance(error.data, dict):
        return False
    supported = error.data.get("supported")
    return isinstance(supported, list) and request_meta.get(META_PROTOCOL_VERSION) in supported


def _answers(response: object, request_id: int) -> bool:
    """Whether a response carries the request's id (1 and True are not the same id). An error
    is taken as this request's error whatever its id: only a result must match.
    """
    if not isinstance(response, dict):
        return True  # decode_response says what is wrong with it
    if "error" in response and "result" not in response:
        # An error fails the request whatever id it carries: servers that could not read the
        # request answer with a null id, and the official Python SDK with "server-error".
        return True
    answered = response.get("id")
    return type(answered) is int and answered == request_id
