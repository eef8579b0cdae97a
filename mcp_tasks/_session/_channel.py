"""The channel: what sits between the public `Client` and its `Transport`.

It negotiates the era once, under the caller's deadline and one lock, and publishes the
`Agreement` in one assignment when the negotiation is complete (`_negotiation`); it has every
message built and sent (ids, the 2026-07-28 ``_meta`` envelope, or a 2025-era session's bare
params: `_requester`); it runs a request's input_required rounds, and sets an expired 2025-era
session up again; and its `Dispatcher` gives each message the server sends of its own accord
to the one owner registered for it. It knows nothing of tasks: the tasks code keeps its state in
an attachment (`attachment`) and registers its owners on the dispatcher.

Its public methods are the semi-public API that the tasks code (and any other extension) uses:
`agree`, `send`, `list_tools`, `envelope`, `open_listen`, `attachment`, `dispatcher`, `tracing`
(the tracing hook: `NO_TRACING`, which does nothing, unless the client traces), and `closing` /
`closed_error` (the one signal that the client is closing, which every blocking wait of an
extension also waits on).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

from mcp_tasks._clock import Deadline, pause
from mcp_tasks._errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    McpError,
    ProtocolError,
    RequestTimeout,
    SessionExpired,
    TransportError,
    redact_request,
)
from mcp_tasks._input import NoHandler, answer_all
from mcp_tasks._options import ClientSettings
from mcp_tasks._session._agreement import Agreement
from mcp_tasks._session._dispatch import Dispatcher, RequestOwner
from mcp_tasks._session._negotiation import Negotiation
from mcp_tasks._session._requester import Envelope, Requester
from mcp_tasks._session._subscription import Event, Subscription
from mcp_tasks._session._tool_headers import ToolHeaders
from mcp_tasks._session._turns import Until, waiting_until, wake_turns
from mcp_tasks._tracing import tracing_for
from mcp_tasks._wire import (
    EXTENSION_RESULT_TYPES,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    PROTOCOL_VERSION,
    declares_extension,
    malformed,
    merge_meta,
    request,
)
from mcp_tasks.transports._base import Transport, closed_error

__all__ = ["Channel", "Envelope"]

log = logging.getLogger("mcp_tasks")

MAX_PAGES = 1000
STATE_ONLY_PACE = 0.25
T = TypeVar("T")


class Channel:
    """One client's conversation with its server over one transport. Safe to share between threads."""

    def __init__(self, transport: Transport, settings: ClientSettings) -> None:
        self.transport = transport
        self.settings = settings
        self.capabilities = settings.capabilities
        self.dispatcher = Dispatcher(settings.input_handlers, settings.on_notification, self._closed_now)
        self.tracing = tracing_for(self)  # NO_TRACING unless asked: nothing imported
        self._envelope = {
            META_PROTOCOL_VERSION: PROTOCOL_VERSION,
            META_CLIENT_CAPABILITIES: self.capabilities,
            META_CLIENT_INFO: settings.info,
        }
        self._tool_headers = ToolHeaders()
        self._requester = Requester(transport, self._envelope, self.dispatcher, self.tracing, self._tool_headers)
        self._negotiation = Negotiation(transport, settings, self._requester)
        self._attachments: dict[type[Any], Any] = {}
        self._attaching = threading.Lock()
        self.session_lost = False
        """True once the server ended a 2025-era session of this connection (a 404: it restarted, or
        expired it) and a new one was set up: what was kept for the old one went with it.
        """
        self.closing = threading.Event()
        """Set as `close()` begins, before anything else: a blocking wait anywhere (a pause, a
        sleep on a condition that the attachment's ``close()`` notifies) waits on it too, and then
        raises `closed_error()`.
        """
        transport.attach(receiver=self.dispatcher.receive, retry=settings.retries)

    # -- the agreement ------------------------------------------------------------------------

    @property
    def agreed(self) -> Agreement | None:
        """The agreement, or None before the first negotiation completed (never half of one)."""
        return self._negotiation.agreed

    def agree(self, deadline: Deadline) -> Agreement:
        """The agreement, negotiated within `deadline` if there is none yet (one thread does it;
        the others wait for it, within their own deadlines).
        """
        return self._negotiation.agree(deadline)

    def forget(self, seen: Agreement) -> None:
        """Drop agreement `seen` (its session expired): the next request negotiates again. A newer
        agreement that another thread made meanwhile is kept.
        """
        self._negotiation.forget(seen)

    def discover(self, deadline: Deadline) -> Agreement:
        """Send ``server/discover`` on a modern connection and publish what it says."""
        return self._negotiation.discover(deadline)

    # -- requests -----------------------------------------------------------------------------

    def envelope(self, meta: Mapping[str, Any] | None = None) -> Envelope:
        """The whole ``_meta`` of a modern request: the protocol envelope under `meta`."""
        return Envelope(merge_meta(self._envelope, meta))

    def send(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        deadline: Deadline,
        *,
        meta: Mapping[str, Any] | None = None,
        answer_input: bool = True,
        on_request: RequestOwner | None = None,
        cancellable: bool = True,
    ) -> dict[str, Any]:
        """Send a request under `deadline` (negotiating first if needed) and return its result.

        `meta` is merged over the envelope (a modern connection) or sent alone (a 2025-era
        session). An ``input_required`` result is answered with the input handlers and the
        request sent again (every round under the same deadline) unless `answer_input` is False.
        Server requests that arrive on this request's own stream go to `on_request` first.
        `cancellable` False: an abandoned request is not cancelled with notifications/cancelled.
        """
        agreed = self.agree(deadline)
        base = dict(params or {})
        sent = base
        rounds = 0
        while True:
            result, request_meta = self._exchange(agreed, method, sent, deadline, meta, on_request, cancellable)
            result_type = result.get("resultType", "complete")
            if result_type == "complete":
                if method == "tools/list":
                    self._tool_headers.learn(result)
                return result
            if result_type == "input_required":
                if not answer_input:
                    return result
                rounds += 1
                if rounds > self.settings.max_input_rounds:
                    limit = self.settings.max_input_rounds
                    raise ProtocolError(
                        f"The server asked for input more than {limit} times",
                        data={"maxInputRounds": limit},
                        cause=result,
                    )
                sent = self._answer_round(base, result, deadline)
                continue
            if _extension_result(method, result_type, request_meta):
                return result
            raise malformed(f"The server sent an unknown resultType {result_type!r}", result)

    def call_tool(
        self,
        params: Mapping[str, Any],
        deadline: Deadline,
        *,
        meta: Mapping[str, Any] | None = None,
        answer_input: bool = True,
        cancellable: bool = True,
    ) -> dict[str, Any]:
        """``tools/call``: when an HTTP server wants ``Mcp-Param`` headers this client could not
        know, learn the tool's schema from ``tools/list`` and try once more, in the one deadline.
        """
        name = params.get("name")
        try:
            return self.send(
                "tools/call", params, deadline, meta=meta, answer_input=answer_input, cancellable=cancellable
            )
        except McpError as exc:
            if exc.code != HEADER_MISMATCH or self._tool_headers.known(name):
                raise
            try:
                self.list_tools(deadline, None)
            except RequestTimeout:
                raise
            except McpError as learning:
                raise exc from learning  # the server's own refusal says more than the failed lookup
            if not self._tool_headers.wanted(str(name)):
                raise
        return self.send("tools/call", params, deadline, meta=meta, answer_input=answer_input, cancellable=cancellable)

    def list_tools(self, deadline: Deadline, meta: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """Every tool of every page, without those whose header annotations a client must refuse."""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = self.send("tools/list", {"cursor": cursor} if cursor else None, deadline, meta=meta)
            listed = page.get("tools")
            if not isinstance(listed, list):
                raise malformed("The tools/list result has no tools list", page)
            tools.extend(t for t in listed if isinstance(t, dict) and self._tool_headers.acceptable(t))
            next_cursor = page.get("nextCursor")
            if not isinstance(next_cursor, str) or not next_cursor:
                return tools
            cursor = next_cursor
        raise malformed(f"tools/list went on for more than {MAX_PAGES} pages")

    def open_listen(
        self,
        notifications: Mapping[str, Any],
        deadline: Deadline,
        meta: Mapping[str, Any] | None,
        max_buffer: int = 100,
        overflow: Literal["drop_oldest", "drop_newest"] = "drop_oldest",
        sink: Callable[[Event], None] | None = None,
        start: bool = True,
    ) -> Subscription:
        """A ``subscriptions/listen`` stream, returned once the server acknowledged it. With a
        `sink`, its worker thread hands each event (its `Closed` end too) to it instead of the
        queue: a reader of the library's own then costs no thread of its own. `start` False:
        the acknowledgement is read on this thread, and the worker starts at `Subscription.start`
        (no reader thread until the caller wants the events).
        """
        agreed = self.agree(deadline)
        if agreed.legacy:
            raise McpError(
                METHOD_NOT_FOUND,
                f"The server speaks {agreed.version}, which has no subscriptions/listen "
                "(its notifications come on the session)",
                kind="protocol",
            )
        listen_id = self._requester.next_id()
        body = self.tracing.inject({"notifications": dict(notifications), "_meta": self._requester.meta_of(None, meta)})
        log.debug("-> subscriptions/listen #%s", listen_id)
        try:
            stream = self.transport.open_stream(request(listen_id, "subscriptions/listen", body), deadline)
        except McpError as exc:
            redact_request(exc, notifications)  # a refusal may quote the ids
            raise
        subscription = Subscription(stream, listen_id, max_buffer=max_buffer, overflow=overflow, sink=sink, start=start)
        try:
            if start:
                subscription.wait_acknowledged(deadline)
            else:
                subscription.acknowledge(deadline)
        except McpError as exc:
            subscription.close()
            redact_request(exc, notifications)
            raise
        except BaseException:
            subscription.close()
            raise
        return subscription

    def attachment(self, kind: type[T], make: Callable[[Channel], T]) -> T:
        """The one `kind` object kept for this channel, made by `make(self)` on first use: how an
        extension keeps its per-connection state (and registers its owners) without the channel
        knowing it.
        """
        found = self._attachments.get(kind)
        if found is None:
            with self._attaching:
                found = self._attachments.get(kind)
                if found is None:
                    found = make(self)
                    self._attachments[kind] = found
        return found

    def close(self, *, end_session: bool = True) -> None:
        """Close the transport (`end_session` False: leave a 2025-era session open). Attachments
        with a ``close()`` are closed first (their streams), those with a ``join()`` joined after
        (their threads, which the transport's end unblocks).
        """
        self.closing.set()
        wake_turns()  # questions waiting their turn to ask a person leave the queue
        attached = list(self._attachments.values())
        for close in [getattr(a, "close", None) for a in attached]:
            if callable(close):
                close()
        try:
            if not end_session:
                self.transport.keep_session()
            self.transport.close()
        finally:
            for join in [getattr(a, "join", None) for a in attached]:
                if callable(join):
                    join()

    def _closed_now(self) -> TransportError | None:
        return self.closed_error() if self.closing.is_set() else None

    @staticmethod
    def closed_error(cause: BaseException | None = None) -> TransportError:
        """The one error with which every wait ends when the client closes under it (the one its
        transport's requests and streams end with too).
        """
        return closed_error(cause)

    # -- one exchange ---------------------------------------------------------------------------

    def _exchange(
        self,
        agreed: Agreement,
        method: str,
        params: dict[str, Any],
        deadline: Deadline,
        meta: Mapping[str, Any] | None,
        on_request: RequestOwner | None,
        cancellable: bool,
    ) -> tuple[dict[str, Any], Mapping[str, Any]]:
        if agreed.legacy:
            return self._exchange_legacy(agreed, method, params, deadline, meta, on_request, cancellable), {}
        request_meta = self._requester.meta_of(params.get("_meta"), meta)
        return self._requester.modern(method, params, deadline, request_meta, on_request, cancellable), request_meta

    def _exchange_legacy(
        self,
        agreed: Agreement,
        method: str,
        params: dict[str, Any],
        deadline: Deadline,
        meta: Mapping[str, Any] | None,
        on_request: RequestOwner | None,
        cancellable: bool,
    ) -> dict[str, Any]:
        """One request on a handshake session: no envelope (only a `meta` of the caller's own);
        a session the server has expired is set up again once, and the request sent again.
        """
        sent = self._requester.legacy_params(params, meta)
        try:
            return self._requester.round_trip(method, sent, deadline, None, on_request, cancellable)
        except SessionExpired:
            log.info("the server expired the session; starting a new one")
            self.session_lost = True
            self.forget(agreed)
            if not self.agree(deadline).legacy:
                raise
        return self._requester.round_trip(method, sent, deadline, None, on_request, cancellable)

    # -- input rounds -------------------------------------------------------------------------

    def _answer_round(self, base: dict[str, Any], result: dict[str, Any], deadline: Deadline) -> dict[str, Any]:
        """The next round's params: the original request plus the answers to `result`."""
        requests = result.get("inputRequests")
        state = result.get("requestState")
        if state is not None and not isinstance(state, str):
            raise malformed("The server sent a requestState that is not a string", result)
        if requests is None or requests == {}:
            if state is None:
                raise malformed("The server asked for input without inputRequests or requestState", result)
            # Only state to echo: pace the rounds, the pause cut to the call's deadline.
            pace = deadline.step(STATE_ONLY_PACE)
            pause(STATE_ONLY_PACE if pace is None else pace)
            return {**base, "requestState": state}
        if not isinstance(requests, dict):
            raise malformed("The server sent inputRequests that are not an object", result)
        until = Until(deadline, lambda: _turn_timeout(deadline), self._closed_now)
        try:
            with waiting_until(until):  # a question waiting its turn keeps to the call's deadline
                responses = answer_all(self.settings.input_handlers, requests, result)
        except NoHandler as missing:
            raise McpError(
                INVALID_PARAMS,
                f"No input handler for the server's {missing.kind or 'unknown kind of'} request",
                cause=("no_input_handler", missing.kind, result),
            ) from None
        answered = {**base, "inputResponses": responses}
        if state is not None:
            answered["requestState"] = state
        return answered


def _turn_timeout(deadline: Deadline) -> RequestTimeout:
    return RequestTimeout(deadline.timeout or 0.0, "Timed out waiting for a turn to ask a person for input")


def _extension_result(method: str, result_type: object, request_meta: Mapping[str, Any]) -> bool:
    if not isinstance(result_type, str):
        return False
    entry = EXTENSION_RESULT_TYPES.get(result_type)
    if entry is None:
        return False
    extension, methods = entry
    return method in methods and declares_extension(request_meta, extension)
