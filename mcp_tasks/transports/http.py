"""Streamable HTTP (2026-07-28): each message is one POST; the answer is a JSON body, or an SSE
stream of request-scoped notifications ending with the response.

Headers follow the spec: ``MCP-Protocol-Version``, ``Mcp-Method``, and ``Mcp-Name`` (the tool
name, the uri, or ``params.taskId`` on tasks/get, tasks/update and tasks/cancel), in the
``=?base64?…?=`` form when a value is not plain visible ASCII.

Speed: what requests does per call in `Session.request` (environment and proxy lookups, settings
merges, hooks) is done once per client here; each message is a prepared request sent straight to
the session's adapter. Proxies and certificates from the environment, the session's headers,
cookies, auth and mounted adapters all still apply.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from requests.auth import AuthBase
from requests.cookies import extract_cookies_to_jar
from requests.structures import CaseInsensitiveDict

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import McpError, RequestTimeout, TransportError
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
from mcp_tasks.transports._sse import SseDecoder

__all__ = ["HttpTransport"]

log = logging.getLogger("mcp_tasks")

DEFAULT_POOL_SIZE = 32
_READ_SIZE = 65536


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
        verify: bool | str = True,
        cert: str | tuple[str, str] | None = None,
        proxies: Mapping[str, str] | None = None,
        pool_size: int = DEFAULT_POOL_SIZE,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url must be an http(s) URL, got {url!r}")
        self._own_session = session is None
        if session is None:
            session = requests.Session()
            adapter = HTTPAdapter(pool_connections=1, pool_maxsize=pool_size)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
        self._session = session
        template = session.prepare_request(requests.Request("POST", url, headers=dict(headers or {})))
        assert template.url is not None
        self.url = template.url
        self._base_headers = CaseInsensitiveDict(template.headers)
        self._base_headers.pop("Cookie", None)
        self._base_headers["Content-Type"] = "application/json"
        self._base_headers["Accept"] = "application/json, text/event-stream"
        self._auth = _auth(auth) if auth is not None else _auth(session.auth) if session.auth else None
        settings = session.merge_environment_settings(self.url, dict(proxies or {}), True, verify, cert)
        self._verify: Any = settings["verify"]
        self._cert: Any = settings["cert"]
        self._proxies: Any = settings["proxies"]
        self._adapter = session.get_adapter(self.url)
        self._cookie_lock = threading.Lock()
        self._streams: set[HttpStream] = set()
        self._lock = threading.Lock()
        self._closed = False

    # -- Transport ----------------------------------------------------------------------------

    def request(self, message: Message, timeout: float | None, headers: Mapping[str, str] | None = None) -> Message:
        """See `Transport.request`."""
        deadline = Deadline(timeout)
        response = self._post(message, timeout, extra=headers)
        try:
            if response.status_code == 202:
                raise malformed(f"The server answered the request {message.get('method')} with 202 and no body")
            if _is_event_stream(response):
                return self._answer_from_stream(response, message["id"], deadline, timeout)
            return _json_message(response)
        except requests.RequestException as exc:
            raise _failure(exc, timeout) from exc
        except TimeoutError as exc:
            assert timeout is not None
            raise RequestTimeout(timeout) from exc
        finally:
            response.close()

    def notify(self, message: Message) -> None:
        """See `Transport.notify`. The server answers 202 with no body."""
        response = self._post(message, 30.0)
        try:
            if response.status_code >= 400:
                raise _http_error(response)
        finally:
            response.close()

    def open_stream(self, message: Message, timeout: float | None) -> Stream:
        """See `Transport.open_stream`: the POST's response is the stream (SSE), or one error."""
        response = self._post(message, timeout, listen=True)
        if not _is_event_stream(response):
            try:
                single = _json_message(response)
            finally:
                response.close()
            return _SingleMessage(single)
        stream = HttpStream(response, self._forget)
        with self._lock:
            self._streams.add(stream)
        return stream

    def close(self) -> None:
        """Close open streams, and the session unless it was passed in. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            streams = list(self._streams)
        for stream in streams:
            stream.close()
        if self._own_session:
            self._session.close()

    def __repr__(self) -> str:
        return f"<HttpTransport {self.url}>"

    # -- internals ----------------------------------------------------------------------------

    def _forget(self, stream: HttpStream) -> None:
        with self._lock:
            self._streams.discard(stream)

    def _headers(self, message: Message, listen: bool) -> CaseInsensitiveDict[str]:
        headers = self._base_headers.copy()
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

    def _post(
        self,
        message: Message,
        timeout: float | None,
        *,
        listen: bool = False,
        extra: Mapping[str, str] | None = None,
    ) -> requests.Response:
        if self._closed:
            raise TransportError("the client is closed")
        body = dump_json(message)
        prepared = requests.PreparedRequest()
        prepared.method = "POST"
        prepared.url = self.url
        prepared.headers = self._headers(message, listen)
        if extra:
            prepared.headers.update(extra)
        prepared.body = body
        prepared.headers["Content-Length"] = str(len(body))
        if self._session.cookies:
            with self._cookie_lock:
                prepared.prepare_cookies(self._session.cookies)
        if self._auth is not None:
            prepared.prepare_auth(self._auth)
        try:
            limits: Any = (timeout, timeout)
            response = self._adapter.send(
                prepared, stream=True, timeout=limits, verify=self._verify, cert=self._cert, proxies=self._proxies
            )
        except requests.RequestException as exc:
            raise _failure(exc, timeout) from exc
        if response.cookies:
            with self._cookie_lock:
                extract_cookies_to_jar(self._session.cookies, prepared, response.raw)  # type: ignore[no-untyped-call]
        return response

    def _answer_from_stream(
        self, response: requests.Response, request_id: object, deadline: Deadline, timeout: float | None
    ) -> Message:
        for message in _messages(response, deadline):
            if "method" in message:
                log.debug("request-scoped notification %s", message.get("method"))
                continue
            if message.get("id") == request_id:
                return message
            log.debug("ignored a response to another request on an SSE stream")
        raise TransportError(f"the SSE stream for {self.url} ended without a response")


class HttpStream(Stream):
    """A listen stream: the SSE response to one ``subscriptions/listen`` POST.

    Reads block; `close` shuts the socket down, which wakes a blocked reader at once. A read with
    a timeout that expires leaves the stream unusable (the caller closes it).
    """

    def __init__(self, response: requests.Response, on_close: Any = None) -> None:
        self._response = response
        self._decoder = SseDecoder()
        self._ready: list[Message] = []
        self._ended = False
        self._closed = threading.Event()
        self._on_close = on_close
        self._sock = _socket_of(response)

    def read(self, timeout: float | None) -> Message | None:
        """See `Stream.read`."""
        while not self._ready:
            if self._ended:
                return None
            if self._closed.is_set():
                return None
            self._set_timeout(timeout)
            try:
                chunk = _read_chunk(self._response)
            except TimeoutError as exc:
                self._ended = True
                raise TimeoutError("no message within the timeout") from exc
            except (requests.RequestException, OSError, ValueError) as exc:
                self._ended = True
                if self._closed.is_set():
                    return None
                raise TransportError(f"the listen stream broke: {exc}", cause=exc) from exc
            except Exception as exc:  # urllib3 errors that requests does not wrap
                self._ended = True
                if self._closed.is_set():
                    return None
                raise TransportError(f"the listen stream broke: {exc!r}", cause=exc) from exc
            if not chunk:
                self._ended = True
                return None
            for event in self._decoder.feed(chunk):
                if event.event != "message":
                    continue
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
        self._response.close()
        if self._on_close is not None:
            self._on_close(self)

    def _set_timeout(self, timeout: float | None) -> None:
        if self._sock is not None:
            try:
                self._sock.settimeout(timeout)
            except OSError:
                pass


class _SingleMessage(Stream):
    """A listen request answered with one JSON message (an error) instead of a stream."""

    def __init__(self, message: Message) -> None:
        self._message: Message | None = message

    def read(self, timeout: float | None) -> Message | None:
        message, self._message = self._message, None
        return message

    def close(self) -> None:
        self._message = None


def _auth(auth: Any) -> Any:
    if isinstance(auth, tuple):
        return requests.auth.HTTPBasicAuth(*auth)
    return auth


def _is_event_stream(response: requests.Response) -> bool:
    return response.headers.get("Content-Type", "").split(";")[0].strip().lower() == "text/event-stream"


def _json_message(response: requests.Response) -> Message:
    """The JSON-RPC message in a response body; an error status without one is a transport error."""
    body = response.content
    try:
        message = loads(body) if body else None
    except ValueError:
        message = None
    if isinstance(message, dict) and ("result" in message or "error" in message):
        return message
    if response.status_code >= 400:
        raise _http_error(response)
    raise malformed(f"The server answered HTTP {response.status_code} without a JSON-RPC message", body[:200])


def _http_error(response: requests.Response) -> McpError:
    body = response.content[:200].decode(errors="replace").strip()
    detail = f": {body}" if body else ""
    return TransportError(
        f"HTTP {response.status_code} {response.reason or ''}".rstrip() + detail,
        data={"status": response.status_code},
    )


def _failure(exc: BaseException, timeout: float | None) -> McpError:
    if isinstance(exc, requests.Timeout) and timeout is not None:
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


def _messages(response: requests.Response, deadline: Deadline) -> Iterator[Message]:
    """The JSON-RPC messages of an SSE response, within the deadline."""
    decoder = SseDecoder()
    sock = _socket_of(response)
    while True:
        left = deadline.remaining()
        if left is not None and left <= 0:
            raise TimeoutError("the deadline passed")
        if sock is not None:
            sock.settimeout(left)
        chunk = _read_chunk(response)
        if not chunk:
            return
        for event in decoder.feed(chunk):
            if event.event == "message":
                yield _parse_event(event.data)


def _read_chunk(response: requests.Response) -> bytes:
    raw = response.raw
    read1 = getattr(raw, "read1", None)
    if read1 is not None:
        data: bytes = read1(_READ_SIZE)
        return data
    fallback: Any = raw._fp
    data = fallback.read1(_READ_SIZE)
    return data


def _socket_of(response: requests.Response) -> socket.socket | None:
    connection = getattr(response.raw, "connection", None) or getattr(response.raw, "_connection", None)
    sock = getattr(connection, "sock", None)
    return sock if isinstance(sock, socket.socket) else None
