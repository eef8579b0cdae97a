"""Getting a better token than the one a server refused (or one about to expire): another
thread's or process's new one, a refreshed one, or a new authorization (discovery, the issuer
checked against the client's, the scopes chosen, the client identified, the grant's token
request). One renewal per key at a time (`mcp_tasks._oauth.flights`).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import OAuthError
from mcp_tasks._oauth.discovery import AuthServer, Resource, discover_resource, discover_server
from mcp_tasks._oauth.flights import Flights
from mcp_tasks._oauth.grants import JWT_BEARER, assertion_now, exchange_for_id_jag
from mcp_tasks._oauth.http import Exchanges, OAuthHttp, loggable
from mcp_tasks._oauth.options import Options
from mcp_tasks._oauth.records import Records, expired
from mcp_tasks._oauth.registration import Registration
from mcp_tasks._oauth.token_endpoint import TokenEndpoint
from mcp_tasks._redact import short_id

__all__ = ["CodeStep", "Mode", "Renewal"]

log = logging.getLogger("mcp_tasks")

CodeStep = Callable[[AuthServer, Mapping[str, Any], list[str], Resource], tuple[str, str, str]]
"""The person's step of the authorization code grant: (code, redirect URI, PKCE verifier)."""

Mode = str
"""Why a token is renewed: ``"refresh"`` (a 401 to it), ``"authorize"`` (a 401 after a refresh),
``"step_up"`` (a 403 ``insufficient_scope``) or ``"expired"`` (before sending it)."""


class Renewal:
    """The renewals of one `OAuth` (see the module's docstring)."""

    def __init__(
        self,
        options: Options,
        records: Records,
        http: OAuthHttp,
        tokens: TokenEndpoint,
        registration: Registration,
        code_step: CodeStep,
    ) -> None:
        self._options = options
        self._records = records
        self._http = http
        self._tokens = tokens
        self._registration = registration
        self._code_step = code_step
        self.flights = Flights()
        self._bound_issuer: str | None = options.issuer  # the one issuer a pre-registered client is used with
        self._lock = threading.Lock()

    def renew(
        self, key: str, url: str, sent: str | None, challenge: Mapping[str, str], mode: Mode, deadline: Deadline
    ) -> Exchanges[str | None]:
        """A token better than `sent`: another thread's, a refreshed one, or a new authorization.
        None when a new one would not help (the granted scopes already cover a step-up). One flow
        per key at a time; a thread that meets one running joins it within its own deadline.
        """
        work = functools.partial(self._renew_now, key, url, sent, challenge, mode, deadline)
        return (yield from self.flights.run(key, deadline, work))

    def renew_quietly(self, key: str, url: str, token: str, deadline: Deadline) -> Exchanges[str | None]:
        """The token to send instead of an expired one; on failure none (the 401 path takes over)."""
        try:
            return (yield from self.renew(key, url, token, {}, "expired", deadline)) or None
        except OAuthError as exc:
            log.info("oauth: could not refresh the token for %s before sending: %s", loggable(url), exc)
            return None

    def _renew_now(
        self, key: str, url: str, sent: str | None, challenge: Mapping[str, str], mode: Mode, deadline: Deadline
    ) -> Exchanges[str | None]:
        wanted = set((challenge.get("scope") or "").split())
        record = self._records.reload(key)  # another process may have renewed it meanwhile
        current = record.get("access_token")
        granted = set(str(record.get("scope") or record.get("requested_scope") or "").split())
        if mode == "step_up":
            if current is not None and current != sent and wanted <= granted:
                return str(current)
            if current == sent and wanted and wanted <= granted:
                log.info("oauth: %s still refuses a token that has the scopes it asks for", loggable(url))
                return None
        elif current is not None and current != sent and not (mode == "expired" and expired(record)):
            return str(current)  # another thread (or process) got a new one meanwhile
        if mode in ("refresh", "expired") and self._records.can_refresh(record):
            tried = record["refresh_token"]
            try:
                updated = yield from self._tokens.refresh(record, deadline)
            except OAuthError as exc:
                log.info("oauth: refreshing the token for %s failed (%s)", loggable(url), exc)
                self._records.refuse(str(tried))
                again = self._records.reload(key)
                if again.get("refresh_token") not in (None, tried) and again.get("access_token") not in (None, sent):
                    return str(again["access_token"])  # another process rotated it: take theirs
                # Not written back: the stored tokens stay for whoever can still use them.
                record = {k: v for k, v in record.items() if k not in ("access_token", "refresh_token")}
            else:
                self._records.save(key, updated)
                log.info("oauth: refreshed the token for %s", loggable(str(record.get("resource"))))
                return str(updated["access_token"])
        if mode == "expired" and self._options.grant == "authorization_code":
            return None  # a person is asked only when the server says so
        scopes = set(record.get("requested_scope", "").split()) | wanted if mode == "step_up" else wanted
        return (yield from self._authorize_anew(key, url, record, challenge, scopes, deadline))

    def _authorize_anew(
        self,
        key: str,
        url: str,
        record: dict[str, Any],
        challenge: Mapping[str, str],
        wanted: set[str],
        deadline: Deadline,
    ) -> Exchanges[str]:
        grant = self._options.grant
        resource = yield from discover_resource(self._http, url, challenge.get("resource_metadata"), deadline)
        issuer = resource.authorization_servers[0]
        self._check_issuer(url, issuer, resource, record)
        server = yield from discover_server(self._http, issuer, deadline, legacy=resource.legacy)
        if record.get("issuer") not in (None, issuer):
            log.info("oauth: %s moved from %s to %s", loggable(url), record.get("issuer"), issuer)
        if (
            grant == "authorization_code"
            and server.from_metadata
            and "S256" not in (server.code_challenge_methods or ())
        ):
            raise OAuthError(f"the authorization server {issuer} does not offer PKCE with S256; not authorizing")
        scope = self._scope_for(wanted, resource, server)
        client = yield from self._registration.client_for(record, server, deadline)
        if grant == "authorization_code":
            code, redirect_uri, verifier = self._code_step(server, client, scope, resource)
            deadline = Deadline(deadline.timeout)  # as long again: the person's time does not count
            form = {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "code_verifier": verifier,
                "resource": resource.resource,
            }
        else:
            form = yield from self._grant_form(issuer, resource, deadline)
            if scope:
                form["scope"] = " ".join(scope)
        tokens = yield from self._tokens.request(server.token_endpoint, client, form, deadline)
        fresh = {
            **tokens,
            "issuer": issuer,
            "resource": resource.resource,
            "token_endpoint": server.token_endpoint,
            "requested_scope": " ".join(scope),
            "client": client,
        }
        self._records.save(key, fresh)
        log.info("oauth: authorized %s with %s (scope %r)", loggable(url), issuer, " ".join(scope) or None)
        return str(fresh["access_token"])

    def _grant_form(self, issuer: str, resource: Resource, deadline: Deadline) -> Exchanges[dict[str, str]]:
        """The token request's form of a grant without a person (the signed ones get their JWT now)."""
        options = self._options
        if options.grant == "client_credentials":
            return {"grant_type": "client_credentials", "resource": resource.resource}
        if options.grant == "jwt_bearer":
            assert options.assertion is not None
            assertion = assertion_now(options.assertion, "assertion")
            return {"grant_type": JWT_BEARER, "assertion": assertion, "resource": resource.resource}
        assert options.id_token is not None and options.idp_token_endpoint is not None
        id_jag = yield from exchange_for_id_jag(
            self._http,
            options.idp_token_endpoint,
            assertion_now(options.id_token, "id_token"),
            audience=issuer,
            resource=resource.resource,
            client_id=options.idp_client_id,
            client_secret=options.idp_client_secret,
            deadline=deadline,
        )
        return {"grant_type": JWT_BEARER, "assertion": id_jag, "resource": resource.resource}

    def _check_issuer(self, url: str, issuer: str, resource: Resource, record: Mapping[str, Any]) -> None:
        """Refuse to use a pre-registered client with an issuer other than its own (binding it to
        the first one otherwise): its id and secret are that authorization server's, not any
        server's a resource happens to name.
        """
        options = self._options
        if options.client_id is None:
            return  # a registration or a metadata document URL is made per issuer already
        who = short_id(options.client_id)
        if resource.legacy and options.client_secret is not None and options.issuer != issuer:
            raise OAuthError(
                f"{loggable(url)} publishes no protected resource metadata (a 2025-03-26 server), so its own "
                f"origin {issuer} would be the authorization server; not sending it the secret of client {who} "
                f"(pass issuer={issuer!r} if that server is meant)"
            )
        stored = record.get("issuer")
        with self._lock:
            if self._bound_issuer is None:
                self._bound_issuer = stored if isinstance(stored, str) else issuer
            bound = self._bound_issuer
        if bound != issuer:
            raise OAuthError(
                f"{loggable(url)} names the authorization server {issuer}, but client {who} belongs to {bound}; "
                "not sending its credentials there (use another OAuth object, with issuer=, for that server)"
            )

    def _scope_for(self, wanted: set[str], resource: Resource, server: AuthServer) -> list[str]:
        if self._options.scope is not None:
            chosen = list(self._options.scope)
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
            and self._options.grant == "authorization_code"
            and "offline_access" in (server.scopes_supported or ())
            and "offline_access" not in chosen
        ):
            chosen.append("offline_access")
        return chosen
