"""`OAuth`: a `requests` auth object that gets, attaches, refreshes and steps up OAuth 2.1 access
tokens for an MCP server, as the MCP authorization spec (2026-07-28) asks of a client.

On a 401 it finds the server's authorization server (`mcp_tasks._oauth.discovery`), identifies the
client (pre-registered, a Client ID Metadata Document, or dynamic registration), gets a token
(authorization code with PKCE through a pluggable step, or client credentials), and re-sends the
request once; every request after carries the token. An expired token is refreshed before anyone
is asked to authorize again; a 403 ``insufficient_scope`` re-authorizes with the union of the
scopes, a bounded number of times. One flow runs at a time per server and client
(`mcp_tasks._oauth.flights`): twenty threads that meet the same expired token make one token
request, and a thread that finds another's flow running waits for it only within its own deadline.

The MCP client's HTTP transport drives `OAuth.auth_flow`, which yields every request of the flow
(the re-sends to the MCP server, and discovery, registration, token, refresh and the identity
provider's token exchange, see `mcp_tasks._oauth.http`): the transport sends each one on its own
watched connections, so the call's deadline bounds every byte of the flow (the name lookups too),
whatever an authorization server trickles. Plain `requests` users get the same flow through the
response hook of `__call__`, its requests sent with the time left as each one's timeout.

The parts: `options` (what it was told), `records` (the tokens per server), `renewal` (a better
token), `registration` (the client's identity), `token_endpoint` (token requests), `code` (the
person's step of the authorization code grant).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Generator, Mapping
from typing import Any

import requests
from requests.auth import AuthBase

from mcp_tasks._clock import Deadline
from mcp_tasks._oauth.challenge import token_challenge
from mcp_tasks._oauth.code import authorization_code
from mcp_tasks._oauth.discovery import AuthServer, Resource
from mcp_tasks._oauth.dpop import NONCE_ERROR, DPoP
from mcp_tasks._oauth.grants import Assertion
from mcp_tasks._oauth.http import Exchanges, OAuthHttp, Outgoing
from mcp_tasks._oauth.jose import load_private_key, require_extra
from mcp_tasks._oauth.options import DEFAULT_STEP_UPS, Authorize, Grant, check_options
from mcp_tasks._oauth.records import Records, expired
from mcp_tasks._oauth.redirect import free_loopback_redirect_uri
from mcp_tasks._oauth.registration import Registration
from mcp_tasks._oauth.renewal import Renewal
from mcp_tasks._oauth.token_endpoint import TokenEndpoint
from mcp_tasks._oauth.tokens import MemoryTokenStore, TokenStore
from mcp_tasks._redact import short_id

__all__ = ["OAuth"]


class _Attempts:
    """What one request (and its re-sends) has tried: bounds the 401 and 403 loops."""

    __slots__ = ("nonces", "refreshed", "step_ups", "unauthorized")

    def __init__(self) -> None:
        self.unauthorized = 0
        self.nonces = 0
        self.step_ups = 0
        self.refreshed = False


class OAuth(AuthBase):
    """OAuth 2.1 for MCP servers over HTTP: ``Client.http(url, auth=OAuth(...))``, or any
    `requests` call (``requests.post(url, auth=oauth)``).

    - `client_id` / `client_secret`: a client registered with the authorization server beforehand.
      Without one, `client_metadata_url` (an https URL of a Client ID Metadata Document you host) is
      the client id where the server supports that, else the client registers itself (RFC 7591)
      as `client_name`.
    - `grant`: ``"authorization_code"`` (a person authorizes, PKCE S256),
      ``"client_credentials"`` (a backend with a client id and a secret or key),
      ``"jwt_bearer"`` (workload identity federation, SEP-1933: `assertion` is the workload's
      JWT, or a function returning a fresh one), or ``"enterprise_managed"`` (SEP-990: the
      person's `id_token` from the company's identity provider is exchanged at
      `idp_token_endpoint` (as `idp_client_id`, with `idp_client_secret` if it has one) for an
      ID-JAG, which the authorization server takes in the JWT-bearer grant from `client_id`).
    - `private_key` (a PEM string or bytes, or a file's path) and `private_key_id` (its ``kid``):
      authenticate `client_id` with a signed JWT (private_key_jwt, SEP-1046) instead of a secret.
    - `dpop`: True asks for DPoP-bound tokens (SEP-1932, RFC 9449): a key made for this object
      signs a fresh proof for every token request and every request to the server, and the
      nonces servers ask for are honoured. `private_key`, `dpop`, ``jwt_bearer`` and
      ``enterprise_managed`` need the ``mcp_tasks[jwt]`` extra (the `cryptography` package).
    - `scope`: the scopes to ask for (a space-separated string); by default those of the server's
      challenge, else those its metadata lists, else none.
    - `authorize(url) -> redirect_url`: shows the person `url` and returns the URL their browser was
      redirected to. By default the browser opens (a link in a notebook) and a listener on
      127.0.0.1 catches the redirect at `redirect_uri` (default: a free port, ``/callback``).
    - `store`: where tokens and registrations are kept (`MemoryTokenStore` by default;
      `FileTokenStore` keeps them across runs).
    - `timeout`: seconds for the exchanges with the authorization server in one flow (the person's
      time in the browser is not counted); also cut to the deadline of the MCP call that started
      it. Under ``Client.http`` every byte of every exchange is bounded by it (the client's
      transport sends them on its watched connections: a server that trickles its answer cannot
      hold the call past its timeout). The flow runs on the thread that makes the call; other
      threads that need the same server meanwhile wait for it, each at most until its own call's
      deadline.
    - `verify`: TLS verification for the authorization servers (True, False, or a CA bundle's
      path), whoever sends the requests.
    - `session`: a `requests.Session` of yours for the exchanges with the authorization servers
      (its adapters, proxies and certificates as they are). Then those exchanges go through it
      even under ``Client.http``, and the deadline bounds each read, not every byte. By default
      the client's transport sends them (and with plain `requests`, a session made for each flow).
    - `max_step_ups`: how many times one request may re-authorize for a 403 ``insufficient_scope``.
    - `issuer`: the authorization server a pre-registered `client_id` (and its secret) belongs to.
      Without it, the client is bound to the first issuer it is used with (or the one its stored
      tokens name); a server that names another issuer gets `OAuthError`, not the credentials.
      A server without protected resource metadata (2025-03-26) gets a client secret only when
      `issuer` names it.
    """

    def __init__(
        self,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        client_metadata_url: str | None = None,
        client_name: str = "mcp_tasks",
        scope: str | None = None,
        grant: Grant = "authorization_code",
        authorize: Authorize | None = None,
        redirect_uri: str | None = None,
        store: TokenStore | None = None,
        timeout: float | None = 30.0,
        session: requests.Session | None = None,
        verify: bool | str = True,
        max_step_ups: int = DEFAULT_STEP_UPS,
        issuer: str | None = None,
        private_key: str | bytes | os.PathLike[str] | None = None,
        private_key_id: str | None = None,
        dpop: bool = False,
        assertion: Assertion | None = None,
        id_token: Assertion | None = None,
        idp_token_endpoint: str | None = None,
        idp_client_id: str | None = None,
        idp_client_secret: str | None = None,
    ) -> None:
        options = check_options(
            grant=grant,
            client_id=client_id,
            client_secret=client_secret,
            client_metadata_url=client_metadata_url,
            client_name=client_name,
            scope=scope,
            authorize=authorize,
            issuer=issuer,
            timeout=timeout,
            max_step_ups=max_step_ups,
            private_key=private_key,
            private_key_id=private_key_id,
            assertion=assertion,
            id_token=id_token,
            idp_token_endpoint=idp_token_endpoint,
            idp_client_id=idp_client_id,
            idp_client_secret=idp_client_secret,
        )
        if store is not None and not isinstance(store, TokenStore):
            raise TypeError("store must have get(key) and set(key, tokens) methods")
        if grant in ("jwt_bearer", "enterprise_managed"):
            require_extra(f"grant={grant!r}")
        self._options = options
        self.client_id = client_id
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.scope = options.scope
        self.grant: Grant = options.grant
        self._authorize = authorize
        self.redirect_uri = redirect_uri
        self.store: TokenStore = store if store is not None else MemoryTokenStore()
        self.timeout = options.timeout
        self.max_step_ups = max_step_ups
        self.issuer = issuer
        self.idp_token_endpoint = idp_token_endpoint
        self.idp_client_id = idp_client_id
        self._http = OAuthHttp(session, verify=verify)
        signing_key = load_private_key(private_key, private_key_id) if private_key is not None else None
        self._dpop = DPoP() if dpop else None
        who = client_id or client_metadata_url or "registered"
        self._records = Records(self.store, grant, who, self._dpop.jkt if self._dpop is not None else None)
        registration = Registration(
            self._http,
            options,
            signs=signing_key is not None,
            redirect_uri=lambda client: self._redirect_uri(client),
            configured=lambda: self.redirect_uri,
        )
        tokens = TokenEndpoint(self._http, dpop=self._dpop, signing_key=signing_key, client_secret=client_secret)
        self._renewal = Renewal(options, self._records, self._http, tokens, registration, self._authorization_code)

    # -- requests.auth.AuthBase -----------------------------------------------------------------

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        """Attach the token for the request's server (refreshed first if it expired), and a
        response hook that runs the flow on a 401 or 403 (for plain `requests` users; the MCP
        client drives `auth_flow` instead).
        """
        self._http.run(self._attach(request, Deadline(self.timeout)))
        hook = functools.partial(self._on_response, _Attempts())
        request.register_hook("response", hook)  # type: ignore[no-untyped-call]
        return request

    def _on_response(self, attempts: _Attempts, response: requests.Response, **kwargs: Any) -> requests.Response:
        """The response hook: on 401, or 403 ``insufficient_scope``, get a better token and re-send."""
        deadline = Deadline(_shorter(self._options.timeout, _timeout_of(kwargs.get("timeout"))))
        while True:
            try:
                prepared = self._http.run(self._after(attempts, response, deadline))
            except BaseException:
                response.close()  # nobody will read it: the flow failed
                raise
            if prepared is None:
                break
            _ = response.content
            response.close()
            connection = getattr(response, "connection", None)
            if connection is None:
                break
            again: requests.Response = connection.send(prepared, **kwargs)
            again.history.append(response)
            again.request = prepared
            response = again
        return response

    # -- the transport-driven flow --------------------------------------------------------------

    def auth_flow(
        self, request: requests.PreparedRequest, deadline: Deadline
    ) -> Generator[requests.PreparedRequest | Outgoing, requests.Response, None]:
        """The requests to send for `request`, in the manner of httpx's ``Auth.auth_flow``: it
        yields `request` with the token, receives the response, and yields a re-send with a better
        token while the response is a 401 or 403 ``insufficient_scope`` that one can fix.

        It also yields the requests of the flow's own (discovery, registration, a token request, a
        refresh, the identity provider's token exchange) as ``(request, deadline, verify)``: the
        driver sends each under that deadline (the call's, cut to this object's `timeout`) and
        hands back the response with its body unread, which the flow reads before it yields
        again; a request that failed is thrown into the flow, which raises `RequestTimeout` once
        the deadline passed and `OAuthError` otherwise. The MCP client's HTTP transport drives it
        in the calling thread, each request on its watched connections, so every byte of the flow
        is under the call's deadline. A thread that finds another thread's flow running for the
        same server waits for it only until its own deadline. (With a `session` of your own the
        flow sends its requests there itself, yielding only the re-sends.)
        """
        yield from self._http.through(self._attach(request, deadline))
        attempts = _Attempts()
        while True:
            response = yield request
            again = yield from self._http.through(self._after(attempts, response, deadline))
            if again is None:
                return
            request = again

    # -- shared by both ---------------------------------------------------------------------------

    def _flow_deadline(self, deadline: Deadline) -> Deadline:
        return deadline.within(self._options.timeout)

    def _attach(self, request: requests.PreparedRequest, deadline: Deadline) -> Exchanges[None]:
        """Put the token for the request's server on it: after the flow another thread runs for
        that server, when there is no token yet; refreshed first, when it expired.
        """
        url = str(request.url)
        key = self._records.key(url)
        token = self._records.token(key)
        if token is None:
            self._renewal.flights.join(key, self._flow_deadline(deadline))
            token = self._records.token(key)
        if token is not None and expired(self._records.get(key)):
            token = yield from self._renewal.renew_quietly(key, url, token, self._flow_deadline(deadline))
        if token is not None:
            self._present(request, key, token)

    def _present(self, request: requests.PreparedRequest, key: str, token: str) -> None:
        """Put `token` on `request`: ``Bearer``, or ``DPoP`` with a fresh proof for a bound token."""
        record = self._records.get(key)
        if self._dpop is not None and record.get("token_type") == "DPoP" and record.get("access_token") == token:
            request.headers["Authorization"] = f"DPoP {token}"
            request.headers["DPoP"] = self._dpop.proof(str(request.method or "POST"), str(request.url), token)
        else:
            request.headers["Authorization"] = f"Bearer {token}"
            request.headers.pop("DPoP", None)  # a re-send that had one

    def _after(
        self, attempts: _Attempts, response: requests.Response, deadline: Deadline
    ) -> Exchanges[requests.PreparedRequest | None]:
        """The re-send a 401 or 403 calls for (with a better token), or None to keep `response`."""
        request = response.request
        url = str(request.url)
        if self._dpop is not None:
            self._dpop.learn(url, response.headers)
        if response.status_code not in (401, 403):
            return None
        _, challenge = token_challenge(response.headers.get("WWW-Authenticate")) or ("", {})
        key = self._records.key(url)
        sent = _bearer_of(request)
        if (
            self._dpop is not None
            and challenge.get("error") == NONCE_ERROR
            and sent is not None
            and attempts.nonces < 2
            and "DPoP-Nonce" in response.headers
        ):
            attempts.nonces += 1  # the same token again, with a proof that carries the server's nonce
            again = request.copy()
            self._present(again, key, sent)
            return again
        if response.status_code == 403:
            if challenge.get("error") != "insufficient_scope" or attempts.step_ups >= self._options.max_step_ups:
                return None
            attempts.step_ups += 1
            mode = "step_up"
        else:
            if attempts.unauthorized >= 2:
                return None
            attempts.unauthorized += 1
            mode = "refresh" if (sent is not None and not attempts.refreshed) else "authorize"
        token = yield from self._renewal.renew(key, url, sent, challenge, mode, self._flow_deadline(deadline))
        if mode == "refresh":
            attempts.refreshed = True
        if token is None:
            return None
        prepared = request.copy()
        self._present(prepared, key, token)
        return prepared

    # -- the authorization code grant's front channel -------------------------------------------

    def _redirect_uri(self, client: Mapping[str, Any] | None) -> str:
        if client is not None and isinstance(client.get("redirect_uri"), str):
            return str(client["redirect_uri"])
        if self.redirect_uri is None:
            self.redirect_uri = free_loopback_redirect_uri()
        return self.redirect_uri

    def _authorization_code(
        self, server: AuthServer, client: Mapping[str, Any], scope: list[str], resource: Resource
    ) -> tuple[str, str, str]:
        """Send the person to the authorization endpoint; the code, redirect URI and PKCE verifier."""
        redirect_uri = self._redirect_uri(client)
        code, verifier = authorization_code(
            self._authorize, server, str(client["client_id"]), redirect_uri, scope, resource
        )
        return code, redirect_uri, verifier

    def close(self) -> None:
        """Close the HTTP session this object made for the authorization server."""
        self._http.close()

    def __repr__(self) -> str:
        who = short_id(self.client_id) if self.client_id else self.client_metadata_url or "dynamic registration"
        return f"<OAuth {self.grant} client={who} store={type(self.store).__name__}>"


def _bearer_of(request: requests.PreparedRequest) -> str | None:
    """The token a request carried (``Bearer`` or ``DPoP``)."""
    header = request.headers.get("Authorization") or ""
    scheme, _, token = header.partition(" ")
    return token.strip() or None if scheme.lower() in ("bearer", "dpop") else None


def _timeout_of(value: Any) -> float | None:
    if isinstance(value, tuple):
        value = value[-1]
    read = getattr(value, "read_timeout", None)
    if read is not None:
        value = read
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _shorter(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None else min(a, b)
