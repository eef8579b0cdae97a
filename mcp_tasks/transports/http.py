"""Streamable HTTP (2026-07-28): each message is one POST; the answer is a JSON body, or an SSE
stream of request-scoped notifications ending with the response.

Headers follow the spec: ``MCP-Protocol-Version``, ``Mcp-Method``, and ``Mcp-Name`` (the tool
name, the uri, or ``params.taskId`` on tasks/get, tasks/update and tasks/cancel), in the
``=?base64?…?=`` form when a value is not plain visible ASCII; ``Mcp-Param-*`` headers come from
the client for tools whose arguments are annotated ``x-mcp-header``. `HttpTransport._headers` is
the one place headers are built, `HttpTransport._send` the one place a POST goes out.

**Bodies.** This transport reads every body itself, from the response's socket, so that the
call's one deadline bounds the whole read (each receive gets only the time left, so a body
trickled a byte at a time cannot stretch a call), a size cap holds (`max_message`, 16 MiB by
default), and the connection goes back to the pool only when the body was read to its end.
Requests keep the session's ``Accept-Encoding`` (requests asks for ``gzip, deflate``): answers
can be large task results, worth compressing off loopback, and gzip and deflate bodies are
decoded here, incrementally and under the same cap (so a compression bomb is refused). A listen
stream asks for ``identity``: a compressing server or proxy buffers its output, which would hold
notifications back, and the stream carries small messages anyway; one that compresses regardless
is still decoded.

**Connections.** A body read to its end (a JSON answer, a 202, an SSE answer whose stream the
server closes after the response) leaves its connection in the pool. After an SSE answer the rest
of the stream is drained for at most `DRAIN_WAIT` seconds; a server that keeps the stream open
longer costs a new connection, never time. A session made here has a pool that does not block
and keeps up to `AUTO_POOL_SIZE` idle connections, so every thread sharing the client gets one
and hands it back (no "pool is full" discards); it never holds more than the peak number of
concurrent requests. urllib3 never retries on its own here: failures go to the client's one
`Retry` policy, marked retryable (a refused or reset connection, a dropped keep-alive connection,
HTTP 429, 502, 503, 504 with ``Retry-After``) and `sent=False` only when the connection could not
be made.

**Speed, and the user's session.** With a plain `requests.Session` (no auth, no response hooks,
no cookies, the stock adapter, no proxy for the URL), a message goes straight to the adapter's
urllib3 pool, with the session's headers, verify and cert as they were when the client was made.
Otherwise it goes through `Session.request`, so auth objects (and their 401 response hooks, as
`requests.auth.HTTPDigestAuth` uses), hooks, cookies, proxies, verify, cert and mounted adapters
act exactly as they do for any requests call; redirects are not followed on either path. A 401 or
403 that no auth object resolved is an `McpError` of kind ``authorization`` naming the URL and the
server's ``WWW-Authenticate`` challenge.

**Abandoned requests** (see `Transport.request`): the answer's connection is closed, and the
server is sent ``notifications/cancelled`` when the request may be running there: once it went
straight to the server's connection pool, or, through `Session.request`, once the server accepted
it (a failure before that may be an auth object's own, and a cancellation must never start an
authorization flow). `close` fails the requests still waiting.

**A 2025-era session** (after ``initialize``, see `transports._session`): requests carry the
session's ``Mcp-Session-Id`` and ``MCP-Protocol-Version`` and none of the 2026-07-28 headers; a 404
to a request that carried the session id is `SessionExpired`; the session's GET stream brings the
server's own messages; an SSE answer that ends before its response is resumed with
``Last-Event-ID``, and a response the server sends on the GET stream instead answers the request
still waiting for it; the first request of a session waits (`GET_STREAM_WAIT` at most) for the GET
stream to open, so the server has it to send on; ``close`` DELETEs the session (with its
``MCP-Protocol-Version``), unless it was joined (``session_id=``: another process owns it). The
server's requests, on any stream, are handed to the client (with the id of the request whose
answer carried them, None on the GET stream) and their answers POSTed back.
"""

from __future__ import annotations

import email.utils
import http.client
import itertools
import logging
import socket
import ssl
import threading
import urllib.parse
import zlib
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from typing import Any, Final

import requests
import urllib3
from requests.adapters import HTTPAdapter
from requests.auth import AuthBase
from requests.cookies import extract_cookies_to_jar
from requests.utils import select_proxy

from mcp_tasks._clock import Deadline, wait_sliced
from mcp_tasks._errors import (
    AUTHORIZATION_FAILED,
    McpError,
    ProtocolError,
    RequestTimeout,
    SessionExpired,
    TransportError,
)
from mcp_tasks._wire import (
    META_PROTOCOL_VERSION,
    PROTOCOL_VERSION,
    encode_header_value,
    loads,
    malformed,
    mcp_name,
    valid_id,
)
from mcp_tasks._wire import dumps as dump_json
from mcp_tasks.transports._auth_flow import send_through_auth
from mcp_tasks.transports._base import Message, RequestId, Sent, Stream, Transport, request_ids
from mcp_tasks.transports._session import (
    Awaited,
    GetResponse,
    GetStream,
    LegacySession,
    StreamMark,
    resume_answer,
)
from mcp_tasks.transports._sse import MAX_EVENT, SseDecoder

__all__ = ["AUTO_POOL_SIZE", "DRAIN_WAIT", "HttpStream", "HttpTransport"]

log = logging.getLogger("mcp_tasks")

AUTO_POOL_SIZE: Final = 4096
"""Idle connections a pool made here keeps (it opens only as many as requests run at once)."""

DRAIN_WAIT: Final = 0.1
"""How long the end of an SSE answer's stream is awaited after its response, to keep the connection."""

GET_STREAM_WAIT: Final = 2.0
"""How long a 2025-era session's first request waits for the session's GET stream to open."""

NOTIFY_TIMEOUT: Final = 30.0
RETRY_STATUSES: Final = frozenset({429, 502, 503, 504})
_READ_SIZE: Final = 65536
_INFLATE_STEP: Final = 4 * 1024 * 1024


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
        self._own_session = session is None
        if session is None:
            session = requests.Session()
            adapter = HTTPAdapter(pool_connections=1, pool_maxsize=pool_size or AUTO_POOL_SIZE, pool_block=False)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
        self._session = session
        template = session.prepare_request(requests.Request("POST", url))
        assert template.url is not None
        self.url: str = template.url
        self._where = _shown(self.url)
        parts = urllib.parse.urlsplit(self.url)
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        fixed = requests.structures.CaseInsensitiveDict(dict(headers or {}))
        fixed["Content-Type"] = "application/json"
        fixed["Accept"] = "application/json, text/event-stream"
        self._fixed = dict(fixed.items())
        merged = requests.structures.CaseInsensitiveDict(template.headers)
        merged.update(fixed)
        merged.pop("Cookie", None)
        self._plain_headers = _canonical(dict(merged.items()))
        self._auth: Any = auth
        self._verify, self._cert = verify, cert
        self._proxies = dict(proxies) if proxies else None
        settings = session.merge_environment_settings(self.url, dict(proxies or {}), True, verify, cert)
        self._adapter = session.get_adapter(self.url)
        self._snapshot = (session.verify, session.cert, dict(session.proxies))
        self._pool = self._direct_pool(template, settings)
        self._cookie_lock = threading.Lock()
        self._streams: set[HttpStream] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._legacy = LegacySession()
        if session_id is not None:
            self._legacy.join(session_id)
        self._get_stream: GetStream | None = None
        self._get_streams = itertools.count(1)
        self._pending: dict[object, Awaited] = {}

    def _direct_pool(self, template: requests.PreparedRequest, settings: Any) -> Any:
        """The adapter's connection pool for this URL, when messages may go straight to it."""
        adapter = self._adapter
        if type(adapter) is not HTTPAdapter or type(self._session) is not requests.Session:
            return None
        if select_proxy(self.url, settings["proxies"]):
            return None
        connect = getattr(adapter, "get_connection_with_tls_context", None)
        if connect is None:  # pragma: no cover - requests older than the declared floor
            return None
        pool = connect(template, settings["verify"], proxies=settings["proxies"], cert=settings["cert"])
        adapter.cert_verify(pool, self.url, settings["verify"], settings["cert"])  # type: ignore[no-untyped-call]
        return pool

    def _plain(self) -> bool:
        """Whether this message may skip `Session.request` (nothing it would do applies)."""
        session = self._session
        return (
            self._pool is not None
            and self._auth is None
            and session.auth is None
            and not session.hooks.get("response")
            and not session.cookies
            and (session.verify, session.cert, session.proxies) == self._snapshot
        )

    # -- Transport ----------------------------------------------------------------------------

    def _request(self, message: Message, deadline: Deadline, headers: Mapping[str, str] | None, sent: Sent) -> Message:
        """See `Transport.request`. The request is in the pending map while it waits, where the
        session's GET stream can hand it an answer, and `close` can cut it.
        """
        self._await_get_stream(deadline)
        key = message["id"]
        awaited = Awaited(key)
        with self._lock:
            if self._closed:
                raise TransportError("the client is closed")
            self._pending[key] = awaited
        try:
            return self._exchange(message, deadline, headers, sent, awaited)
        except McpError:
            found = awaited.outcome()
            if found is None:
                raise
            return found
        finally:
            with self._lock:
                if self._pending.get(key) is awaited:
                    del self._pending[key]

    def _exchange(
        self, message: Message, deadline: Deadline, headers: Mapping[str, str] | None, sent: Sent, awaited: Awaited
    ) -> Message:
        response = self._send(message, deadline, extra=headers, sent=sent)
        try:
            awaited.reading(response.shutdown)
            if response.status == 202:
                raise malformed(f"The server answered the request {message.get('method')} with 202 and no body")
            if response.event_stream:
                return self._answer_from_stream(response, awaited, deadline)
            return _json_answer(response, response.read_all(deadline, self.max_message), message["id"])
        finally:
            awaited.reading(None)
            response.finish()

    @property
    def in_flight(self) -> frozenset[RequestId]:
        """See `Transport.in_flight`."""
        with self._lock:
            return request_ids(self._pending)

    @property
    def session_id(self) -> str | None:
        """See `Transport.session_id`: the 2025-era session's ``Mcp-Session-Id``, ours or joined."""
        return self._legacy.session_id

    def notify(self, message: Message, deadline: Deadline | None = None) -> None:
        """See `Transport.notify`. The server answers 202 with no body; an error status with a
        JSON-RPC error in its body (a server that failed to take the notification) raises it.
        """
        bound = Deadline(NOTIFY_TIMEOUT) if deadline is None else deadline.within(NOTIFY_TIMEOUT)
        response = self._send(message, bound)
        try:
            body = response.read_all(bound, self.max_message)
        finally:
            response.finish()
        if response.status >= 400:
            refused = _rpc_error(body)
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
        response = self._send(message, deadline, listen=True, sent=sent)
        if not response.event_stream:
            try:
                single = _json_answer(response, response.read_all(deadline, self.max_message), message["id"])
            finally:
                response.finish()
            return _SingleMessage(single)
        stream = HttpStream(response, self._forget, max_message=self.max_message)
        with self._lock:
            if self._closed:
                stream.close()
                raise TransportError("the client is closed")
            self._streams.add(stream)
        return stream

    def begin_session(self, protocol_version: str) -> None:
        """See `Transport.begin_session`: send the session's headers from now on, and keep its GET
        stream open for the server's own messages. Called again for a new session (after the
        server expired one), the new session's GET stream replaces the old one's.
        """
        self._legacy.begin(protocol_version)
        headers = self._legacy.headers("GET")
        with self._lock:
            old = self._get_stream
            if self._closed or (old is not None and old.headers == headers):
                return
            self._get_stream = GetStream(
                self._open_get,
                lambda message: self._take_pushed(message, None),
                self._answer_elsewhere,
                headers,
                f"{str(id(self))[-6:]}-{next(self._get_streams)}",
            )
        if old is not None:
            old.close()

    def keep_session(self) -> None:
        """See `Transport.keep_session`: the session is left open, as a joined one is."""
        self._legacy.keep()

    def close(self) -> None:
        """Close open streams and fail the requests still waiting; end a handshake session (its
        GET stream, then DELETE it, unless it was joined); close the requests session unless it
        was passed in. Idempotent.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            streams = list(self._streams)
            get_stream, self._get_stream = self._get_stream, None
            pending = list(self._pending.values())
        for awaited in pending:
            awaited.abort()
        for stream in streams:
            stream.close()
        if get_stream is not None:
            get_stream.close()
        self._end_session()
        if self._own_session:
            self._session.close()

    def __repr__(self) -> str:
        return f"<HttpTransport {self._where}>"

    # -- internals ----------------------------------------------------------------------------

    def _forget(self, stream: HttpStream) -> None:
        with self._lock:
            self._streams.discard(stream)

    def _take_pushed(self, message: Message, origin: RequestId | None) -> None:
        """A message the server sent of its own accord: to the client; a request's answer back.
        `origin`: the request whose answer stream carried it (None for the GET stream).
        """
        response = self.deliver(message, origin)
        if response is None or self._closed:
            return
        try:
            self.notify(response)
        except McpError as exc:
            log.warning("could not send the answer to the server's %s request: %s", message.get("method"), exc)

    def _open_get(self, headers: dict[str, str]) -> GetResponse:
        """One GET of the session's stream (for `GetStream` and the resumption of an answer)."""
        raw = self._session.get(
            self.url,
            headers=headers,
            stream=True,
            timeout=(NOTIFY_TIMEOUT, None),
            verify=self._verify,
            cert=self._cert,
            proxies=self._proxies,
            auth=self._auth,
            allow_redirects=False,
        ).raw
        response = _Response(raw, self._where)
        # The reader sets the socket's timeout itself (none on the standing stream, the call's
        # deadline when an answer is resumed).
        chunks = iter(lambda: response.chunk(None, keep_timeout=True), b"")
        return GetResponse(response.status, chunks, response.sock, response.finish)

    def _answer_elsewhere(self, message: Message) -> bool:
        """A response on the session's GET stream: the answer of the request still waiting for it
        (False when none is).
        """
        key = message.get("id")
        with self._lock:
            awaited = self._pending.get(key) if valid_id(key) else None
        return awaited is not None and awaited.answered(message)

    def _await_get_stream(self, deadline: Deadline) -> None:
        """Hold a request back until the session's GET stream has an answer (at most
        `GET_STREAM_WAIT`, within `deadline`): a server that sends what it has for the client
        (a resumed answer, an input request) on the GET stream then has it to send on.
        """
        get_stream = self._get_stream
        if get_stream is not None and not get_stream.opened.is_set():
            wait_sliced(get_stream.opened, deadline.bound(GET_STREAM_WAIT))

    def _end_session(self) -> None:
        """DELETE a handshake session the server gave an id for (best effort, bounded), with the
        session's ``MCP-Protocol-Version`` as every request of the session had. A joined session
        is left alone: its owner ends it.
        """
        session = self._legacy.end()
        if session is None:
            return
        try:
            self._session.delete(
                self.url,
                headers={**self._fixed, **session},
                timeout=NOTIFY_TIMEOUT / 6,
                verify=self._verify,
                cert=self._cert,
                proxies=self._proxies,
                auth=self._auth,
            ).close()
        except requests.RequestException as exc:
            log.debug("DELETE of the session failed: %r", exc)

    def _headers(self, message: Message, listen: bool, extra: Mapping[str, str] | None) -> dict[str, str]:
        """The message's own headers (the session's are added by whichever path sends it)."""
        headers = dict(self._fixed)
        method = message.get("method")
        if self._legacy.active or method == "initialize":
            # A handshake session: its own headers, none of the 2026-07-28 ones.
            headers.update(self._legacy.headers(method))
            if extra:
                headers.update(extra)
            return headers
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        meta = params.get("_meta")
        version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
        headers["MCP-Protocol-Version"] = version if isinstance(version, str) else PROTOCOL_VERSION
        method = message.get("method")
        if isinstance(method, str):
            headers["Mcp-Method"] = encode_header_value(method)
            name = mcp_name(method, params)
            if name is not None:
                headers["Mcp-Name"] = encode_header_value(name)
        if listen:
            headers["Accept-Encoding"] = "identity"
        if extra:
            headers.update(extra)
        return headers

    def _send(
        self,
        message: Message,
        deadline: Deadline,
        *,
        listen: bool = False,
        extra: Mapping[str, str] | None = None,
        sent: Sent | None = None,
    ) -> _Response:
        """POST one message within the deadline; the response, its status checked, its body unread."""
        if self._closed:
            raise TransportError("the client is closed")
        body = dump_json(message)
        headers = self._headers(message, listen, extra)
        step = deadline.step()
        limit = urllib3.Timeout(total=step)
        plain = self._plain()
        if sent is not None and plain:
            sent.reached = True  # straight to the server: from here on it may have the request
        try:
            if plain:
                raw = self._pool.urlopen(
                    "POST",
                    self._path,
                    body=body,
                    headers={**self._plain_headers, **headers, "Content-Length": str(len(body))},
                    retries=False,
                    timeout=limit,
                    preload_content=False,
                    decode_content=False,
                    release_conn=False,
                    redirect=False,
                    assert_same_host=False,
                )
                if "set-cookie" in raw.headers:
                    self._keep_cookies(headers, body, raw)
            else:
                raw = send_through_auth(
                    self._session,
                    "POST",
                    self.url,
                    deadline,
                    auth=self._auth,
                    data=body,
                    headers=headers,
                    verify=self._verify,
                    cert=self._cert,
                    proxies=self._proxies,
                ).raw
        except (requests.RequestException, urllib3.exceptions.HTTPError, http.client.HTTPException, OSError) as exc:
            raise _failure(exc, deadline, self._where) from exc
        response = _Response(raw, self._where)
        self._legacy.learn(message.get("method"), response.status, response.headers)
        if self._legacy.expired(headers, response.status):
            response.finish()
            self._legacy.end()
            raise SessionExpired()
        try:
            _check_status(response, deadline, self.max_message)
        except BaseException:
            response.finish()
            raise
        if sent is not None:
            # Through `Session.request`, a failure may come from an auth object's own exchanges
            # (a token endpoint) as well as the server's; only an accepted request counts as
            # reached, so a cancellation never sets an authorization flow going.
            sent.reached = True
        return response

    def _keep_cookies(self, headers: dict[str, str], body: bytes, raw: Any) -> None:
        prepared = requests.PreparedRequest()
        prepared.prepare(method="POST", url=self.url, headers=headers, data=body)
        with self._cookie_lock:
            extract_cookies_to_jar(self._session.cookies, prepared, raw)  # type: ignore[no-untyped-call]

    def _answer_from_stream(self, response: _Response, awaited: Awaited, deadline: Deadline) -> Message:
        request_id: RequestId = awaited.request_id
        mark = StreamMark()
        for message in _messages(response, deadline, self.max_message, mark):
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
        if self._legacy.active and mark.last_id is not None:  # resumable: see transports/_session.py
            return resume_answer(
                self._open_get,
                self._legacy.headers("GET"),
                awaited,
                mark,
                deadline,
                lambda message: self._take_pushed(message, request_id),
            )
        raise TransportError(f"the SSE answer from {self._where} ended without a response", retryable=True)


class _Response:
    """One HTTP response whose body this transport reads itself, from the socket: decoded,
    bounded by a deadline, and its connection back in the pool only when read to its end.
    """

    def __init__(self, raw: Any, where: str) -> None:
        self.raw = raw
        self.where = where
        self.status: int = raw.status
        self.reason: str = raw.reason or ""
        self.headers: Any = raw.headers
        self.event_stream = _media_type(raw.headers.get("Content-Type", "")) == "text/event-stream"
        self._fp: Any = raw._fp  # the http.client response, read with read1 (one recv at most)
        self._sock = _socket_of(self._fp)
        self.sock = self._sock
        self._inflate = _decompressor(raw.headers.get("Content-Encoding", ""), where)
        self.ended = False  # no more reads: the body's end, or a failure (then `_broken` too)
        self._broken = False
        self._finished = False
        self._body: bytes | None = None

    def chunk(self, deadline: Deadline | None, *, keep_timeout: bool = False) -> bytes:
        """The next decoded bytes of the body, b"" at its end. Each receive gets only the time
        left (no limit without a deadline; `keep_timeout` leaves the socket's timeout to whoever
        set it). Raises `RequestTimeout`, or a retryable `TransportError` when the connection
        breaks or the body ends early.
        """
        inflate = self._inflate
        while True:
            if inflate is not None and inflate.unconsumed_tail:
                data = self._inflated(inflate.unconsumed_tail)
                if data:
                    return data
                continue
            if self.ended:
                return b""
            data = self._receive(deadline, keep_timeout)
            if not data:
                self.ended = True
                left = getattr(self._fp, "length", None)
                if left:
                    self._broken = True
                    raise TransportError(f"the response from {self.where} ended {left} bytes early", retryable=True)
                return inflate.flush() if inflate is not None else b""
            if inflate is None:
                return data
            data = self._inflated(data)
            if data:
                return data

    def _receive(self, deadline: Deadline | None, keep_timeout: bool = False) -> bytes:
        step = None if deadline is None else deadline.step()
        if self._sock is not None and not keep_timeout:
            self._sock.settimeout(step)
        try:
            data: bytes = self._fp.read1(_READ_SIZE)
        except TimeoutError as exc:
            self.ended = self._broken = True
            raise RequestTimeout(deadline.timeout if deadline is not None and deadline.timeout else 0.0) from exc
        except (http.client.HTTPException, OSError, ValueError, AttributeError) as exc:
            self.ended = self._broken = True
            raise TransportError(
                f"the connection to {self.where} broke in a response: {_describe(exc)}",
                cause=exc,
                retryable=True,
            ) from exc
        return data

    def _inflated(self, data: bytes) -> bytes:
        """Decompress at most `_INFLATE_STEP` bytes of output (the rest waits in the tail)."""
        try:
            out: bytes = self._inflate.decompress(data, _INFLATE_STEP)
        except zlib.error as exc:
            self.ended = self._broken = True
            raise malformed(f"The server sent a body from {self.where} that does not decompress") from exc
        return out

    def read_all(self, deadline: Deadline, cap: int) -> bytes:
        """The whole (decoded) body, within the deadline and at most `cap` bytes (read once)."""
        if self._body is not None:
            return self._body
        parts: list[bytes] = []
        size = 0
        while chunk := self.chunk(deadline):
            size += len(chunk)
            if size > cap:
                raise malformed(f"The server sent a body from {self.where} larger than {cap} bytes")
            parts.append(chunk)
        self._body = b"".join(parts)
        return self._body

    def drain(self, deadline: Deadline) -> None:
        """Read what is left of the body, within `deadline`, to keep the connection; give up
        quietly when it takes longer (then `finish` closes the connection).
        """
        size = 0
        try:
            while chunk := self.chunk(deadline):
                size += len(chunk)
                if size > _READ_SIZE:
                    return
        except McpError as exc:
            log.debug("not keeping a connection to %s after an SSE answer: %s", self.where, exc)

    def shutdown(self) -> None:
        """Wake a read blocked on this response's socket (from any thread)."""
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def finish(self) -> None:
        """Done with the response: its connection back in the pool when the body was read to its
        end and the server keeps it, otherwise closed. Idempotent.
        """
        if self._finished:
            return
        self._finished = True
        fp = self._fp
        # A body cut short (a timeout, a failed read) leaves the rest of the answer on the wire:
        # its connection is closed, never pooled for the next request to read that rest.
        keep = self.ended and not self._broken and not getattr(fp, "will_close", True)
        try:
            if keep:
                fp.close()  # a body read to its length is not "closed" for http.client until now
            else:
                self.raw.close()
        except Exception as exc:  # the socket may be half shut already
            log.debug("closing a response from %s: %r", self.where, exc)
        finally:
            self.raw.release_conn()


class HttpStream(Stream):
    """A listen stream: the SSE response to one ``subscriptions/listen`` POST.

    `read` blocks, with no timeout, until a message or the end: silence and keep-alive comments
    are not an end, a connection that breaks is an error. `close` (from any thread) shuts the
    socket down, which wakes a blocked reader at once.
    """

    def __init__(self, response: _Response, on_close: Any = None, *, max_message: int = MAX_EVENT) -> None:
        self._response = response
        self._decoder = SseDecoder(max_line=max_message + 64, max_event=max_message)
        self._ready: list[Message] = []
        self._ended = False
        self._closed = threading.Event()
        self._reading = False
        self._lock = threading.Lock()
        self._on_close = on_close

    def read(self) -> Message | None:
        """See `Stream.read`."""
        with self._lock:
            if self._closed.is_set() or self._reading:
                return None
            self._reading = True
        try:
            while not self._ready:
                if self._ended or self._closed.is_set():
                    return None
                try:
                    chunk = self._response.chunk(None)
                except McpError as exc:
                    self._ended = True
                    if self._closed.is_set():
                        return None
                    raise TransportError(f"the listen stream broke: {exc.message}", cause=exc) from exc
                if not chunk:
                    self._ended = True
                    return None
                try:
                    events = self._decoder.feed(chunk)
                except McpError:
                    self._ended = True
                    raise
                for event in events:
                    message = _event_message(event.event, event.data)
                    if message is not None:
                        self._ready.append(message)
            return self._ready.pop(0)
        finally:
            with self._lock:
                self._reading = False
                done = self._ended or self._closed.is_set()
            if done:
                self._response.finish()

    def close(self) -> None:
        """See `Stream.close`."""
        with self._lock:
            if self._closed.is_set():
                return
            self._closed.set()
            reading = self._reading
        self._response.shutdown()
        if not reading:
            self._response.finish()
        if self._on_close is not None:
            self._on_close(self)


class _SingleMessage(Stream):
    """A listen request answered with one JSON message (an error) instead of a stream."""

    def __init__(self, message: Message) -> None:
        self._message: Message | None = message

    def read(self) -> Message | None:
        """See `Stream.read`."""
        message, self._message = self._message, None
        return message

    def close(self) -> None:
        self._message = None


# -- responses ---------------------------------------------------------------------------------


def _check_status(response: _Response, deadline: Deadline, cap: int) -> None:
    """Raise for a status that carries no answer: auth refused, retryable, or an error without
    a JSON-RPC message.
    """
    status = response.status
    if status < 300:
        return
    try:
        body = response.read_all(deadline, cap)
    except McpError:
        body = b""
    rpc = _rpc_error(body)
    where = response.where
    title = f"HTTP {status} {response.reason}".rstrip()
    if status in (401, 403):
        challenge = response.headers.get("WWW-Authenticate")
        if isinstance(rpc, ProtocolError):
            rpc = None  # a garbled body says nothing about the refusal
        said = f": {rpc.message}" if rpc is not None else ""
        asks = f"; it asks for {challenge}" if challenge else ""
        raise McpError(
            rpc.code if rpc is not None else AUTHORIZATION_FAILED,
            f"{title} from {where}{said}{asks}",
            {"status": status, "wwwAuthenticate": challenge},
            "authorization",
            cause=("http", status),
        )
    if status in RETRY_STATUSES:
        raise TransportError(
            f"{title} from {where}{_snippet(body)}",
            data={"status": status},
            retryable=True,
            retry_after=_retry_after(response.headers.get("Retry-After")),
        )
    if rpc is not None and status >= 400:
        return  # the JSON-RPC error in the body is the answer (kept for `_json_answer`)
    if 300 <= status < 400:
        location = response.headers.get("Location", "")
        raise TransportError(
            f"{title} from {where}: redirected to {_shown(location)}, which this client does not follow",
            data={"status": status},
        )
    raise TransportError(f"{title} from {where}{_snippet(body)}", data={"status": status})


def _json_answer(response: _Response, body: bytes, request_id: object) -> Message:
    """The JSON-RPC response in a body; it must answer `request_id` (an error may say null)."""
    try:
        message = loads(body) if body else None
    except (ValueError, RecursionError):
        message = None
    if not isinstance(message, dict) or not ("result" in message or "error" in message):
        raise malformed(f"The server answered HTTP {response.status} without a JSON-RPC message", body[:200])
    answered = message.get("id")
    if answered != request_id and "error" not in message:
        # An error answers the POST it came back on whatever its id (null when the server could
        # not read the request; the official Python SDK says "server-error").
        raise malformed("The server's answer is for another request", answered)
    return message


def _rpc_error(body: bytes) -> McpError | None:
    try:
        message = loads(body) if body else None
    except (ValueError, RecursionError):
        return None
    if isinstance(message, dict) and "error" in message:
        error = McpError.from_wire(message["error"])
        return error if error.kind != "transport" else None
    return None


def _messages(response: _Response, deadline: Deadline, cap: int, mark: StreamMark | None = None) -> Iterator[Message]:
    """The JSON-RPC messages of an SSE answer, within the deadline (`mark` notes how far it got)."""
    decoder = SseDecoder(max_line=cap + 64, max_event=cap)
    while chunk := response.chunk(deadline):
        for event in decoder.feed(chunk):
            if mark is not None:
                mark.see(event)
            message = _event_message(event.event, event.data)
            if message is not None:
                yield message


def _event_message(event: str, data: str) -> Message | None:
    """The JSON-RPC message an SSE event carries; None for other event types and for events
    without data (a 2025-11-25 server's priming event: an ``id:`` and empty ``data:``).
    """
    if event != "message" or not data.strip():
        return None
    try:
        message = loads(data)
    except (ValueError, RecursionError) as exc:
        raise malformed("The server sent an SSE event that is not JSON", data[:200]) from exc
    if not isinstance(message, dict):
        raise malformed("The server sent an SSE event that is not a JSON object", data[:200])
    return message


# -- failures ----------------------------------------------------------------------------------


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """An exception and what it wraps: requests' wrapped urllib3 errors, MaxRetryError's reason,
    ProtocolError's cause, and the __cause__/__context__ chain.
    """
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        reason = getattr(current, "reason", None)
        candidates = [reason, *current.args, current.__cause__, current.__context__]
        todo.extend(c for c in candidates if isinstance(c, BaseException))


def _failure(exc: BaseException, deadline: Deadline, where: str) -> McpError:
    """A failed POST as the client sees it: a timeout, or a transport error the retry policy can
    judge (`sent=False` only when the connection could not be made).
    """
    chain = list(_chain(exc))
    if any(isinstance(e, (urllib3.exceptions.NewConnectionError, ConnectionRefusedError)) for e in chain):
        # urllib3 raises NewConnectionError for a connect that failed (ConnectTimeoutError for one
        # that timed out): the request never left this machine.
        return TransportError(f"could not connect to {where}: {_describe(exc)}", cause=exc, retryable=True, sent=False)
    if any(isinstance(e, (requests.Timeout, urllib3.exceptions.TimeoutError, socket.timeout)) for e in chain):
        return RequestTimeout(deadline.timeout or 0.0)
    if any(isinstance(e, (ssl.SSLError, requests.exceptions.SSLError, urllib3.exceptions.SSLError)) for e in chain):
        return TransportError(f"TLS failed with {where}: {_describe(exc)}", cause=exc)
    dropped = (
        ConnectionResetError,
        ConnectionAbortedError,
        BrokenPipeError,
        http.client.RemoteDisconnected,
        http.client.IncompleteRead,
        urllib3.exceptions.ProtocolError,
    )
    if any(isinstance(e, dropped) for e in chain):
        return TransportError(f"the connection to {where} dropped: {_describe(exc)}", cause=exc, retryable=True)
    return TransportError(f"HTTP request to {where} failed: {_describe(exc)}", cause=exc)


def _describe(exc: BaseException) -> str:
    """The innermost useful description of a failure (not urllib3's wrapper text)."""
    chain = list(_chain(exc))
    for e in reversed(chain):
        if isinstance(e, OSError | http.client.HTTPException):
            return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    return f"{type(exc).__name__}: {exc}"


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds from now: delta-seconds or an HTTP-date; None when absent or bad."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max((when - datetime.now(timezone.utc)).total_seconds(), 0.0)


def _snippet(body: bytes) -> str:
    text = body[:200].decode(errors="replace").strip()
    return f": {text}" if text else ""


def _shown(url: str) -> str:
    """A URL fit for messages: no credentials, no query (it may carry a key)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return urllib.parse.urlunsplit((parts.scheme, host + port, parts.path, "", ""))


_CANONICAL = {name.lower(): name for name in ("Accept-Encoding", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name")}


def _canonical(headers: dict[str, str]) -> dict[str, str]:
    """Headers with the names this transport sets per message spelled as it spells them."""
    return {_CANONICAL.get(name.lower(), name): value for name, value in headers.items()}


def _media_type(content_type: str) -> str:
    return content_type.split(";")[0].strip().lower()


def _decompressor(encoding: str, where: str) -> Any:
    """A zlib decompressor for a Content-Encoding (None for identity)."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return _Deflate()
    raise malformed(f"The server sent a body from {where} in an encoding this client cannot read: {encoding}")


class _Deflate:
    """HTTP "deflate": zlib-wrapped as the RFC says, or raw deflate as some servers send it."""

    def __init__(self) -> None:
        self._inner: Any = None
        self._first = b""

    @property
    def unconsumed_tail(self) -> bytes:
        return self._inner.unconsumed_tail if self._inner is not None else b""

    def decompress(self, data: bytes, max_length: int = 0) -> bytes:
        if self._inner is None:
            self._first += data
            if len(self._first) < 2:
                return b""
            data, self._first = self._first, b""
            wrapped = (data[0] & 0x0F) == 8 and (data[0] * 256 + data[1]) % 31 == 0
            self._inner = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        out: bytes = self._inner.decompress(data, max_length)
        return out

    def flush(self) -> bytes:
        return self._inner.flush() if self._inner is not None else b""


def _socket_of(fp: Any) -> socket.socket | None:
    """The socket under an http.client response (its buffered reader's SocketIO). Taken from the
    response, not the connection: for a ``Connection: close`` answer http.client hands the socket
    to the response and the connection forgets it.
    """
    sock = getattr(getattr(getattr(fp, "fp", None), "raw", None), "_sock", None)
    return sock if callable(getattr(sock, "settimeout", None)) else None
