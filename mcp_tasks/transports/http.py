"""Streamable HTTP (2026-07-28): each message is one POST; the answer is a JSON body, or an SSE
stream of request-scoped notifications ending with the response.

Headers follow the spec (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``):
`transports._headers` is the one place they are built, `HttpTransport._send` the one place a
POST goes out (by way of `transports._sender`). The modules behind this one: `mcp_tasks.transports`.

**One deadline, every byte.** Each exchange (a POST and its answer, with every re-send an auth
object makes and every request of its own an ``auth_flow`` yields, as `OAuth`'s discovery and
token requests, see `transports._auth_flow`; a resumption GET; the session's GET stream; the
DELETE at close) runs under a `Watch`: the sockets it uses are attached to it as they are made or
reused, and the transport's one watchdog thread shuts them down when the deadline passes (or
`close` cuts them: `transports._in_flight`), whatever a server trickles: the name lookup
(`transports._resolve`), connect, TLS, status line, headers, body, through an HTTP(S) proxy too
(its ``CONNECT`` and its answer included). The margin is the watchdog's wake-up latency (a few ms
on an idle machine). A message sent through a user's session whose own mounted adapter serves the
URL is watched from its answer's body on (its headers only by socket timeouts).

**Bodies.** This transport reads every body itself (`transports._body`), under the watch, with a
size cap (`max_message`, 16 MiB by default), gzip and deflate decoded under the same cap.

**Connections.** A connection goes back to the pool only after its answer was read to a clean end
(a JSON answer, a 202, an SSE answer whose stream the server closes after the response) and the
watch never cut it; anything else closes it, so no request, whichever thread sends it, reads an
old answer's bytes. After an SSE answer the rest of the stream is drained for at most
`DRAIN_WAIT` seconds; a server that keeps the stream open longer costs a new connection, never
time. The pool (see `transports._sender`) keeps up to `AUTO_POOL_SIZE` idle connections. urllib3
never retries on its own here: failures go to the client's one `Retry` policy, marked retryable (a
refused or reset connection, a dropped keep-alive connection, HTTP 429, 502, 503, 504 with
``Retry-After``) and `sent=False` only when the connection could not be made.

**The user's session.** With a plain `requests.Session` a message goes straight to our pool;
otherwise through `Session.request`, so auth objects, hooks, cookies, proxies, verify and cert act
exactly as they do for any requests call (see `transports._sender`). A 401 or 403 that no auth
object resolved is an `McpError` of kind ``authorization`` naming the URL and the server's
``WWW-Authenticate``.

**Abandoned requests** (see `Transport.request`): the answer's connection is closed, and the
server is sent ``notifications/cancelled`` (by the transport's cancel sender, after the caller's
exception, in a POST of its own under a watch of its own) when the request may be running there: once it went
straight to a connection to the server, or, through `Session.request`, once the server accepted
it (a failure before that may be an auth object's own, and a cancellation must never start an
authorization flow). `close` fails the requests still waiting.

**A 2025-era session** (after ``initialize``, see `transports._session`): requests carry the
session's ``Mcp-Session-Id`` and ``MCP-Protocol-Version`` and none of the 2026-07-28 headers; a 404
to any message that carried the session id is `SessionExpired`, and from then on every message but
``initialize`` is refused with it (the client's expiry path sets a new session up, whoever's
message met the 404); the session's GET stream (its own watch, cut by `close`) brings the
server's own messages; an SSE answer that ends before its response is resumed with
``Last-Event-ID``, and a response the server sends on the GET stream instead answers the request
still waiting for it; the first request of a session waits (`GET_STREAM_WAIT` at most) for the GET
stream to open, so the server has it to send on; ``close`` DELETEs the session (with its
``MCP-Protocol-Version``), unless it was joined (``session_id=``: another process owns it). The
server's requests, on any stream, are handed to the client (with the id of the request whose
answer carried them, None on the GET stream) and their answers POSTed back.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Final

import requests
from requests.auth import AuthBase

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import McpError, SessionExpired, TransportError
from mcp_tasks._wire import dumps as dump_json
from mcp_tasks._wire import malformed
from mcp_tasks.transports._answers import HttpStream, SingleMessage, json_answer, messages
from mcp_tasks.transports._base import Message, RequestId, Sent, Stream, Transport, closed_error
from mcp_tasks.transports._body import Response
from mcp_tasks.transports._failures import check_status, rpc_error
from mcp_tasks.transports._get_stream import GetResponse, GetStreamHolder
from mcp_tasks.transports._headers import message_headers
from mcp_tasks.transports._in_flight import InFlight
from mcp_tasks.transports._resume import Awaited, AwaitedRequests, StreamMark, resume_answer
from mcp_tasks.transports._sender import AUTO_POOL_SIZE, Sender
from mcp_tasks.transports._session import LegacySession
from mcp_tasks.transports._sse import MAX_EVENT
from mcp_tasks.transports._watchdog import Watch, Watchdog, current, watching

__all__ = ["AUTO_POOL_SIZE", "DRAIN_WAIT", "HttpStream", "HttpTransport"]

log = logging.getLogger("mcp_tasks")

DRAIN_WAIT: Final = 0.1
"""How long the end of an SSE answer's stream is awaited after its response, to keep the connection."""

GET_STREAM_WAIT: Final = 2.0
"""How long a 2025-era session's first request waits for the session's GET stream to open."""

NOTIFY_TIMEOUT: Final = 30.0
DELETE_TIMEOUT: Final = 0.5
"""How long `close()` gives the DELETE that ends a 2025-era session: best effort (the server
expires the session anyway), so a server gone dark holds `close()` half a second at most."""


class HttpTransport(Transport):
    """Talks to one Streamable HTTP endpoint over a `requests.Session`.

    A `session` you pass in is used as it is (its adapters, headers, cookies, auth, hooks,
    proxies, verify and cert) and never closed by this transport; otherwise one is made with a
    connection pool of `pool_size` connections, or (None) one sized for the threads that share
    the client. `max_message` caps one message (a JSON body or an SSE event), in bytes.

    `session_id` joins a 2025-era session another process set up (and owns): every request
    carries it as ``Mcp-Session-Id`` from the first on, `begin_session` keeps it, and `close`
    does not DELETE it.
    """

    max_message: int = MAX_EVENT

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: AuthBase | tuple[str, str] | None = None,
        session: requests.Session | None = None,
        verify: bool | str | None = None,
        cert: str | tuple[str, str] | None = None,
        proxies: Mapping[str, str] | None = None,
        pool_size: int | None = None,
        session_id: str | None = None,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url must be an http(s) URL, got {url!r}")
        if pool_size is not None and (isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1):
            raise ValueError(f"pool_size must be a positive int or None, got {pool_size!r}")
        self._watchdog = Watchdog(str(id(self))[-6:])
        self._sender = Sender(
            url,
            headers=headers,
            auth=auth,
            session=session,
            verify=verify,
            cert=cert,
            proxies=proxies,
            pool_size=pool_size,
            watchdog=self._watchdog,
        )
        self.url: str = self._sender.url
        self._where = self._sender.where
        self._in_flight = InFlight(self._watchdog)  # what `close` cuts
        self._legacy = LegacySession()
        if session_id is not None:
            self._legacy.join(session_id)
        self._pending = AwaitedRequests()
        self._get_stream = GetStreamHolder(
            self._open_get,
            lambda message: self._take_pushed(message, None),
            self._pending.answer,
            self._watchdog,
            str(id(self))[-6:],
        )

    # -- Transport ----------------------------------------------------------------------------

    def _request(self, message: Message, deadline: Deadline, headers: Mapping[str, str] | None, sent: Sent) -> Message:
        """See `Transport.request`. The request is in the pending map while it waits, where the
        session's GET stream can hand it an answer, and `close` can cut it.
        """
        self._await_get_stream(deadline)
        awaited = self._pending.add(message["id"])
        try:
            watch = self._in_flight.begin(deadline)
        except BaseException:
            self._pending.remove(awaited)
            raise
        try:
            with watching(watch):
                return self._exchange(message, deadline, headers, sent, awaited)
        except McpError:
            found = awaited.outcome()
            if found is None:
                raise
            return found
        finally:
            self._in_flight.end(watch)
            self._pending.remove(awaited)

    def _exchange(
        self, message: Message, deadline: Deadline, headers: Mapping[str, str] | None, sent: Sent, awaited: Awaited
    ) -> Message:
        response = self._send(message, deadline, extra=headers, sent=sent)
        try:
            awaited.reading(response.watch.fire)
            if response.status == 202:
                raise malformed(f"The server answered the request {message.get('method')} with 202 and no body")
            if response.event_stream:
                return self._answer_from_stream(response, awaited, deadline)
            return json_answer(response, response.read_all(deadline, self.max_message), message["id"])
        finally:
            awaited.reading(None)
            response.finish()

    @property
    def in_flight(self) -> frozenset[RequestId]:
        """See `Transport.in_flight`."""
        return self._pending.ids()

    @property
    def session_id(self) -> str | None:
        """See `Transport.session_id`: the 2025-era session's ``Mcp-Session-Id``, ours or joined."""
        return self._legacy.session_id

    def notify(self, message: Message, deadline: Deadline | None = None) -> None:
        """See `Transport.notify`. The server answers 202 with no body; an error status with a
        JSON-RPC error in its body (a server that failed to take the notification) raises it.
        """
        bound = Deadline(NOTIFY_TIMEOUT) if deadline is None else deadline.within(NOTIFY_TIMEOUT)
        watch = self._in_flight.begin(bound)
        try:
            with watching(watch):
                response = self._send(message, bound)
                try:
                    body = response.read_all(bound, self.max_message)
                finally:
                    response.finish()
        except McpError as exc:
            raise self._in_flight.closed_or(exc) from exc
        finally:
            self._in_flight.end(watch)
        if response.status >= 400:
            refused = rpc_error(body)
            raise (
                refused
                if refused is not None
                else TransportError(
                    f"HTTP {response.status} from {response.where} for {message.get('method')}",
                    data={"status": response.status},
                )
            )

    def _open_stream(self, message: Message, deadline: Deadline, sent: Sent) -> Stream:
        """See `Transport.open_stream`: the POST's response is the stream (SSE), or one error."""
        self._await_get_stream(deadline)
        watch = self._in_flight.begin(deadline)
        try:
            with watching(watch):
                response = self._send(message, deadline, listen=True, sent=sent)
                if not response.event_stream:
                    try:
                        single = json_answer(response, response.read_all(deadline, self.max_message), message["id"])
                    finally:
                        response.finish()
                    self._in_flight.end(watch)
                    return SingleMessage(single)
        except McpError as exc:
            self._in_flight.end(watch)
            raise self._in_flight.closed_or(exc) from exc
        except BaseException:
            self._in_flight.end(watch)
            raise
        watch.rearm(None)  # open: the stream is read without a deadline, and cut by `close`
        stream = HttpStream(response, self._in_flight.forget, max_message=self.max_message)
        self._in_flight.keep_stream(watch, stream)
        return stream

    def begin_session(self, protocol_version: str) -> None:
        """See `Transport.begin_session`: send the session's headers from now on, and keep its GET
        stream open for the server's own messages. Called again for a new session (after the
        server expired one), the new session's GET stream replaces the old one's.
        """
        self._legacy.begin(protocol_version)
        if not self._in_flight.closed:
            self._get_stream.begin(self._legacy.headers("GET"))

    def keep_session(self) -> None:
        """See `Transport.keep_session`: the session is left open, as a joined one is."""
        self._legacy.keep()

    def close(self) -> None:
        """Fail the requests still waiting and cut every exchange in flight (its sockets shut
        down: a request, or a listen stream being opened, to a server gone dark ends at once, with
        the one closed error), and close open streams; end a handshake session (its GET stream,
        then DELETE it, unless it was joined); close the requests session unless it was passed in.
        The notices of abandoned requests still waiting go out first (within their budgets).
        Idempotent.
        """
        self._stop_cancels()
        if not self._in_flight.close():
            return
        self._pending.abort()  # first: a request its cut wakes finds why
        self._in_flight.cut()
        self._get_stream.close()
        self._end_session()
        self._watchdog.close()
        self._sender.close()

    def __repr__(self) -> str:
        return f"<HttpTransport {self._where}>"

    # -- internals ----------------------------------------------------------------------------

    def _take_pushed(self, message: Message, origin: RequestId | None) -> None:
        """A message the server sent of its own accord: to the client; a request's answer back.
        `origin`: the request whose answer stream carried it (None for the GET stream).
        """
        response = self.deliver(message, origin)
        if response is None or self._in_flight.closed:
            return
        try:
            self.notify(response)
        except McpError as exc:
            log.warning("could not send the answer to the server's %s request: %s", message.get("method"), exc)

    def _open_get(self, headers: dict[str, str], watch: Watch | None = None) -> GetResponse:
        """One GET of the session's stream: for `GetStream` under its own `watch` (cut by `close`),
        and for the resumption of an answer under the call's (this thread's current one).
        """
        watch = watch or current() or self._watchdog.watch(None)
        response = self._sender.get(headers, watch, NOTIFY_TIMEOUT)
        # The reader sets the socket's timeout itself (none on the standing stream, the call's
        # deadline when an answer is resumed).
        chunks = iter(lambda: response.chunk(None, keep_timeout=True), b"")
        return GetResponse(response.status, chunks, response.sock, response.finish)

    def _await_get_stream(self, deadline: Deadline) -> None:
        """Hold a request back until the session's GET stream has an answer (at most
        `GET_STREAM_WAIT`, within `deadline`): a server that sends what it has for the client
        (a resumed answer, an input request) on the GET stream then has it to send on.
        """
        self._get_stream.wait_opened(deadline, GET_STREAM_WAIT)

    def _end_session(self) -> None:
        """DELETE a handshake session the server gave an id for (best effort, bounded), with the
        session's ``MCP-Protocol-Version`` as every request of the session had. A joined session
        is left alone: its owner ends it.
        """
        session = self._legacy.end()
        if session is not None:
            self._sender.delete(session, DELETE_TIMEOUT)

    def _send(
        self,
        message: Message,
        deadline: Deadline,
        *,
        listen: bool = False,
        extra: Mapping[str, str] | None = None,
        sent: Sent | None = None,
    ) -> Response:
        """POST one message within the deadline (under this thread's current watch, which the
        caller set up and closes); the response, its status checked, its body unread.
        """
        if self._in_flight.closed:
            raise closed_error()
        if self._legacy.refuses(message.get("method")):
            # The server expired the session earlier (maybe on a notification, or the answer to
            # one of its requests): the caller's expiry path sets a new one up.
            raise SessionExpired()
        watch = current()
        assert watch is not None, "an HTTP exchange runs under a watch"
        body = dump_json(message)
        headers = message_headers(message, self._legacy, listen, extra)
        response = self._sender.post(body, headers, deadline, watch, sent)
        self._legacy.learn(message.get("method"), response.status, response.headers)
        if self._legacy.expired(headers, response.status):
            response.finish()
            self._legacy.expire()
            raise SessionExpired()
        try:
            check_status(response, deadline, self.max_message)
        except BaseException:
            response.finish()
            raise
        if sent is not None:
            # Through `Session.request`, a failure may come from an auth object's own exchanges
            # (a token endpoint) as well as the server's; only an accepted request counts as
            # reached, so a cancellation never sets an authorization flow going.
            sent.reached = True
        return response

    def _answer_from_stream(self, response: Response, awaited: Awaited, deadline: Deadline) -> Message:
        request_id: RequestId = awaited.request_id
        mark = StreamMark()
        for message in messages(response, deadline, self.max_message, mark):
            if "method" in message:
                # The server's own request (answered in a POST of its own) or a notification.
                self._take_pushed(message, request_id)
                continue
            if message.get("id") == request_id:
                response.drain(deadline.within(DRAIN_WAIT))
                return message
            raise malformed("The server answered another request on this request's SSE stream", message.get("id"))
        found = awaited.outcome()
        if found is not None:
            return found
        if self._legacy.active and mark.last_id is not None:  # resumable: see transports/_resume.py
            return resume_answer(
                self._open_get,
                self._legacy.headers("GET"),
                awaited,
                mark,
                deadline,
                lambda message: self._take_pushed(message, request_id),
            )
        raise TransportError(f"the SSE answer from {self._where} ended without a response", retryable=True)
