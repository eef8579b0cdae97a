"""Who the client is at an authorization server: a pre-registered `client_id`, a Client ID
Metadata Document URL, a registration kept from before with this same server, or a new dynamic
registration (RFC 7591), with the token endpoint authentication each one uses.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import OAuthError
from mcp_tasks._oauth.discovery import AuthServer
from mcp_tasks._oauth.http import Exchanges, OAuthHttp
from mcp_tasks._oauth.options import Options
from mcp_tasks._oauth.token_endpoint import auth_method
from mcp_tasks._redact import short_id

__all__ = ["Registration"]

log = logging.getLogger("mcp_tasks")

RedirectUri = Callable[[Mapping[str, Any] | None], str]


class Registration:
    """The client identities of one `OAuth`. `redirect_uri(client)` is the redirect URI `client`
    registered (None: the one to register, picked once); `configured()` the one the `OAuth` has
    now (None until it picked one).
    """

    def __init__(
        self,
        http: OAuthHttp,
        options: Options,
        *,
        signs: bool,
        redirect_uri: RedirectUri,
        configured: Callable[[], str | None],
    ) -> None:
        self._http = http
        self._options = options
        self._signs = signs
        self._redirect_uri = redirect_uri
        self._configured = configured

    def client_for(
        self, record: Mapping[str, Any], server: AuthServer, deadline: Deadline
    ) -> Exchanges[dict[str, Any]]:
        """The identity of this client at `server`: pre-registered, a metadata document URL, a stored
        registration with this same server, or a new registration.
        """
        options = self._options
        if options.client_id is not None:
            method = (
                "private_key_jwt"
                if self._signs
                else auth_method(server.token_auth_methods, options.client_secret is not None, None)
            )
            return {
                "client_id": options.client_id,
                "issuer": server.issuer,
                "auth_method": method,
                "redirect_uri": self._configured(),
                "preregistered": True,
            }
        if options.grant == "jwt_bearer":
            # The workload's assertion is the credential; no client is named, none registered.
            return {"client_id": None, "issuer": server.issuer, "auth_method": "none", "preregistered": True}
        stored = record.get("client")
        if isinstance(stored, dict) and stored.get("issuer") == server.issuer and not stored.get("preregistered"):
            return stored
        if options.client_metadata_url is not None and server.client_id_metadata_documents:
            return {
                "client_id": options.client_metadata_url,
                "issuer": server.issuer,
                "auth_method": "none",
                "redirect_uri": self._configured(),
            }
        if server.registration_endpoint is None:
            raise OAuthError(
                f"the authorization server {server.issuer} has no registration endpoint: pass client_id "
                "(and client_secret) registered with it"
                + ("" if options.client_metadata_url else ", or client_metadata_url")
            )
        return (yield from self._register(server, deadline))

    def _register(self, server: AuthServer, deadline: Deadline) -> Exchanges[dict[str, Any]]:
        methods = server.token_auth_methods
        metadata: dict[str, Any] = {"client_name": self._options.client_name}
        if self._options.grant == "client_credentials":
            method = next(
                (m for m in ("client_secret_basic", "client_secret_post") if m in methods), "client_secret_basic"
            )
            metadata.update(grant_types=["client_credentials"], application_type="web")
        else:
            method = next((m for m in ("none", "client_secret_basic", "client_secret_post") if m in methods), "none")
            metadata.update(
                redirect_uris=[self._redirect_uri(None)],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                application_type="native",
            )
        metadata["token_endpoint_auth_method"] = method
        assert server.registration_endpoint is not None
        status, answer, _ = yield from self._http.post(server.registration_endpoint, deadline, body=metadata)
        if status not in (200, 201) or not answer or not isinstance(answer.get("client_id"), str):
            error = answer.get("error") if answer else None
            raise OAuthError(
                f"dynamic client registration at {server.registration_endpoint} failed: HTTP {status}"
                + (f" {error}" if isinstance(error, str) else ""),
                data={"error": error} if isinstance(error, str) else None,
            )
        secret = answer.get("client_secret") if isinstance(answer.get("client_secret"), str) else None
        registered = answer.get("token_endpoint_auth_method")
        registered = registered if isinstance(registered, str) else method
        client = {
            "client_id": answer["client_id"],
            "issuer": server.issuer,
            "auth_method": auth_method(
                methods, secret is not None, registered if isinstance(registered, str) else method
            ),
            "redirect_uri": metadata.get("redirect_uris", [None])[0],
        }
        if secret is not None:
            client["client_secret"] = secret
        log.info("oauth: registered as %s with %s", short_id(client["client_id"]), server.issuer)
        return client
