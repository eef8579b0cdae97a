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

The MCP client's HTTP transport drives `OAuth.auth_flow` (every request of the flow sent under the
call's deadline); plain `requests` users get the same through the response hook of `__call__`.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import logging
import os
import secrets
import threading
import time
import urllib.parse
from collections.abc import Callable, Generator, Mapping
from typing import Any, Literal

import requests
from requests.auth import AuthBase

from mcp_tasks._clock import Deadline, check_timeout
from mcp_tasks._errors import OAuthError
from mcp_tasks._oauth.challenge import token_challenge
from mcp_tasks._oauth.discovery import AuthServer, Resource, discover_resource, discover_server
from mcp_tasks._oauth.dpop import NONCE_ERROR, DPoP
from mcp_tasks._oauth.flights import Flights
from mcp_tasks._oauth.grants import JWT_BEARER, Assertion, assertion_now, client_assertion, exchange_for_id_jag
from mcp_tasks._oauth.http import OAuthHttp, loggable
from mcp_tasks._oauth.jose import load_private_key, require_extra
from mcp_tasks._oauth.redirect import LoopbackAuthorize, free_loopback_redirect_uri, show_link
from mcp_tasks._oauth.tokens import FileTokenStore, MemoryTokenStore, TokenStore
from mcp_tasks._redact import short_id

__all__ = ["OAuth", "cli_oauth"]

log = logging.getLogger("mcp_tasks")

Grant = Literal["authorization_code", "client_credentials", "jwt_bearer", "enterprise_managed"]
_GRANTS = ("authorization_code", "client_credentials", "jwt_bearer", "enterprise_managed")
Authorize = Callable[[str], str]

EXPIRY_MARGIN = 30.0
"""A token this close to its expiry (seconds) is refreshed before it is sent; a short-lived one
(a lifetime under 300 s) a tenth of its lifetime before, so it is still used most of its life."""

MARGIN_SHARE = 0.1

DEFAULT_STEP_UPS = 2
_AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none")


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
      it. The flow runs on the thread that makes the call; other threads that need the same
      server meanwhile wait for it, each at most until its own call's deadline.
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
        if grant not in _GRANTS:
            raise ValueError(f"grant must be one of {', '.join(map(repr, _GRANTS))}, got {grant!r}")
        _check_signed_options(
            grant, client_id, private_key, private_key_id, assertion, id_token, idp_token_endpoint, idp_client_secret
        )
        if client_secret is not None and client_id is None:
            raise ValueError("client_secret needs the client_id it belongs to")
        if client_metadata_url is not None:
            parts = urllib.parse.urlsplit(client_metadata_url)
            if parts.scheme != "https" or not parts.path.strip("/") or parts.fragment:
                raise ValueError(f"client_metadata_url must be an https URL with a path, got {client_metadata_url!r}")
        if grant != "authorization_code" and authorize is not None:
            raise ValueError("authorize is for the authorization_code grant")
        if issuer is not None:
            parts = urllib.parse.urlsplit(issuer)
            if parts.scheme not in ("https", "http") or not parts.netloc or parts.query or parts.fragment:
                raise ValueError(f"issuer must be an authorization server's https URL, got {issuer!r}")
            if client_id is None:
                raise ValueError("issuer binds a pre-registered client_id; pass the client_id")
        if store is not None and not isinstance(store, TokenStore):
            raise TypeError("store must have get(key) and set(key, tokens) methods")
        if isinstance(max_step_ups, bool) or not isinstance(max_step_ups, int) or max_step_ups < 0:
            raise ValueError(f"max_step_ups must be a non-negative int, got {max_step_ups!r}")
        self.client_id = client_id
        self._client_secret = client_secret
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.scope = scope.split() if scope else None
        self.grant: Grant = grant
        self._authorize = authorize
        self.redirect_uri = redirect_uri
        self.store: TokenStore = store if store is not None else MemoryTokenStore()
        self.timeout = check_timeout("timeout", timeout)
        self.max_step_ups = max_step_ups
        self._http = OAuthHttp(session, verify=verify)
        self.issuer = issuer
        self._bound_issuer: str | None = issuer  # the one issuer a pre-registered client is used with
        self._flights = Flights()
        self._refused: set[str] = set()  # refresh tokens the server refused (not tried again)
        if grant in ("jwt_bearer", "enterprise_managed"):
            require_extra(f"grant={grant!r}")
        self._signing_key = load_private_key(private_key, private_key_id) if private_key is not None else None
        self._dpop = DPoP() if dpop else None
        self._assertion = assertion
        self._id_token = id_token
        self.idp_token_endpoint = idp_token_endpoint
        self.idp_client_id = idp_client_id
        self._idp_client_secret = idp_client_secret
        self._state_lock = threading.Lock()
        self._records: dict[str, dict[str, Any]] = {}

    # -- requests.auth.AuthBase -----------------------------------------------------------------

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        """Attach the token for the request's server (refreshed first if it expired), and a
        response hook that runs the flow on a 401 or 403 (for plain `requests` users; the MCP
        client drives `auth_flow` instead).
        """
        self._attach(request, Deadline(self.timeout))
        hook = functools.partial(self._on_response, _Attempts())
        request.register_hook("response", hook)  # type: ignore[no-untyped-call]
        return request

    def _on_response(self, attempts: _Attempts, response: requests.Response, **kwargs: Any) -> requests.Response:
        """The response hook: on 401, or 403 ``insufficient_scope``, get a better token and re-send."""
        deadline = Deadline(_shorter(self.timeout, _timeout_of(kwargs.get("timeout"))))
        while True:
            try:
                prepared = self._after(attempts, response, deadline)
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
    ) -> Generator[requests.PreparedRequest, requests.Response, None]:
        """The requests to send for `request`, in the manner of httpx's ``Auth.auth_flow``: it
        yields `request` with the token, receives the response, and yields a re-send with a better
        token while the response is a 401 or 403 ``insufficient_scope`` that one can fix.

        Whoever drives it sends each request under the call's `deadline`; every exchange of the
        flow (a refresh, discovery, a token request) is bounded by it too, and a thread that finds
        another thread's flow running for the same server waits for it only until its own deadline.
        The MCP client's HTTP transport drives it in the calling thread.
        """
        self._attach(request, deadline)
        attempts = _Attempts()
        while True:
            response = yield request
            again = self._after(attempts, response, deadline)
            if again is None:
                return
            request = again

    # -- shared by both ---------------------------------------------------------------------------

    def _flow_deadline(self, deadline: Deadline) -> Deadline:
        return deadline.within(self.timeout)

    def _attach(self, request: requests.PreparedRequest, deadline: Deadline) -> None:
        """Put the token for the request's server on it: after the flow another thread runs for
        that server, when there is no token yet; refreshed first, when it expired.
        """
        url = str(request.url)
        key = self._key(url)
        token = self._token(key)
        if token is None:
            self._flights.join(key, self._flow_deadline(deadline))
            token = self._token(key)
        if token is not None and _expired(self._record(key)):
            token = self._renew_quietly(key, url, token, deadline)
        if token is not None:
            self._present(request, key, token)

    def _present(self, request: requests.PreparedRequest, key: str, token: str) -> None:
        """Put `token` on `request`: ``Bearer``, or ``DPoP`` with a fresh proof for a bound token."""
        record = self._record(key) or {}
        if self._dpop is not None and record.get("token_type") == "DPoP" and record.get("access_token") == token:
            request.headers["Authorization"] = f"DPoP {token}"
            request.headers["DPoP"] = self._dpop.proof(str(request.method or "POST"), str(request.url), token)
        else:
            request.headers["Authorization"] = f"Bearer {token}"
            request.headers.pop("DPoP", None)  # a re-send that had one

    def _after(
        self, attempts: _Attempts, response: requests.Response, deadline: Deadline
    ) -> requests.PreparedRequest | None:
        """The re-send a 401 or 403 calls for (with a better token), or None to keep `response`."""
        request = response.request
        url = str(request.url)
        if self._dpop is not None:
            self._dpop.learn(url, response.headers)
        if response.status_code not in (401, 403):
            return None
        _, challenge = token_challenge(response.headers.get("WWW-Authenticate")) or ("", {})
        key = self._key(url)
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
            if challenge.get("error") != "insufficient_scope" or attempts.step_ups >= self.max_step_ups:
                return None
            attempts.step_ups += 1
            mode = "step_up"
        else:
            if attempts.unauthorized >= 2:
                return None
            attempts.unauthorized += 1
            mode = "refresh" if (sent is not None and not attempts.refreshed) else "authorize"
        token = self._renew(key, url, sent, challenge, mode, self._flow_deadline(deadline))
        if mode == "refresh":
            attempts.refreshed = True
        if token is None:
            return None
        prepared = request.copy()
        self._present(prepared, key, token)
        return prepared

    # -- the flow -------------------------------------------------------------------------------

    def _renew(
        self, key: str, url: str, sent: str | None, challenge: Mapping[str, str], mode: str, deadline: Deadline
    ) -> str | None:
        """A token better than `sent`: another thread's, a refreshed one, or a new authorization.
        None when a new one would not help (the granted scopes already cover a step-up). One flow
        per key at a time; a thread that meets one running joins it within its own deadline.
        """
        return self._flights.run(key, deadline, lambda: self._renew_now(key, url, sent, challenge, mode, deadline))

    def _renew_now(
        self, key: str, url: str, sent: str | None, challenge: Mapping[str, str], mode: str, deadline: Deadline
    ) -> str | None:
        wanted = set((challenge.get("scope") or "").split())
        record = self._reload(key)  # another process may have renewed it meanwhile
        current = record.get("access_token")
        granted = set(str(record.get("scope") or record.get("requested_scope") or "").split())
        if mode == "step_up":
            if current is not None and current != sent and wanted <= granted:
                return str(current)
            if current == sent and wanted and wanted <= granted:
                log.info("oauth: %s still refuses a token that has the scopes it asks for", loggable(url))
                return None
        elif current is not None and current != sent and not (mode == "expired" and _expired(record)):
            return str(current)  # another thread (or process) got a new one meanwhile
        with self._state_lock:
            can_refresh = record.get("refresh_token") not in (None, *self._refused)
        if mode in ("refresh", "expired") and can_refresh:
            tried = record["refresh_token"]
            try:
                return self._refresh(key, record, deadline)
            except OAuthError as exc:
                log.info("oauth: refreshing the token for %s failed (%s)", loggable(url), exc)
                with self._state_lock:
                    self._refused.add(str(tried))
                again = self._reload(key)
                if again.get("refresh_token") not in (None, tried) and again.get("access_token") not in (None, sent):
                    return str(again["access_token"])  # another process rotated it: take theirs
                # Not written back: the stored tokens stay for whoever can still use them.
                record = {k: v for k, v in record.items() if k not in ("access_token", "refresh_token")}
        if mode == "expired" and self.grant == "authorization_code":
            return None  # a person is asked only when the server says so
        scopes = set(record.get("requested_scope", "").split()) | wanted if mode == "step_up" else wanted
        return self._authorize_anew(key, url, record, challenge, scopes, deadline)

    def _renew_quietly(self, key: str, url: str, token: str, deadline: Deadline) -> str | None:
        """The token to send instead of an expired one; on failure none (the 401 path takes over)."""
        try:
            return self._renew(key, url, token, {}, "expired", self._flow_deadline(deadline)) or None
        except OAuthError as exc:
            log.info("oauth: could not refresh the token for %s before sending: %s", loggable(url), exc)
            return None

    def _authorize_anew(
        self,
        key: str,
        url: str,
        record: dict[str, Any],
        challenge: Mapping[str, str],
        wanted: set[str],
        deadline: Deadline,
    ) -> str:
        resource = discover_resource(self._http, url, challenge.get("resource_metadata"), deadline)
        issuer = resource.authorization_servers[0]
        self._check_issuer(url, issuer, resource, record)
        server = discover_server(self._http, issuer, deadline, legacy=resource.legacy)
        if record.get("issuer") not in (None, issuer):
            log.info("oauth: %s moved from %s to %s", loggable(url), record.get("issuer"), issuer)
        if (
            self.grant == "authorization_code"
            and server.from_metadata
            and "S256" not in (server.code_challenge_methods or ())
        ):
            raise OAuthError(f"the authorization server {issuer} does not offer PKCE with S256; not authorizing")
        scope = self._scope_for(wanted, resource, server, record)
        client = self._client_for(record, server, deadline)
        if self.grant == "client_credentials":
            form = {"grant_type": "client_credentials", "resource": resource.resource}
        elif self.grant == "jwt_bearer":
            assert self._assertion is not None
            assertion = assertion_now(self._assertion, "assertion")
            form = {"grant_type": JWT_BEARER, "assertion": assertion, "resource": resource.resource}
        elif self.grant == "enterprise_managed":
            assert self._id_token is not None and self.idp_token_endpoint is not None
            id_jag = exchange_for_id_jag(
                self._http,
                self.idp_token_endpoint,
                assertion_now(self._id_token, "id_token"),
                audience=issuer,
                resource=resource.resource,
                client_id=self.idp_client_id,
                client_secret=self._idp_client_secret,
                deadline=deadline,
            )
            form = {"grant_type": JWT_BEARER, "assertion": id_jag, "resource": resource.resource}
        else:
            code, redirect_uri, verifier = self._authorization_code(server, client, scope, resource)
            deadline = Deadline(deadline.timeout)  # as long again: the person's time does not count
            form = {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "code_verifier": verifier,
                "resource": resource.resource,
            }
        if scope and self.grant != "authorization_code":
            form["scope"] = " ".join(scope)
        tokens = self._token_request(server, client, form, deadline)
        fresh = {
            **tokens,
            "issuer": issuer,
            "resource": resource.resource,
            "token_endpoint": server.token_endpoint,
            "requested_scope": " ".join(scope),
            "client": client,
        }
        self._save(key, fresh)
        log.info("oauth: authorized %s with %s (scope %r)", loggable(url), issuer, " ".join(scope) or None)
        return str(fresh["access_token"])

    def _check_issuer(self, url: str, issuer: str, resource: Resource, record: Mapping[str, Any]) -> None:
        """Refuse to use a pre-registered client with an issuer other than its own (binding it to
        the first one otherwise): its id and secret are that authorization server's, not any
        server's a resource happens to name.
        """
        if self.client_id is None:
            return  # a registration or a metadata document URL is made per issuer already
        who = short_id(self.client_id)
        if resource.legacy and self._client_secret is not None and self.issuer != issuer:
            raise OAuthError(
                f"{loggable(url)} publishes no protected resource metadata (a 2025-03-26 server), so its own "
                f"origin {issuer} would be the authorization server; not sending it the secret of client {who} "
                f"(pass issuer={issuer!r} if that server is meant)"
            )
        stored = record.get("issuer")
        with self._state_lock:
            if self._bound_issuer is None:
                self._bound_issuer = stored if isinstance(stored, str) else issuer
            bound = self._bound_issuer
        if bound != issuer:
            raise OAuthError(
                f"{loggable(url)} names the authorization server {issuer}, but client {who} belongs to {bound}; "
                "not sending its credentials there (use another OAuth object, with issuer=, for that server)"
            )

    def _scope_for(
        self, wanted: set[str], resource: Resource, server: AuthServer, record: Mapping[str, Any]
    ) -> list[str]:
        if self.scope is not None:
            chosen = list(self.scope)
        elif wanted:
            chosen = sorted(wanted)
        elif resource.scopes_supported:
            chosen = list(resource.scopes_supported)
        else:
            chosen = []
        for extra in sorted(wanted):
            if extra not in chosen:
                chosen.append(extra)
        if (
            chosen
            and self.grant == "authorization_code"
            and "offline_access" in (server.scopes_supported or ())
            and "offline_access" not in chosen
        ):
            chosen.append("offline_access")
        return chosen

    def _client_for(self, record: Mapping[str, Any], server: AuthServer, deadline: Deadline) -> dict[str, Any]:
        """The identity of this client at `server`: pre-registered, a metadata document URL, a stored
        registration with this same server, or a new registration.
        """
        if self.client_id is not None:
            secret = self._client_secret
            method = (
                "private_key_jwt"
                if self._signing_key is not None
                else _auth_method(server.token_auth_methods, secret is not None, None)
            )
            return {
                "client_id": self.client_id,
                "issuer": server.issuer,
                "auth_method": method,
                "redirect_uri": self.redirect_uri,
                "preregistered": True,
            }
        if self.grant == "jwt_bearer":
            # The workload's assertion is the credential; no client is named, none registered.
            return {"client_id": None, "issuer": server.issuer, "auth_method": "none", "preregistered": True}
        stored = record.get("client")
        if isinstance(stored, dict) and stored.get("issuer") == server.issuer and not stored.get("preregistered"):
            return stored
        if self.client_metadata_url is not None and server.client_id_metadata_documents:
            return {
                "client_id": self.client_metadata_url,
                "issuer": server.issuer,
                "auth_method": "none",
                "redirect_uri": self.redirect_uri,
            }
        if server.registration_endpoint is None:
            raise OAuthError(
                f"the authorization server {server.issuer} has no registration endpoint: pass client_id "
                "(and client_secret) registered with it"
                + ("" if self.client_metadata_url else ", or client_metadata_url")
            )
        return self._register(server, deadline)

    def _register(self, server: AuthServer, deadline: Deadline) -> dict[str, Any]:
        methods = server.token_auth_methods
        metadata: dict[str, Any] = {"client_name": self.client_name}
        if self.grant == "client_credentials":
            method = next(
                (m for m in ("client_secret_basic", "client_secret_post") if m in methods), "client_secret_basic"
            )
            metadata.update(grant_types=["client_credentials"], application_type="web")
        else:
            method = next((m for m in ("none", "client_secret_basic", "client_secret_post") if m in methods), "none")
            redirect_uri = self._redirect_uri(None)
            metadata.update(
                redirect_uris=[redirect_uri],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                application_type="native",
            )
        metadata["token_endpoint_auth_method"] = method
        assert server.registration_endpoint is not None
        status, answer = self._http.post(server.registration_endpoint, deadline, body=metadata)
        if status not in (200, 201) or not answer or not isinstance(answer.get("client_id"), str):
            error = answer.get("error") if answer else None
            raise OAuthError(
                f"dynamic client registration at {server.registration_endpoint} failed: HTTP {status}"
                + (f" {error}" if isinstance(error, str) else ""),
                data={"error": error} if isinstance(error, str) else None,
            )
        secret = answer.get("client_secret") if isinstance(answer.get("client_secret"), str) else None
        registered = answer.get("token_endpoint_auth_method")
        client = {
            "client_id": answer["client_id"],
            "issuer": server.issuer,
            "auth_method": _auth_method(
                methods, secret is not None, registered if isinstance(registered, str) else method
            ),
            "redirect_uri": metadata.get("redirect_uris", [None])[0],
        }
        if secret is not None:
            client["client_secret"] = secret
        log.info("oauth: registered as %s with %s", short_id(client["client_id"]), server.issuer)
        return client

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
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        state = secrets.token_urlsafe(24)
        params = {
            "response_type": "code",
            "client_id": str(client["client_id"]),
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": resource.resource,
        }
        if scope:
            params["scope"] = " ".join(scope)
        endpoint = server.authorization_endpoint
        url = endpoint + ("&" if "?" in endpoint else "?") + urllib.parse.urlencode(params)
        step = self._authorize
        if step is None:
            default = LoopbackAuthorize()
            default.redirect_uri = redirect_uri
            step = default
        redirected = step(url)
        if not isinstance(redirected, str):
            raise OAuthError("the authorize step must return the URL the browser was redirected to")
        answer = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(redirected).query, keep_blank_values=True))
        if "error" in answer:
            description = answer.get("error_description", "")[:200]
            raise OAuthError(
                f"the authorization server {server.issuer} refused: {answer['error'][:60]}"
                + (f" ({description})" if description else ""),
                data={"error": answer["error"][:60]},
            )
        if not hmac.compare_digest(answer.get("state", "").encode(), state.encode()):
            raise OAuthError(
                "the authorization response's state is not this request's (a forged or stale redirect); "
                "its code is not used"
            )
        iss = answer.get("iss")
        if iss is not None and iss != server.issuer:
            raise OAuthError(
                f"the authorization response comes from issuer {iss[:100]!r}, not {server.issuer!r}; "
                "its code is not used"
            )
        if iss is None and server.iss_parameter_supported:
            raise OAuthError(
                f"the authorization response lacks the iss that {server.issuer} promises; its code is not used"
            )
        code = answer.get("code")
        if not code:
            raise OAuthError("the authorization response carries no code")
        return code, redirect_uri, verifier

    def _refresh(self, key: str, record: dict[str, Any], deadline: Deadline) -> str:
        client = record.get("client") or {}
        endpoint = record.get("token_endpoint")
        if not isinstance(endpoint, str) or not client:
            raise OAuthError("no token endpoint recorded for the refresh token")
        form = {"grant_type": "refresh_token", "refresh_token": str(record["refresh_token"])}
        if record.get("resource"):
            form["resource"] = str(record["resource"])
        tokens = self._post_token(endpoint, client, form, deadline)
        if "refresh_token" not in tokens:
            tokens["refresh_token"] = record["refresh_token"]
        updated = {**record, **tokens}
        self._save(key, updated)
        log.info("oauth: refreshed the token for %s", loggable(str(record.get("resource"))))
        return str(updated["access_token"])

    def _token_request(
        self, server: AuthServer, client: Mapping[str, Any], form: dict[str, str], deadline: Deadline
    ) -> dict[str, Any]:
        return self._post_token(server.token_endpoint, client, form, deadline)

    def _post_token(
        self, endpoint: str, client: Mapping[str, Any], form: dict[str, str], deadline: Deadline
    ) -> dict[str, Any]:
        """POST to the token endpoint with the client's authentication; the token fields kept."""
        status, answer = self._send_token_request(endpoint, client, form, deadline)
        grant = form["grant_type"]
        token = answer.get("access_token") if answer else None
        if status != 200 or not isinstance(token, str) or not token:
            error = answer.get("error") if answer else None
            error = error[:60] if isinstance(error, str) else None
            raise OAuthError(
                f"the token endpoint {loggable(endpoint)} refused the {grant} grant: HTTP {status}"
                + (f" {error}" if error else ""),
                data={"error": error} if error else None,
            )
        assert answer is not None
        token_type = answer.get("token_type")
        kinds = ("bearer", "dpop") if self._dpop is not None else ("bearer",)
        if not isinstance(token_type, str) or token_type.lower() not in kinds:
            raise OAuthError(
                f"the token endpoint {loggable(endpoint)} issued a {str(token_type)[:20]!r} token, not a "
                + (" or ".join(kind.capitalize() if kind == "bearer" else "DPoP" for kind in kinds) + " one")
            )
        kept: dict[str, Any] = {"access_token": token, "token_type": "Bearer"}
        if token_type.lower() == "dpop" and self._dpop is not None:
            kept.update(token_type="DPoP", dpop_jkt=self._dpop.jkt)
        if isinstance(answer.get("refresh_token"), str):
            kept["refresh_token"] = answer["refresh_token"]
        expires_in = answer.get("expires_in")
        if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool) and expires_in > 0:
            kept["expires_at"] = time.time() + float(expires_in)
            kept["lifetime"] = float(expires_in)
        if isinstance(answer.get("scope"), str):
            kept["scope"] = answer["scope"]
        return kept

    def _send_token_request(
        self, endpoint: str, client: Mapping[str, Any], form: Mapping[str, str], deadline: Deadline
    ) -> tuple[int, dict[str, Any] | None]:
        """POST `form` to the token endpoint with the client's authentication (and a DPoP proof,
        sent again once with the server's nonce when it asks for one).
        """
        for attempt in (1, 2):
            sent = dict(form)
            client_id = client.get("client_id")
            secret = client.get("client_secret") if not client.get("preregistered") else self._client_secret
            method = client.get("auth_method", "none")
            auth: tuple[str, str] | None = None
            if method == "private_key_jwt" and self._signing_key is not None and client_id is not None:
                sent.update(client_assertion(self._signing_key, str(client_id), str(client["issuer"])))
            elif method == "client_secret_basic" and secret and client_id is not None:
                auth = (urllib.parse.quote(str(client_id), safe=""), urllib.parse.quote(str(secret), safe=""))
            elif method == "client_secret_post" and secret and client_id is not None:
                sent.update(client_id=str(client_id), client_secret=str(secret))
            elif client_id is not None:
                sent["client_id"] = str(client_id)
            headers = {"DPoP": self._dpop.proof("POST", endpoint)} if self._dpop is not None else None
            status, answer, answered = self._http.post_with_headers(
                endpoint, deadline, form=sent, auth=auth, headers=headers
            )
            if self._dpop is None:
                break
            fresh = self._dpop.learn(endpoint, answered)
            if not (attempt == 1 and status in (400, 401) and fresh and (answer or {}).get("error") == NONCE_ERROR):
                break
        return status, answer

    # -- records --------------------------------------------------------------------------------

    def _key(self, url: str) -> str:
        parts = urllib.parse.urlsplit(url)
        server = urllib.parse.urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, "", ""))
        who = self.client_id or self.client_metadata_url or "registered"
        return f"{server} {self.grant} {who}"

    def _record(self, key: str) -> dict[str, Any] | None:
        with self._state_lock:
            if key not in self._records:
                self._records[key] = self._usable(self.store.get(key))
            return self._records[key]

    def _token(self, key: str) -> str | None:
        token = (self._record(key) or {}).get("access_token")
        return token if isinstance(token, str) else None

    def _usable(self, stored: Any) -> dict[str, Any]:
        """A stored record as this object can use it: tokens bound to another DPoP key (an earlier
        run's) are left out, since only that key could prove possession of them.
        """
        record = stored if isinstance(stored, dict) else {}
        bound = record.get("dpop_jkt")
        if bound is not None and (self._dpop is None or bound != self._dpop.jkt):
            return {k: v for k, v in record.items() if k not in ("access_token", "refresh_token", "dpop_jkt")}
        return record

    def _reload(self, key: str) -> dict[str, Any]:
        """The record as the store has it now (kept as this object's copy)."""
        record = self._usable(self.store.get(key))
        with self._state_lock:
            self._records[key] = record
        return record

    def _save(self, key: str, record: dict[str, Any]) -> None:
        self.store.set(key, record)
        with self._state_lock:
            self._records[key] = record

    def close(self) -> None:
        """Close the HTTP session this object made for the authorization server."""
        self._http.close()

    def __repr__(self) -> str:
        who = short_id(self.client_id) if self.client_id else self.client_metadata_url or "dynamic registration"
        return f"<OAuth {self.grant} client={who} store={type(self.store).__name__}>"


def _auth_method(supported: tuple[str, ...], has_secret: bool, registered: str | None) -> str:
    if registered in _AUTH_METHODS and (registered == "none" or has_secret):
        return str(registered)
    if not has_secret:
        return "none"
    if "client_secret_basic" in supported:
        return "client_secret_basic"
    if "client_secret_post" in supported:
        return "client_secret_post"
    return "client_secret_basic"


def _expired(record: Mapping[str, Any] | None) -> bool:
    """Whether the token is expired or within its refresh margin: min(30 s, a tenth of its lifetime)."""
    at = (record or {}).get("expires_at")
    if not isinstance(at, (int, float)) or isinstance(at, bool):
        return False
    lifetime = (record or {}).get("lifetime")
    margin = EXPIRY_MARGIN
    if isinstance(lifetime, (int, float)) and not isinstance(lifetime, bool) and lifetime > 0:
        margin = min(EXPIRY_MARGIN, lifetime * MARGIN_SHARE)
    return time.time() >= at - margin


def _bearer_of(request: requests.PreparedRequest) -> str | None:
    """The token a request carried (``Bearer`` or ``DPoP``)."""
    header = request.headers.get("Authorization") or ""
    scheme, _, token = header.partition(" ")
    return token.strip() or None if scheme.lower() in ("bearer", "dpop") else None


def _check_signed_options(
    grant: str,
    client_id: str | None,
    private_key: object,
    private_key_id: str | None,
    assertion: object,
    id_token: object,
    idp_token_endpoint: str | None,
    idp_client_secret: str | None,
) -> None:
    """The options of the signed grants go together as `OAuth` documents, or a `ValueError` says which."""
    if private_key is not None and client_id is None:
        raise ValueError("private_key authenticates a pre-registered client: pass its client_id")
    if private_key_id is not None and private_key is None:
        raise ValueError("private_key_id names the key in private_key; pass the private_key")
    if (grant == "jwt_bearer") != (assertion is not None):
        raise ValueError("grant='jwt_bearer' and assertion= go together (the workload's JWT, or a function)")
    enterprise = grant == "enterprise_managed"
    if enterprise and (id_token is None or idp_token_endpoint is None or client_id is None):
        raise ValueError("grant='enterprise_managed' needs id_token, idp_token_endpoint and client_id")
    if not enterprise and (id_token is not None or idp_token_endpoint is not None or idp_client_secret is not None):
        raise ValueError("id_token, idp_token_endpoint and idp_client_secret are for grant='enterprise_managed'")
    for name, value in (("assertion", assertion), ("id_token", id_token)):
        if value is not None and not (isinstance(value, str) or callable(value)):
            raise TypeError(f"{name} must be a JWT string or a function returning one")
    if idp_token_endpoint is not None and not idp_token_endpoint.startswith(("https://", "http://")):
        raise ValueError(f"idp_token_endpoint must be an https URL, got {idp_token_endpoint!r}")


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


def cli_oauth(
    *,
    client_id: str | None = None,
    client_secret: str | None = None,
    scope: str | None = None,
    grant: Grant | None = None,
    issuer: str | None = None,
    private_key: str | None = None,
    private_key_id: str | None = None,
    dpop: bool = False,
    assertion: Assertion | None = None,
    id_token: Assertion | None = None,
    idp_token_endpoint: str | None = None,
    idp_client_id: str | None = None,
) -> OAuth:
    """The `OAuth` the command line uses: tokens kept in the user's config directory
    (`FileTokenStore.default()`), the authorization link printed on stderr and opened in a browser;
    client credentials when a secret or key is given without a person to ask.
    """
    chosen: Grant = grant or "authorization_code"
    return OAuth(
        client_id=client_id,
        client_secret=client_secret,
        scope=scope,
        grant=chosen,
        authorize=LoopbackAuthorize(show=show_link) if chosen == "authorization_code" else None,
        store=FileTokenStore.default(),
        issuer=issuer,
        private_key=private_key,
        private_key_id=private_key_id,
        dpop=dpop,
        assertion=assertion,
        id_token=id_token,
        idp_token_endpoint=idp_token_endpoint,
        idp_client_id=idp_client_id,
    )
