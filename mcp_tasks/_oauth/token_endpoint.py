"""The token endpoint, as a client: a token request with the client's authentication (a secret,
basic or in the form; a signed assertion, private_key_jwt; or none), a DPoP proof sent again once
with the nonce the server asks for, and the answer checked and cut to the fields the flow keeps.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Mapping
from typing import Any

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import OAuthError
from mcp_tasks._oauth.dpop import NONCE_ERROR, DPoP
from mcp_tasks._oauth.grants import client_assertion
from mcp_tasks._oauth.http import Exchanges, OAuthHttp, loggable
from mcp_tasks._oauth.jose import SigningKey

__all__ = ["AUTH_METHODS", "TokenEndpoint", "auth_method"]

AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none")


class TokenEndpoint:
    """Token requests of one `OAuth`: `dpop` its DPoP key (None: Bearer tokens only),
    `signing_key` its private_key_jwt key, `client_secret` the pre-registered client's secret.
    """

    def __init__(
        self, http: OAuthHttp, *, dpop: DPoP | None, signing_key: SigningKey | None, client_secret: str | None
    ) -> None:
        self._http = http
        self._dpop = dpop
        self._signing_key = signing_key
        self._client_secret = client_secret

    def request(
        self, endpoint: str, client: Mapping[str, Any], form: dict[str, str], deadline: Deadline
    ) -> Exchanges[dict[str, Any]]:
        """POST `form` to `endpoint` as `client`; the token fields kept (``access_token``,
        ``token_type``, ``refresh_token``, ``expires_at``, ``lifetime``, ``scope``, ``dpop_jkt``).
        """
        status, answer = yield from self._send(endpoint, client, form, deadline)
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

    def refresh(self, record: Mapping[str, Any], deadline: Deadline) -> Exchanges[dict[str, Any]]:
        """`record` with the tokens its refresh token gets (the refresh token kept when the server
        issues no new one).
        """
        client = record.get("client") or {}
        endpoint = record.get("token_endpoint")
        if not isinstance(endpoint, str) or not client:
            raise OAuthError("no token endpoint recorded for the refresh token")
        form = {"grant_type": "refresh_token", "refresh_token": str(record["refresh_token"])}
        if record.get("resource"):
            form["resource"] = str(record["resource"])
        tokens = yield from self.request(endpoint, client, form, deadline)
        if "refresh_token" not in tokens:
            tokens["refresh_token"] = record["refresh_token"]
        return {**record, **tokens}

    def _send(
        self, endpoint: str, client: Mapping[str, Any], form: Mapping[str, str], deadline: Deadline
    ) -> Exchanges[tuple[int, dict[str, Any] | None]]:
        """POST `form` with the client's authentication (and a DPoP proof, sent again once with
        the server's nonce when it asks for one).
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
            status, answer, answered = yield from self._http.post(
                endpoint, deadline, form=sent, auth=auth, headers=headers
            )
            if self._dpop is None:
                break
            fresh = self._dpop.learn(endpoint, answered)
            if not (attempt == 1 and status in (400, 401) and fresh and (answer or {}).get("error") == NONCE_ERROR):
                break
        return status, answer


def auth_method(supported: tuple[str, ...], has_secret: bool, registered: str | None) -> str:
    """How a client authenticates at the token endpoint: as registered, else the best the server
    supports for a client with (or without) a secret.
    """
    if registered in AUTH_METHODS and (registered == "none" or has_secret):
        return str(registered)
    if not has_secret:
        return "none"
    if "client_secret_basic" in supported:
        return "client_secret_basic"
    if "client_secret_post" in supported:
        return "client_secret_post"
    return "client_secret_basic"
