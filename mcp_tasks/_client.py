"""The client: requests with the 2026-07-28 envelope, the input_required loop, listen streams.

It knows nothing of tasks beyond one table of data (`EXTENSION_RESULT_TYPES`): a ``task`` result
is accepted only from a ``tools/call`` that declared the Tasks extension.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Literal

from mcp_tasks._clock import Deadline, check_timeout, pause
from mcp_tasks._era import Connection, is_handshake_refusal
from mcp_tasks._errors import (
    CONNECTION_CLOSED,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
    RequestTimeout,
    name_request,
)
from mcp_tasks._input import InputHandlers, NoHandler, answer_all, kind_of
from mcp_tasks._retry import Retry
from mcp_tasks._subscription import Subscription, check_buffer_options
from mcp_tasks._version import __version__
from mcp_tasks._wire import (
    EXTENSION_RESULT_TYPES,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    PROTOCOL_VERSION,
    declares_extension,
    decode_response,
    malformed,
    merge_meta,
    notification,
    param_header_values,
    param_headers,
    request,
)
from mcp_tasks.transports._base import Transport
from mcp_tasks.transports._session import SessionExpired

if TYPE_CHECKING:
    import os

    import requests
    from requests.auth import AuthBase

    from mcp_tasks._exchange import ServesMessages

__all__ = ["UNSET", "Client"]

log = logging.getLogger("mcp_tasks")
server_log = logging.getLogger("mcp_tasks.server")

OnNotification = Callable[[str, dict[str, Any]], object]
"""Called with (method, params) for a server notification the client does not consume itself
(``notifications/progress``, ``notifications/*/list_changed``, ...), on the transport's thread."""


class _Unset:
    """The default of an option left out: use the client's setting (None means no limit)."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()
"""Stands for an option left out (the client's default applies), where None means "no limit"."""

DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRY = Retry()
DEFAULT_MAX_INPUT_ROUNDS = 10
MAX_PAGES = 1000
STATE_ONLY_PACE = 0.25


class Client:
    """A synchronous MCP client for the 2026-07-28 protocol. Safe to share between threads.

    Build one with `Client.direct`, `Client.stdio`, `Client.http` or `Client.connect`, and close it
    (or use it as a context manager). Every request carries the ``_meta`` envelope: protocol
    version, client capabilities (yours plus what the input handlers imply) and client info.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        client_capabilities: Mapping[str, Any] | None = None,
        input_handlers: InputHandlers | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        client_info: Mapping[str, Any] | None = None,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        retries: Retry | int = DEFAULT_RETRY,
        protocol: str = "auto",
        on_notification: OnNotification | None = None,
    ) -> None:
        if not isinstance(transport, Transport):
            raise TypeError(f"transport must be a Transport, got {type(transport).__name__}")
        if client_capabilities is not None and not isinstance(client_capabilities, Mapping):
            raise TypeError("client_capabilities must be a dict or None")
        if input_handlers is not None and not isinstance(input_handlers, InputHandlers):
            raise TypeError("input_handlers must be an InputHandlers or None")
        if client_info is not None and not isinstance(client_info, Mapping):
            raise TypeError("client_info must be a dict or None")
        if isinstance(max_input_rounds, bool) or not isinstance(max_input_rounds, int) or max_input_rounds < 1:
            raise ValueError(f"max_input_rounds must be a positive int, got {max_input_rounds!r}")
        self._transport = transport
        self._handlers = input_handlers or InputHandlers()
        self._capabilities = self._handlers.capabilities(client_capabilities)
        self._timeout = check_timeout("timeout", timeout)
        self._client_info = dict(client_info) if client_info else {"name": "mcp_tasks", "version": __version__}
        self._max_input_rounds = max_input_rounds
        self._envelope = {
            META_PROTOCOL_VERSION: PROTOCOL_VERSION,
            META_CLIENT_CAPABILITIES: self._capabilities,
            META_CLIENT_INFO: self._client_info,
        }
        self._ids = itertools.count(1)
        self._ids_lock = threading.Lock()
        self._tool_headers: dict[str, dict[str, str] | None] = {}
        self._closed = False
        self._retry = Retry.of(retries)
        self._connection = Connection(protocol)
        if on_notification is not None and not callable(on_notification):
            raise TypeError("on_notification must be callable or None")
        self._on_notification = on_notification
        transport.attach(receiver=self._receive, retry=self._retry)

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def direct(
        cls,
        server: ServesMessages,
        *,
        principal: str | None = None,
        client_capabilities: Mapping[str, Any] | None = None,
        input_handlers: InputHandlers | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        client_info: Mapping[str, Any] | None = None,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        retries: Retry | int = DEFAULT_RETRY,
        protocol: str = "auto",
        on_notification: OnNotification | None = None,
    ) -> Client:
        """A client of a server object in this process (the reference server, or any object with
        ``handle(message, exchange)``). `principal` names the caller to the server.
        """
        from mcp_tasks.transports.direct import DirectTransport

        return cls(
            DirectTransport(server, principal=principal),
            client_capabilities=client_capabilities,
            input_handlers=input_handlers,
            timeout=timeout,
            client_info=client_info,
            max_input_rounds=max_input_rounds,
            retries=retries,
            protocol=protocol,
            on_notification=on_notification,
        )

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: IO[Any] | int | None = None,
        client_capabilities: Mapping[str, Any] | None = None,
        input_handlers: InputHandlers | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        client_info: Mapping[str, Any] | None = None,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        retries: Retry | int = DEFAULT_RETRY,
        protocol: str = "auto",
        on_notification: OnNotification | None = None,
    ) -> Client:
        """A client of a server subprocess over stdio. Its stderr is logged at debug (logger
        ``mcp_tasks.server_stderr``) unless `stderr` names a file to write it to.
        """
        from mcp_tasks.transports.stdio import StdioTransport

        return cls(
            StdioTransport(command, args, env=env, cwd=cwd, stderr=stderr),
            client_capabilities=client_capabilities,
            input_handlers=input_handlers,
            timeout=timeout,
            client_info=client_info,
            max_input_rounds=max_input_rounds,
            retries=retries,
            protocol=protocol,
            on_notification=on_notification,
        )

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: AuthBase | tuple[str, str] | None = None,
        session: requests.Session | None = None,
        verify: bool | str | None = None,
        cert: str | tuple[str, str] | None = None,
        proxies: Mapping[str, str] | None = None,
        pool_size: int | None = None,
        client_capabilities: Mapping[str, Any] | None = None,
        input_handlers: InputHandlers | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        client_info: Mapping[str, Any] | None = None,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        retries: Retry | int = DEFAULT_RETRY,
        protocol: str = "auto",
        on_notification: OnNotification | None = None,
    ) -> Client:
        """A client of a Streamable HTTP server (see `mcp_tasks.transports.http.HttpTransport`).

        `verify`, `cert` and `proxies` left as None keep the session's own settings (and, for a
        session this client makes, requests' defaults: TLS verification on). `pool_size` None
        sizes the connection pool for the threads that share the client.
        """
        from mcp_tasks.transports.http import HttpTransport

        transport = HttpTransport(
            url,
            headers=headers,
            auth=auth,
            session=session,
            verify=verify,
            cert=cert,
            proxies=proxies,
            pool_size=pool_size,
        )
        return cls(
            transport,
            client_capabilities=client_capabilities,
            input_handlers=input_handlers,
            timeout=timeout,
            client_info=client_info,
            max_input_rounds=max_input_rounds,
            retries=retries,
            protocol=protocol,
            on_notification=on_notification,
        )

    @classmethod
    def connect(
        cls,
        target: str | tuple[str, ...] | tuple[str, str, Sequence[str]] | ServesMessages,
        *,
        headers: Mapping[str, str] | None = None,
        auth: AuthBase | tuple[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        client_capabilities: Mapping[str, Any] | None = None,
        input_handlers: InputHandlers | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        client_info: Mapping[str, Any] | None = None,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        retries: Retry | int = DEFAULT_RETRY,
        protocol: str = "auto",
        on_notification: OnNotification | None = None,
    ) -> Client:
        """A client for `target`: ``("stdio", command, args)``, ``("http", url)``, an http(s) URL
        string, or a server object (direct). `headers` and `auth` apply to HTTP targets only,
        `env` and `cwd` to stdio targets only.
        """
        common: dict[str, Any] = {
            "client_capabilities": client_capabilities,
            "input_handlers": input_handlers,
            "timeout": timeout,
            "client_info": client_info,
            "max_input_rounds": max_input_rounds,
            "retries": retries,
            "protocol": protocol,
            "on_notification": on_notification,
        }
        url: str | None = None
        if isinstance(target, str):
            if not target.startswith(("http://", "https://")):
                raise ValueError(f"a target string must be an http(s) URL, got {target!r}")
            url = target
        elif isinstance(target, tuple) and target:
            kind = target[0]
            if kind == "http" and len(target) == 2 and isinstance(target[1], str):
                url = target[1]
            elif kind == "stdio" and len(target) in (2, 3):
                if headers is not None or auth is not None:
                    raise ValueError("headers and auth apply to HTTP targets only")
                args: Any = target[2] if len(target) == 3 else ()
                return cls.stdio(str(target[1]), args, env=env, cwd=cwd, **common)
            else:
                raise ValueError(f"unknown target {target!r}: use ('stdio', command, args) or ('http', url)")
        if url is not None:
            if env is not None or cwd is not None:
                raise ValueError("env and cwd apply to stdio targets only")
            return cls.http(url, headers=headers, auth=auth, **common)
        if callable(getattr(target, "handle", None)):
            if headers is not None or auth is not None or env is not None or cwd is not None:
                raise ValueError("headers, auth, env and cwd do not apply to a server object")
            return cls.direct(target, **common)  # type: ignore[arg-type]
        raise TypeError(f"cannot connect to {target!r}")

    # -- what it declares ---------------------------------------------------------------------

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """What the client declares on every request, including what its input handlers imply."""
        return dict(self._capabilities)

    @property
    def input_handlers(self) -> InputHandlers:
        """The handlers that answer input requests."""
        return self._handlers

    @property
    def timeout(self) -> float | None:
        """The default request timeout in seconds (None: no limit)."""
        return self._timeout

    @property
    def transport(self) -> Transport:
        """The transport this client talks over."""
        return self._transport

    # -- requests -----------------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = UNSET,
        meta: Mapping[str, Any] | None = None,
        answer_input: bool = True,
    ) -> dict[str, Any]:
        """Send a request and return its result; a JSON-RPC error is raised as `McpError`.

        `meta` is merged into ``params["_meta"]`` on top of the envelope (the caller wins). A
        result of ``resultType: "input_required"`` is answered with the input handlers and the
        request re-sent, up to ``max_input_rounds`` times; pass ``answer_input=False`` to get it
        back instead.
        """
        if not isinstance(method, str) or not method:
            raise ValueError(f"method must be a non-empty string, got {method!r}")
        if method == "subscriptions/listen":
            raise ValueError("use Client.listen() for subscriptions/listen")
        if params is not None and not isinstance(params, Mapping):
            raise TypeError(f"params must be a dict or None, got {type(params).__name__}")
        if meta is not None and not isinstance(meta, Mapping):
            raise TypeError(f"meta must be a dict or None, got {type(meta).__name__}")
        return self._call(method, params, Deadline(self._resolve_timeout(timeout)), meta, answer_input)

    def _call(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        deadline: Deadline,
        meta: Mapping[str, Any] | None,
        answer_input: bool = True,
    ) -> dict[str, Any]:
        """`request` under a deadline that the caller made (every input round shares it)."""
        self._connect(deadline)
        base = dict(params or {})
        sent = base
        rounds = 0
        while True:
            result, request_meta = self._exchange(method, sent, deadline, meta)
            result_type = result.get("resultType", "complete")
            if result_type == "complete":
                if method == "tools/list":
                    self._learn_tools(result)
                    self._connection.learn_tools(result.get("tools"))
                return result
            if result_type == "input_required":
                if not answer_input:
                    return result
                rounds += 1
                if rounds > self._max_input_rounds:
                    raise McpError(
                        CONNECTION_CLOSED,
                        f"The server asked for input more than {self._max_input_rounds} times",
                        {"maxInputRounds": self._max_input_rounds},
                        "protocol",
                        result,
                    )
                sent = self._answer_input(base, result, deadline)
                continue
            if self._extension_result(method, result_type, request_meta):
                return result
            raise malformed(f"The server sent an unknown resultType {result_type!r}", result)

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = UNSET,
        meta: Mapping[str, Any] | None = None,
        answer_input: bool = True,
    ) -> dict[str, Any]:
        """Call a tool and return its CallToolResult (a result with ``isError`` is returned)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"tool name must be a non-empty string, got {name!r}")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise TypeError(f"arguments must be a dict or None, got {type(arguments).__name__}")
        params = {"name": name, "arguments": dict(arguments or {})}
        if meta is not None and not isinstance(meta, Mapping):
            raise TypeError(f"meta must be a dict or None, got {type(meta).__name__}")
        deadline = Deadline(self._resolve_timeout(timeout))
        try:
            return self._call("tools/call", params, deadline, meta, answer_input)
        except McpError as exc:
            # An HTTP server that wants Mcp-Param headers this client could not know: learn the
            # tool's schema from tools/list and try once more, all within the one deadline.
            if exc.code != HEADER_MISMATCH or name in self._tool_headers:
                raise
            try:
                self._list_tools(deadline, None)
            except RequestTimeout:
                raise
            except McpError as learning:
                raise exc from learning  # the server's own refusal says more than the failed lookup
            if not self._tool_headers.get(name):
                raise
        return self._call("tools/call", params, deadline, meta, answer_input)

    def list_tools(
        self, *, timeout: float | None = UNSET, meta: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Every tool the server lists (all pages), without those whose ``x-mcp-header``
        annotations a client must refuse (each left out with a warning).
        """
        if meta is not None and not isinstance(meta, Mapping):
            raise TypeError(f"meta must be a dict or None, got {type(meta).__name__}")
        return self._list_tools(Deadline(self._resolve_timeout(timeout)), meta)

    def _list_tools(self, deadline: Deadline, meta: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = self._call("tools/list", {"cursor": cursor} if cursor else None, deadline, meta)
            listed = page.get("tools")
            if not isinstance(listed, list):
                raise malformed("The tools/list result has no tools list", page)
            tools.extend(t for t in listed if isinstance(t, dict) and self._acceptable(t))
            next_cursor = page.get("nextCursor")
            if not isinstance(next_cursor, str) or not next_cursor:
                return tools
            cursor = next_cursor
        raise malformed(f"tools/list went on for more than {MAX_PAGES} pages")

    def discover(self, *, timeout: float | None = UNSET) -> dict[str, Any]:
        """Send ``server/discover`` and cache its result (see `server_capabilities`). A handshake
        (2025-era) server has no such method: there, an `McpError` says so.
        """
        deadline = self._deadline(timeout)
        fresh = self._connection.era is None
        self._connect(deadline)
        discovered = self._connection.discovered
        if fresh and discovered is not None:
            return discovered  # the probe that found the era was this very request
        if self._connection.legacy:
            raise McpError(
                METHOD_NOT_FOUND,
                f"The server speaks {self._connection.version} (a handshake), which has no server/discover",
                kind="protocol",
            )
        result = self._call("server/discover", None, deadline, None)
        self._connection.modern(self._check_discovered(result))
        return result

    @property
    def protocol_version(self) -> str:
        """The protocol revision this connection speaks (negotiated on first use: this may send
        the probe, and the handshake, within the client's timeout).
        """
        self._connect(self._deadline())
        version = self._connection.version
        assert version is not None
        return version

    @property
    def era(self) -> Literal["modern", "legacy"]:
        """``"modern"`` (2026-07-28) or ``"legacy"`` (a 2025-era handshake), negotiated on first use."""
        self._connect(self._deadline())
        era = self._connection.era
        assert era is not None
        return era

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """The server's capabilities: from ``server/discover`` (modern) or ``initialize`` (legacy),
        sent once and then cached.
        """
        self._connect(self._deadline())
        if self._connection.era == "modern" and self._connection.discovered is None:
            self.discover()  # a connection pinned to 2026-07-28 asks when first needed
        return dict(self._connection.capabilities)

    @property
    def server_info(self) -> dict[str, Any]:
        """The server's name and version as it gave them (may be empty)."""
        self._connect(self._deadline())
        if self._connection.era == "modern" and self._connection.discovered is None:
            self.discover()
        return dict(self._connection.server_info)

    def listen(
        self,
        notifications: Mapping[str, Any],
        *,
        timeout: float | None = UNSET,
        meta: Mapping[str, Any] | None = None,
        max_buffer: int = 100,
        overflow: Literal["drop_oldest", "drop_newest"] = "drop_oldest",
    ) -> Subscription:
        """Open a ``subscriptions/listen`` stream with this filter; returns once the server has
        acknowledged it (bounded by `timeout`), as a `Subscription` whose `accepted` is the filter
        the server agreed to.
        """
        if not isinstance(notifications, Mapping):
            raise TypeError(f"notifications must be a dict, got {type(notifications).__name__}")
        if meta is not None and not isinstance(meta, Mapping):
            raise TypeError(f"meta must be a dict or None, got {type(meta).__name__}")
        check_buffer_options(max_buffer, overflow)
        deadline = self._deadline(timeout)
        self._connect(deadline)
        if self._connection.legacy:
            raise McpError(
                METHOD_NOT_FOUND,
                f"The server speaks {self._connection.version}, which has no subscriptions/listen "
                "(its notifications come on the session)",
                kind="protocol",
            )
        return self._listen(notifications, deadline, meta, max_buffer, overflow)

    def _listen(
        self,
        notifications: Mapping[str, Any],
        deadline: Deadline,
        meta: Mapping[str, Any] | None,
        max_buffer: int = 100,
        overflow: Literal["drop_oldest", "drop_newest"] = "drop_oldest",
    ) -> Subscription:
        """`listen` under a deadline that the caller made."""
        listen_id = self._next_id()
        params = {"notifications": dict(notifications)}
        params["_meta"] = merge_meta(self._envelope, meta)
        message = request(listen_id, "subscriptions/listen", params)
        log.debug("-> subscriptions/listen #%s", listen_id)
        stream = self._transport.open_stream(message, deadline)
        subscription = Subscription(stream, listen_id, max_buffer=max_buffer, overflow=overflow)
        try:
            subscription.wait_acknowledged(deadline)
        except BaseException:
            subscription.close()
            raise
        return subscription

    def close(self) -> None:
        """Close the connection. Idempotent."""
        self._closed = True
        self._transport.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Client {self._transport!r}>"

    # -- internals ----------------------------------------------------------------------------

    def _next_id(self) -> int:
        with self._ids_lock:
            return next(self._ids)

    def _deadline(self, timeout: float | None = UNSET) -> Deadline:
        """A deadline `timeout` seconds from now (the client's timeout when left out)."""
        return Deadline(self._resolve_timeout(timeout))

    def _resolve_timeout(self, timeout: float | None) -> float | None:
        if timeout is UNSET:
            return self._timeout
        return check_timeout("timeout", timeout)

    def _exchange(
        self,
        method: str,
        params: dict[str, Any],
        deadline: Deadline,
        meta: Mapping[str, Any] | None,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        own_meta = params.get("_meta")
        if own_meta is not None and not isinstance(own_meta, Mapping):
            raise TypeError("params['_meta'] must be a dict")
        if self._connection.legacy:
            return self._exchange_legacy(method, params, deadline, merge_meta(own_meta, meta)), {}
        request_meta = merge_meta(self._envelope, own_meta, meta)
        headers = None
        if method == "tools/call":
            annotated = self._tool_headers.get(params.get("name"))  # type: ignore[arg-type]
            headers = param_header_values(annotated, params.get("arguments")) if annotated else None
        for attempt in (1, 2):
            deadline.step()  # out of time: RequestTimeout before anything is sent
            request_id = self._next_id()
            message = request(request_id, method, {**params, "_meta": request_meta})
            log.debug("-> %s #%s", method, request_id)
            try:
                response = self._transport.request(message, deadline, headers)
                if not _answers(response, request_id):
                    raise malformed(f"The server answered {method} with another request's id", response)
                return decode_response(response), request_meta
            except McpError as exc:
                if attempt == 2 or not self._may_retry_version(exc, request_meta):
                    name_request(exc, method)
                    raise
                log.debug("the server refused protocol version %s but lists it; trying once more", PROTOCOL_VERSION)
        raise AssertionError("unreachable")

    def _exchange_legacy(
        self, method: str, params: dict[str, Any], deadline: Deadline, meta: dict[str, Any]
    ) -> dict[str, Any]:
        """One request on a handshake session: no envelope (only a `meta` of the caller's own);
        a session the server has expired is set up again once, and the request sent again.
        """
        sent = {key: value for key, value in params.items() if key != "_meta"}
        if meta:
            sent["_meta"] = meta
        for attempt in (1, 2):
            message = request(self._next_id(), method, sent)
            log.debug("-> %s #%s (%s)", method, message["id"], self._connection.version)
            try:
                return decode_response(self._transport.request(message, deadline))
            except SessionExpired:
                if attempt == 2 or method == "initialize":
                    raise
                log.info("the server expired the session; starting a new one")
                self._connection.reset()
                self._connect(deadline)
        raise AssertionError("unreachable")

    # -- the era ------------------------------------------------------------------------------

    def _connection_for(self, timeout: float | None = UNSET) -> Connection:
        """The connection, negotiated (within `timeout`) if it was not yet: what the task helpers ask."""
        self._connect(self._deadline(timeout))
        return self._connection

    def _connect(self, deadline: Deadline) -> None:
        """Negotiate the era on first use (once, whichever thread comes first)."""
        self._connection.ensure(deadline, self._negotiate)

    def _negotiate(self, deadline: Deadline) -> None:
        connection = self._connection
        if connection.protocol == PROTOCOL_VERSION:
            connection.pinned_modern()
            return
        if connection.protocol == "auto":
            try:
                result, _ = self._exchange("server/discover", {}, deadline, None)
            except McpError as exc:
                if connection.protocol != "auto" or not is_handshake_refusal(exc):
                    raise
                log.debug("server/discover refused (%s): a handshake server", exc)
            else:
                if isinstance(result.get("supportedVersions"), list) or connection.protocol != "auto":
                    connection.modern(self._check_discovered(result))
                    return
                # A server that answers any method with {} does not know server/discover.
                log.debug("server/discover answered without supportedVersions: a handshake server")
        self._handshake(deadline)

    def _handshake(self, deadline: Deadline) -> None:
        """``initialize`` then ``notifications/initialized``; the transport then keeps the session."""
        connection = self._connection
        offered = connection.offer()
        params = {"protocolVersion": offered, "capabilities": self._capabilities, "clientInfo": self._client_info}
        message = request(self._next_id(), "initialize", params)
        log.debug("-> initialize #%s offering %s", message["id"], offered)
        try:
            result = decode_response(self._transport.request(message, deadline))
        except McpError as exc:
            name_request(exc, "initialize")
            raise
        version = connection.initialized(result, offered)
        # The session's headers from here on, notifications/initialized included.
        self._transport.begin_session(version)
        try:
            self._transport.notify(notification("notifications/initialized"), deadline)
        except McpError:
            connection.reset()  # the next request starts the handshake again
            raise
        log.debug("handshake done: %s, server %s", version, connection.server_info.get("name"))

    @staticmethod
    def _check_discovered(result: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(result.get("supportedVersions"), list):
            raise malformed("The server/discover result has no supportedVersions list", result)
        return result

    @staticmethod
    def _may_retry_version(error: McpError, request_meta: Mapping[str, Any]) -> bool:
        """-32022 whose supported list holds the version this request used: worth one retry."""
        if error.code != UNSUPPORTED_PROTOCOL_VERSION or not isinstance(error.data, dict):
            return False
        supported = error.data.get("supported")
        return isinstance(supported, list) and request_meta.get(META_PROTOCOL_VERSION) in supported

    def _acceptable(self, tool: dict[str, Any]) -> bool:
        name = tool.get("name")
        return isinstance(name, str) and self._tool_headers.get(name, {}) is not None

    def _learn_tools(self, result: Mapping[str, Any]) -> None:
        """Remember which arguments of each listed tool travel in Mcp-Param headers (None marks a
        tool whose annotations are invalid).
        """
        listed = result.get("tools")
        if not isinstance(listed, list):
            return
        for tool in listed:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                continue
            try:
                self._tool_headers[tool["name"]] = param_headers(tool.get("inputSchema"))
            except ValueError as exc:
                log.warning("leaving out tool %r: %s", tool["name"], exc)
                self._tool_headers[tool["name"]] = None

    @staticmethod
    def _extension_result(method: str, result_type: object, request_meta: Mapping[str, Any]) -> bool:
        if not isinstance(result_type, str):
            return False
        entry = EXTENSION_RESULT_TYPES.get(result_type)
        if entry is None:
            return False
        extension, methods = entry
        return method in methods and declares_extension(request_meta, extension)

    def _answer_input(self, base: dict[str, Any], result: dict[str, Any], deadline: Deadline) -> dict[str, Any]:
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
        try:
            responses = answer_all(self._handlers, requests, result)
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

    def _receive(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """A message the server sent of its own accord (see `Transport.deliver`): a request is
        answered (input requests by the input handlers, with the same checks as in the modern
        era); a notification is routed.
        """
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" not in message:
            self._route_notification(str(method), params)
            return None
        if method == "ping":
            return {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        if kind_of(message) is None:
            log.warning("the server sent a request (%s) this client does not serve; refusing it", method)
            return _error_response(message, McpError(METHOD_NOT_FOUND, f"Method not found: {method}"))
        answerer = self._connection.inputs.answerer_for(message)
        if answerer is not None:
            response = answerer(message)  # a wait for the request's task answers by its input strategy
            if response is not None:
                return response
        try:
            answered = answer_all(self._handlers, {"request": message}, message)
        except NoHandler as missing:
            log.warning("no input handler for the server's %s request; refusing it", missing.kind)
            return _error_response(
                message, McpError(METHOD_NOT_FOUND, f"The client has no handler for {missing.kind} requests")
            )
        except McpError as exc:
            return _error_response(message, McpError(INVALID_PARAMS, str(exc.message)))
        except Exception:
            log.exception("the input handler for a %s request failed", method)
            return _error_response(message, McpError(INTERNAL_ERROR, "The client's input handler failed"))
        return {"jsonrpc": "2.0", "id": message["id"], "result": answered["request"]}

    def _route_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/message":
            level = _LOG_LEVELS.get(str(params.get("level")), logging.INFO)
            server_log.log(level, "%s", params.get("data"))
            return
        if method == "notifications/tasks/status":
            task_id = params.get("taskId")
            if isinstance(task_id, str) and task_id:
                if params.get("status") == "input_required":
                    self._connection.inputs.asking(task_id)
                self._connection.board.publish(task_id)
        callback = self._on_notification
        if callback is None:
            log.debug("server notification %s", method)
            return
        try:
            callback(method, params)
        except Exception:
            log.exception("the on_notification callback failed for %s", method)


_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def _error_response(message: dict[str, Any], error: McpError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message.get("id"), "error": error.to_wire()}


def _answers(response: object, request_id: int) -> bool:
    """Whether a response carries the request's id (1 and True are not the same id). An error
    is taken as this request's error whatever its id: only a result must match.
    """
    if not isinstance(response, dict):
        return True  # decode_response says what is wrong with it
    answered = response.get("id")
    if "error" in response and "result" not in response:
        # An error fails the request whatever id it carries: servers that could not read the
        # request answer with a null id, and the official Python SDK with "server-error".
        return True
    return type(answered) is int and answered == request_id
