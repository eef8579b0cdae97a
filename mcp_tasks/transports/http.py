"""Streamable HTTP (2026-07-28): each message is one POST; the answer is a JSON body, or an SSE
stream of request-scoped notifications ending with the response.

Headers follow the spec: ``MCP-Protocol-Version``, ``Mcp-Method``, and ``Mcp-Name`` (the tool
name, the uri, or ``params.taskId`` on tasks/get, tasks/update and tasks/cancel), in the
``=?base64?…?=`` form when a value is not plain visible ASCII; ``Mcp-Param-*`` headers come from
the client for tools whose arguments are annotated ``x-mcp-header``.

Speed: what requests does per call (environment and proxy lookups, settings merges, hooks, the
pool lookup, building a `requests.Response`) is done once per client here. With a plain adapter,
no proxy, no auth and no cookies, each message goes straight to the adapter's connection pool
(urllib3, which requests brings and pins); otherwise through `adapter.send`, so proxies and
certificates from the environment, the session's headers, cookies, auth and mounted adapters all
still apply.
"""

from __future__ import annotations

import logging
import socket
import threading
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any

import requests
import urllib3
from requests.adapters import HTTPAdapter
from requests.auth import AuthBase
from requests.cookies import extract_cookies_to_jar
from requests.hooks import dispatch_hook
from requests.utils import select_proxy

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import CONNECTION_CLOSED, McpError, RequestTimeout, TransportError
from mcp_tasks._wire import (
    META_PROTOCOL_VERSION,
    PROTOCOL_VERSION,
    encode_header_value,
    loads,
    malformed,
    mcp_name,
)
from mcp_tasks._wire import dumps as dump_json
from mcp_tasks.transports._base import Message, Stream, Transport
from mcp_tasks.transports._session import (
    GetResponse,
    GetStream,
    LegacySession,
    SessionExpired,
    StreamMark,
    resume_answer,
)
from mcp_tasks.transports._sse import SseDecoder

__all__ = ["HttpStream", "HttpTransport"]

log = logging.getLogger("mcp_tasks")

DEFAULT_POOL_SIZE = 32
NOTIFY_TIMEOUT = 30.0
_READ_SIZE = 65536

Raw = urllib3.BaseHTTPResponse


class HttpTransport(Transport):
    """Talks to one Streamable HTTP endpoint over a `requests.Session`.

    A `session` you pass in is used as it is (its adapters, headers, cookies, auth, proxies) and
    never closed by this transport; otherwise one is made with a connection pool of `pool_size`
    connections, sized for the threads that share the client.
    """

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
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url must be an http(s) URL, got {url!r}")
        self._own_session = session is None
        if session is None:
            session = requests.Session()
            adapter = HTTPAdapter(pool_connections=1, pool_maxsize=pool_size or DEFAULT_POOL_SIZE)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
        self._session = session
        template = session.prepare_request(requests.Request("POST", url, headers=dict(headers or {})))
        assert template.url is not None
        self.url: str = template.url
        parts = urllib.parse.urlsplit(self.url)
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        base = {key: value for key, value in template.headers.items() if key.lower() != "cookie"}
        base["Content-Type"] = "application/json"
        base["Accept"] = "application/json, text/event-stream"
        self._base_headers = base
        self._auth: Any = _auth(auth) if auth is not None else _auth(session.auth) if session.auth else None
        settings = session.merge_environment_settings(self.url, dict(proxies or {}), True, verify, cert)
        self._verify: Any = settings["verify"]
        self._cert: Any = settings["cert"]
        self._proxies: Any = settings["proxies"]
        self._adapter = session.get_adapter(self.url)
        self._pool = self._direct_pool(template)
        self._cookie_lock = threading.Lock()
        self._streams: set[HttpStream] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._legacy = LegacySession()
        self._get_stream: GetStream | None = None

    def _direct_pool(self, template: requests.PreparedRequest) -> Any:
        """The adapter's connection pool for this URL, when messages may go straight to it."""
        adapter = self._adapter
        if type(adapter) is not HTTPAdapter or select_proxy(self.url, self._proxies):
            return None
        connect = getattr(adapter, "get_connection_with_tls_context", None)
        if connect is None:  # requests older than 2.32
            return None
        pool = connect(template, self._verify, proxies=self._proxies, cert=self._cert)
        adapter.cert_verify(pool, self.url, self._verify, self._cert)  # type: ignore[no-untyped-call]
        return pool

    # -- Transport ----------------------------------------------------------------------------

    def _request(self, message: Message, deadline: Deadline, headers: Mapping[str, str] | None) -> Message:
        """See `Transport.request`."""
        timeout = deadline.step()
        try:
            raw = self._send(message, timeout, extra=headers)
        except RequestTimeout as exc:  # it names the step's time; the caller's is the total
            raise RequestTimeout(deadline.timeout or 0.0) from exc
        try:
            if raw.status == 202:
                raise malformed(f"The server answered the request {message.get('method')} with 202 and no body")
            if _is_event_stream(raw):
                return self._answer_from_stream(raw, message["id"], deadline)
            return _json_message(raw, _read_body(raw, timeout), self.url)
        except TimeoutError as exc:
            raise RequestTimeout(deadline.timeout or 0.0) from exc
        finally:
            _finish(raw)

    def notify(self, message: Message, deadline: Deadline | None = None) -> None:
        """See `Transport.notify`. The server answers 202 with no body."""
        raw = self._send(message, NOTIFY_TIMEOUT if deadline is None else deadline.step(NOTIFY_TIMEOUT))
        try:
            if raw.status >= 400:
                raise _http_error(raw, _read_body(raw, NOTIFY_TIMEOUT), self.url)
        finally:
            _finish(raw)

    def _open_stream(self, message: Message, deadline: Deadline) -> Stream:
        """See `Transport.open_stream`: the POST's response is the stream (SSE), or one error."""
        timeout = deadline.step()
        raw = self._send(message, timeout, listen=True)
        if not _is_event_stream(raw):
            try:
                single = _json_message(raw, _read_body(raw, timeout), self.url)
            finally:
                _finish(raw)
            return _SingleMessage(single)
        stream = HttpStream(raw, self._forget)
        with self._lock:
            self._streams.add(stream)
        return stream

    def begin_session(self, protocol_version: str) -> None:
        """See `Transport.begin_session`: send the session's headers from now on, and keep its GET
        stream open for the server's own messages.
        """
        self._legacy.begin(protocol_version)
        with self._lock:
            if self._closed or self._get_stream is not None:
                return
            self._get_stream = GetStream(
                self._open_get, self._take_pushed, self._legacy.headers("GET"), str(id(self))[-6:]
            )

    def close(self) -> None:
        """Close open streams (a handshake session: its GET stream, then DELETE it), and the
        requests session unless it was passed in. Idempotent.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            streams = list(self._streams)
            get_stream, self._get_stream = self._get_stream, None
        for stream in streams:
            stream.close()
        if get_stream is not None:
            get_stream.close()
        self._end_session()
        if self._own_session:
            self._session.close()

    def __repr__(self) -> str:
        return f"<HttpTransport {self.url}>"

    # -- internals ----------------------------------------------------------------------------

    def _take_pushed(self, message: Message) -> None:
        """A message the server sent of its own accord: to the client; a request's answer back."""
        response = self.deliver(message)
        if response is None or self._closed:
            return
        try:
            self.notify(response)
        except McpError as exc:
            log.warning("could not send the answer to the server's %s request: %s", message.get("method"), exc)

    def _open_get(self, headers: dict[str, str]) -> GetResponse:
        """One GET of the session's stream (for `GetStream`)."""
        response = self._session.get(
            self.url,
            headers=headers,
            stream=True,
            timeout=(NOTIFY_TIMEOUT, None),
            verify=self._verify,
            cert=self._cert,
            proxies=self._proxies,
            auth=self._auth,
        )
        raw = response.raw
        return GetResponse(response.status_code, _chunks(raw), _socket_of(raw), response.close)

    def _end_session(self) -> None:
        """DELETE a handshake session the server gave an id for (best effort, bounded)."""
        session_id = self._legacy.end()
        if session_id is None:
            return
        try:
            self._session.delete(
                self.url,
                headers={**self._base_headers, "Mcp-Session-Id": session_id},
                timeout=NOTIFY_TIMEOUT / 6,
                verify=self._verify,
                cert=self._cert,
                proxies=self._proxies,
                auth=self._auth,
            ).close()
        except requests.RequestException as exc:
            log.debug("DELETE of the session failed: %r", exc)

    def _forget(self, stream: HttpStream) -> None:
        with self._lock:
            self._streams.discard(stream)

    def _headers(self, message: Message, listen: bool) -> dict[str, str]:
        headers = dict(self._base_headers)
        method = message.get("method")
        if self._legacy.active or method == "initialize":
            # A handshake session: its own headers, none of the 2026-07-28 ones.
            headers.update(self._legacy.headers(method))
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
        return headers

    def _send(
        self,
        message: Message,
        timeout: float | None,
        *,
        listen: bool = False,
        extra: Mapping[str, str] | None = None,
    ) -> Raw:
        """POST one message; the urllib3 response, its body not read yet."""
        if self._closed:
            raise TransportError("the client is closed")
        body = dump_json(message)
        headers = self._headers(message, listen)
        if extra:
            headers.update(extra)
        headers["Content-Length"] = str(len(body))
        raw = self._post(body, headers, timeout)
        self._legacy.learn(message.get("method"), raw.status, raw.headers)
        if self._legacy.expired(headers, raw.status):
            _finish(raw)
            self._legacy.end()
            raise SessionExpired()
        return raw

    def _post(self, body: bytes, headers: dict[str, str], timeout: float | None) -> Raw:
        limits = urllib3.Timeout(connect=timeout, read=timeout)
        try:
            if self._pool is not None and self._auth is None and not self._session.cookies:
                raw = self._pool.urlopen(
                    "POST",
                    self._path,
                    body=body,
                    headers=headers,
                    retries=self._adapter.max_retries,  # type: ignore[attr-defined]
                    timeout=limits,
                    preload_content=False,
                    decode_content=False,
                    redirect=False,
                    assert_same_host=False,
                )
                if "set-cookie" in raw.headers:
                    self._keep_cookies(self._prepared(headers, body), raw)
                return self._authorized(raw)
            prepared = self._prepared(headers, body)
            both: Any = (timeout, timeout)
            options: dict[str, Any] = {"timeout": both, "verify": self._verify, "cert": self._cert}
            response = self._adapter.send(prepared, stream=True, proxies=self._proxies, **options)
            # As Session.send does: an auth object may answer a 401 in a response hook (and re-send).
            response = dispatch_hook(  # type: ignore[no-untyped-call]
                "response", prepared.hooks, response, stream=True, proxies=self._proxies, **options
            )
            if response.cookies:
                self._keep_cookies(prepared, response.raw)
            raw_response: Raw = response.raw
            return self._authorized(raw_response)
        except McpError:
            raise  # an auth object's own error (a failed authorization, a timeout of its flow)
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise _failure(exc, timeout) from exc

    def _authorized(self, raw: Any) -> Raw:
        """`raw`, unless it is a 401 or 403 that no auth object resolved: an authorization error."""
        if raw.status not in (401, 403):
            return raw  # type: ignore[no-any-return]
        challenge = raw.headers.get("WWW-Authenticate")
        _finish(raw)
        where = f"; WWW-Authenticate: {challenge[:300]}" if challenge else ""
        raise McpError(
            CONNECTION_CLOSED,
            f"HTTP {raw.status} from {self.url}: the request was not authorized{where}",
            {"status": raw.status, "wwwAuthenticate": challenge},
            "authorization",
        )

    def _prepared(self, headers: dict[str, str], body: bytes) -> requests.PreparedRequest:
        prepared = requests.PreparedRequest()
        prepared.method = "POST"
        prepared.url = self.url
        prepared.headers = requests.structures.CaseInsensitiveDict(headers)
        prepared.body = body
        if self._session.cookies:
            with self._cookie_lock:
                prepared.prepare_cookies(self._session.cookies)
        if self._auth is not None:
            prepared.prepare_auth(self._auth)
        return prepared

    def _keep_cookies(self, prepared: requests.PreparedRequest, raw: Raw) -> None:
        with self._cookie_lock:
            extract_cookies_to_jar(self._session.cookies, prepared, raw)  # type: ignore[no-untyped-call]

    def _answer_from_stream(self, raw: Raw, request_id: object, deadline: Deadline) -> Message:
        mark = StreamMark()
        for message in _messages(raw, deadline, mark):
            if "method" in message:
                # The server's own request (answered in a POST of its own) or a notification.
                self._take_pushed(message)
                continue
            if message.get("id") == request_id:
                return message
            log.debug("ignored a response to another request on an SSE stream")
        if self._legacy.active and mark.last_id is not None:  # resumable: see transports/_session.py
            return resume_answer(
                self._open_get, self._legacy.headers("GET"), request_id, mark, deadline, self._take_pushed
            )
        raise TransportError(f"the SSE stream for {self.url} ended without a response")


class HttpStream(Stream):
    """A listen stream: the SSE response to one ``subscriptions/listen`` POST.

    Reads block; `close` shuts the socket down, which wakes a blocked reader at once. A read with
    a timeout that expires leaves the stream unusable (the caller closes it).
    """

    def __init__(self, raw: Raw, on_close: Any = None) -> None:
        self._raw = raw
        self._decoder = SseDecoder()
        self._ready: list[Message] = []
        self._ended = False
        self._closed = threading.Event()
        self._on_close = on_close
        self._sock = _socket_of(raw)

    def read(self) -> Message | None:
        """See `Stream.read`."""
        while not self._ready:
            if self._ended or self._closed.is_set():
                return None
            _set_timeout(self._sock, None)
            try:
                chunk = _read_chunk(self._raw)
            except Exception as exc:
                self._ended = True
                if self._closed.is_set():
                    return None
                if _is_timeout(exc):
                    raise TimeoutError("no message within the timeout") from exc
                raise TransportError(f"the listen stream broke: {exc!r}", cause=exc) from exc
            if not chunk:
                self._ended = True
                return None
            for event in self._decoder.feed(chunk):
                if event.event == "message":
                    self._ready.append(_parse_event(event.data))
        return self._ready.pop(0)

    def close(self) -> None:
        """See `Stream.close`."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        try:
            self._raw.close()
        except Exception as exc:  # a reader may be inside it; it is going away anyway
            log.debug("closing a listen response: %r", exc)
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


def _auth(auth: Any) -> Any:
    if isinstance(auth, tuple):
        return requests.auth.HTTPBasicAuth(*auth)
    return auth


def _is_event_stream(raw: Raw) -> bool:
    content_type: str = raw.headers.get("Content-Type", "")
    return content_type.split(";")[0].strip().lower() == "text/event-stream"


def _read_body(raw: Raw, timeout: float | None) -> bytes:
    try:
        return raw.read()
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise _failure(exc, timeout) from exc


def _finish(raw: Raw) -> None:
    """Done with a response. urllib3 gave the connection back to the pool when the body was read
    to its end; one left unread (an SSE stream cut short, an error) is dropped here.
    """
    raw.close()


def _json_message(raw: Raw, body: bytes, url: str) -> Message:
    """The JSON-RPC message in a response body; an error status without one is a transport error."""
    try:
        message = loads(body) if body else None
    except ValueError:
        message = None
    if isinstance(message, dict) and ("result" in message or "error" in message):
        return message
    if raw.status >= 400:
        raise _http_error(raw, body, url)
    raise malformed(f"{_shown(url)} answered HTTP {raw.status} without a JSON-RPC message", body[:200])


def _http_error(raw: Raw, body: bytes, url: str) -> McpError:
    text = body[:200].decode(errors="replace").strip()
    detail = f": {text}" if text else ""
    status = f"HTTP {raw.status} {raw.reason or ''}".rstrip()
    return TransportError(f"{status} from {_shown(url)}{detail}", data={"status": raw.status})


def _shown(url: str) -> str:
    """A URL for a message: without its query and credentials, which may carry secrets."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def _is_timeout(exc: BaseException) -> bool:
    reason = getattr(exc, "reason", None)
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and reason is not None:
        exc = reason
    if isinstance(exc, urllib3.exceptions.NewConnectionError):  # a ConnectTimeoutError only by ancestry
        return False
    return isinstance(exc, (TimeoutError, requests.Timeout, urllib3.exceptions.TimeoutError))


def _failure(exc: BaseException, timeout: float | None) -> McpError:
    if timeout is not None and _is_timeout(exc):
        return RequestTimeout(timeout)
    return TransportError(f"HTTP request failed: {exc}", cause=exc)


def _parse_event(data: str) -> Message:
    try:
        message = loads(data)
    except ValueError as exc:
        raise malformed("The server sent an SSE event that is not JSON", data[:200]) from exc
    if not isinstance(message, dict):
        raise malformed("The server sent an SSE event that is not a JSON object", data[:200])
    return message


def _messages(raw: Raw, deadline: Deadline, mark: StreamMark | None = None) -> Iterator[Message]:
    """The JSON-RPC messages of an SSE response, within the deadline."""
    decoder = SseDecoder()
    sock = _socket_of(raw)
    while True:
        left = deadline.remaining()
        if left is not None and left <= 0:
            raise TimeoutError("the deadline passed")
        _set_timeout(sock, left)
        try:
            chunk = _read_chunk(raw)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            if _is_timeout(exc):
                raise TimeoutError("the deadline passed") from exc
            raise TransportError(f"the SSE response broke: {exc!r}", cause=exc) from exc
        if not chunk:
            return
        for event in decoder.feed(chunk):
            if mark is not None:
                mark.see(event)
            if event.event == "message" and event.data.strip():  # not a priming event (id, no data)
                yield _parse_event(event.data)


def _chunks(raw: Any) -> Iterator[bytes]:
    """The body of a streamed answer as it arrives, to its end."""
    while True:
        chunk = _read_chunk(raw)
        if not chunk:
            return
        yield chunk


def _read_chunk(raw: Raw) -> bytes:
    """What has arrived of the body (at least one byte, or b"" at its end)."""
    read1 = getattr(raw, "read1", None)
    if read1 is not None:
        data: bytes = read1(_READ_SIZE)
        return data
    fallback: Any = raw._fp  # type: ignore[attr-defined]  # urllib3 1.x: the http.client response
    data = fallback.read1(_READ_SIZE)
    return data


def _set_timeout(sock: socket.socket | None, timeout: float | None) -> None:
    if sock is not None:
        try:
            sock.settimeout(timeout)
        except OSError:
            pass


def _socket_of(raw: Raw) -> socket.socket | None:
    connection = getattr(raw, "connection", None) or getattr(raw, "_connection", None)
    sock = getattr(connection, "sock", None)
    return sock if isinstance(sock, socket.socket) else None
