"""The client: the public face of one connection to an MCP server.

A thin facade: it checks what callers pass, makes one `Deadline` per call, and hands the work to
its `Channel` (negotiation, envelope, input rounds, the dispatch of server messages), which talks
over a `Transport`. It knows nothing of tasks; the tasks helpers use ``client.channel``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Literal

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import METHOD_NOT_FOUND, McpError
from mcp_tasks._input import InputHandlers
from mcp_tasks._options import UNSET, ClientOptions, ClientSettings, check_meta, resolve_timeout
from mcp_tasks._session._agreement import Agreement
from mcp_tasks._session._channel import Channel
from mcp_tasks._session._subscription import Subscription, check_buffer_options
from mcp_tasks.transports._base import Transport

if TYPE_CHECKING:
    import os

    import requests
    from requests.auth import AuthBase
    from typing_extensions import Unpack

    from mcp_tasks._exchange import ServesMessages

__all__ = ["UNSET", "Client"]


class Client:
    """A synchronous MCP client (2026-07-28, and the 2025 revisions). Safe to share between threads.

    Build one with `Client.direct`, `Client.stdio`, `Client.http` or `Client.connect` (options:
    `ClientOptions`), and close it (or use it as a context manager). The era is negotiated on
    first use, within that call's timeout.
    """

    def __init__(self, transport: Transport, **options: Unpack[ClientOptions]) -> None:
        if not isinstance(transport, Transport):
            raise TypeError(f"transport must be a Transport, got {type(transport).__name__}")
        self._channel = Channel(transport, ClientSettings.of(options))

    @classmethod
    def _over(cls, transport: Transport, settings: ClientSettings) -> Client:
        """A client with settings already checked (the factories check them before a transport
        starts anything).
        """
        client = cls.__new__(cls)
        client._channel = Channel(transport, settings)
        return client

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def direct(
        cls, server: ServesMessages, *, principal: str | None = None, **options: Unpack[ClientOptions]
    ) -> Client:
        """A client of a server object in this process (the reference server, or any object with
        ``handle(message, exchange)``). `principal` names the caller to the server.
        """
        from mcp_tasks.transports.direct import DirectTransport

        settings = ClientSettings.of(options)  # a bad option fails before anything starts
        return cls._over(DirectTransport(server, principal=principal), settings)

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: IO[Any] | int | None = None,
        **options: Unpack[ClientOptions],
    ) -> Client:
        """A client of a server subprocess over stdio. Its stderr is logged at debug (logger
        ``mcp_tasks.server_stderr``) unless `stderr` names a file to write it to.
        """
        from mcp_tasks.transports.stdio import StdioTransport

        settings = ClientSettings.of(options)
        return cls._over(StdioTransport(command, args, env=env, cwd=cwd, stderr=stderr), settings)

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
        session_id: str | None = None,
        **options: Unpack[ClientOptions],
    ) -> Client:
        """A client of a Streamable HTTP server (see `mcp_tasks.transports.http.HttpTransport`).

        `verify`, `cert` and `proxies` left as None keep the session's own settings (and, for a
        session this client makes, requests' defaults: TLS verification on). `pool_size` None
        sizes the connection pool for the threads that share the client. `session_id` joins a
        2025-era session that another client made (``Status.session_id`` of a task it created):
        no new handshake, and the session is left open on close.
        """
        from mcp_tasks.transports.http import HttpTransport

        settings = ClientSettings.of(options)
        transport = HttpTransport(
            url,
            headers=headers,
            auth=auth,
            session=session,
            verify=verify,
            cert=cert,
            proxies=proxies,
            pool_size=pool_size,
            session_id=session_id,
        )
        return cls._over(transport, settings)

    @classmethod
    def connect(
        cls,
        target: str | tuple[str, ...] | tuple[str, str, Sequence[str]] | ServesMessages,
        *,
        headers: Mapping[str, str] | None = None,
        auth: AuthBase | tuple[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        **options: Unpack[ClientOptions],
    ) -> Client:
        """A client for `target`: ``("stdio", command, args)``, ``("http", url)``, an http(s) URL
        string, or a server object (direct). `headers` and `auth` apply to HTTP targets only,
        `env` and `cwd` to stdio targets only.
        """
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
                args: Sequence[str] = target[2] if len(target) == 3 else ()
                return cls.stdio(str(target[1]), args, env=env, cwd=cwd, **options)
            else:
                raise ValueError(f"unknown target {target!r}: use ('stdio', command, args) or ('http', url)")
        if url is not None:
            if env is not None or cwd is not None:
                raise ValueError("env and cwd apply to stdio targets only")
            return cls.http(url, headers=headers, auth=auth, **options)
        if callable(getattr(target, "handle", None)):
            if headers is not None or auth is not None or env is not None or cwd is not None:
                raise ValueError("headers, auth, env and cwd do not apply to a server object")
            return cls.direct(target, **options)  # type: ignore[arg-type]
        raise TypeError(f"cannot connect to {target!r}")

    # -- what it declares and what it agreed --------------------------------------------------

    @property
    def channel(self) -> Channel:
        """The channel under this client: the semi-public API that the tasks helpers (and other
        extensions) build on.
        """
        return self._channel

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """What the client declares on every request, including what its input handlers imply."""
        return dict(self._channel.capabilities)

    @property
    def input_handlers(self) -> InputHandlers:
        """The handlers that answer input requests."""
        return self._channel.settings.input_handlers

    @property
    def timeout(self) -> float | None:
        """The default request timeout in seconds (None: no limit)."""
        return self._channel.settings.timeout

    @property
    def transport(self) -> Transport:
        """The transport this client talks over."""
        return self._channel.transport

    @property
    def protocol_version(self) -> str:
        """The protocol revision this connection speaks (negotiated on first use, within the
        client's timeout).
        """
        return self._channel.agree(Deadline(self.timeout)).version

    @property
    def era(self) -> Literal["modern", "legacy"]:
        """``"modern"`` (2026-07-28) or ``"legacy"`` (a 2025-era handshake), negotiated on first use."""
        return self._channel.agree(Deadline(self.timeout)).era

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """The server's capabilities: from ``server/discover`` (modern) or ``initialize`` (legacy),
        sent once and then cached.
        """
        return dict(self._discovered(Deadline(self.timeout)).capabilities)

    @property
    def server_info(self) -> dict[str, Any]:
        """The server's name and version as it gave them (may be empty)."""
        return dict(self._discovered(Deadline(self.timeout)).server_info)

    def _discovered(self, deadline: Deadline) -> Agreement:
        agreed = self._channel.agree(deadline)
        if agreed.era == "modern" and agreed.discovered is None:
            return self._channel.discover(deadline)  # pinned to 2026-07-28: asked when first needed
        return agreed

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
        back instead. `timeout` (the client's when left out) bounds everything, negotiation included.
        """
        if not isinstance(method, str) or not method:
            raise ValueError(f"method must be a non-empty string, got {method!r}")
        if method == "subscriptions/listen":
            raise ValueError("use Client.listen() for subscriptions/listen")
        if params is not None and not isinstance(params, Mapping):
            raise TypeError(f"params must be a dict or None, got {type(params).__name__}")
        check_meta(meta)
        deadline = Deadline(resolve_timeout(timeout, self.timeout))
        if method == "tools/call":
            return self._channel.call_tool(params or {}, deadline, meta=meta, answer_input=answer_input)
        return self._channel.send(method, params, deadline, meta=meta, answer_input=answer_input)

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
        check_meta(meta)
        params = {"name": name, "arguments": dict(arguments or {})}
        deadline = Deadline(resolve_timeout(timeout, self.timeout))
        return self._channel.call_tool(params, deadline, meta=meta, answer_input=answer_input)

    def list_tools(
        self, *, timeout: float | None = UNSET, meta: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Every tool the server lists (all pages), without those whose ``x-mcp-header``
        annotations a client must refuse (each left out with a warning).
        """
        check_meta(meta)
        return self._channel.list_tools(Deadline(resolve_timeout(timeout, self.timeout)), meta)

    def discover(self, *, timeout: float | None = UNSET) -> dict[str, Any]:
        """Send ``server/discover`` and cache its result (see `server_capabilities`). A handshake
        (2025-era) server has no such method: there, an `McpError` says so.
        """
        deadline = Deadline(resolve_timeout(timeout, self.timeout))
        fresh = self._channel.agreed is None
        agreed = self._channel.agree(deadline)
        if agreed.legacy:
            raise McpError(
                METHOD_NOT_FOUND,
                f"The server speaks {agreed.version} (a handshake), which has no server/discover",
                kind="protocol",
            )
        if fresh and agreed.discovered is not None:
            return dict(agreed.discovered)  # the probe that found the era was this very request
        discovered = self._channel.discover(deadline).discovered
        assert discovered is not None
        return dict(discovered)

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
        check_meta(meta)
        check_buffer_options(max_buffer, overflow)
        deadline = Deadline(resolve_timeout(timeout, self.timeout))
        return self._channel.open_listen(notifications, deadline, meta, max_buffer, overflow)

    def close(self, *, end_session: bool = True) -> None:
        """Close the connection. Idempotent. ``end_session=False`` leaves a 2025-era HTTP session
        open (no DELETE), so that its tasks can still be reached with ``Client.http(url,
        session_id=...)``: some servers keep a task for the session that made it only.
        """
        self._channel.close(end_session=end_session)

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
        return f"<Client {self.transport!r}>"
