"""The pieces of the signed-JWT grants that are not the flow itself.

- private_key_jwt client authentication (RFC 7523 §2.2, MCP SEP-1046): a short-lived assertion
  signed with the client's key, in place of a client secret;
- the identity provider's leg of enterprise-managed authorization (MCP SEP-990): the person's ID
  token exchanged (RFC 8693) for an Identity Assertion JWT Authorization Grant (ID-JAG), which the
  authorization server then takes in the JWT-bearer grant (RFC 7523 §2.1), as workload identity
  federation (SEP-1933) takes a workload's JWT.
"""

from __future__ import annotations

import secrets
import time
import urllib.parse
from collections.abc import Callable

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import OAuthError
from mcp_tasks._oauth.http import Exchanges, OAuthHttp, loggable
from mcp_tasks._oauth.jose import SigningKey

__all__ = [
    "CLIENT_ASSERTION_TYPE",
    "JWT_BEARER",
    "Assertion",
    "assertion_now",
    "client_assertion",
    "exchange_for_id_jag",
]

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
ASSERTION_LIFETIME = 60

Assertion = str | Callable[[], str]


def client_assertion(key: SigningKey, client_id: str, audience: str) -> dict[str, str]:
    """The form fields that authenticate `client_id` with its key at the authorization server
    `audience` (its issuer identifier): a fresh assertion for every token request.
    """
    now = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME,
        "jti": secrets.token_urlsafe(16),
    }
    return {
        "client_assertion_type": CLIENT_ASSERTION_TYPE,
        "client_assertion": key.sign({"typ": "JWT"}, claims),
        "client_id": client_id,
    }


def assertion_now(assertion: Assertion, what: str) -> str:
    """The JWT `assertion` is, or the one its function returns now (checked to look like one)."""
    value = assertion() if callable(assertion) else assertion
    if not isinstance(value, str) or value.count(".") != 2 or not value.strip():
        raise OAuthError(f"{what} must be a JWT (three dot-separated parts)")
    return value.strip()


def exchange_for_id_jag(
    http: OAuthHttp,
    endpoint: str,
    id_token: str,
    *,
    audience: str,
    resource: str,
    client_id: str | None,
    client_secret: str | None,
    deadline: Deadline,
) -> Exchanges[str]:
    """Exchange the person's ID token at the identity provider's token endpoint for an ID-JAG for
    the authorization server `audience` and the MCP server `resource`.
    """
    form = {
        "grant_type": TOKEN_EXCHANGE,
        "requested_token_type": ID_JAG_TYPE,
        "subject_token": id_token,
        "subject_token_type": ID_TOKEN_TYPE,
        "audience": audience,
        "resource": resource,
    }
    auth: tuple[str, str] | None = None
    if client_id is not None and client_secret is not None:
        auth = (urllib.parse.quote(client_id, safe=""), urllib.parse.quote(client_secret, safe=""))
    elif client_id is not None:
        form["client_id"] = client_id
    status, answer, _ = yield from http.post(endpoint, deadline, form=form, auth=auth)
    grant = answer.get("access_token") if answer else None
    if status != 200 or not isinstance(grant, str) or not grant:
        error = answer.get("error") if answer else None
        error = error[:60] if isinstance(error, str) else None
        raise OAuthError(
            f"the identity provider {loggable(endpoint)} refused the token exchange: HTTP {status}"
            + (f" {error}" if error else ""),
            data={"error": error} if error else None,
        )
    assert answer is not None
    issued = answer.get("issued_token_type")
    if issued is not None and issued != ID_JAG_TYPE:
        raise OAuthError(f"the identity provider {loggable(endpoint)} issued a {str(issued)[:60]!r}, not an ID-JAG")
    return grant
