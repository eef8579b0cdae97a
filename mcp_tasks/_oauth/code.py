"""The front channel of the authorization code grant: the authorization URL (PKCE S256, a fresh
``state``, the ``resource``), the person's step, and the redirect checked (an ``error``, the
``state``, the RFC 9207 ``iss``) before its code is used.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import urllib.parse

from mcp_tasks._errors import OAuthError
from mcp_tasks._oauth.discovery import AuthServer, Resource
from mcp_tasks._oauth.options import Authorize
from mcp_tasks._oauth.redirect import LoopbackAuthorize

__all__ = ["authorization_code"]


def authorization_code(
    step: Authorize | None, server: AuthServer, client_id: str, redirect_uri: str, scope: list[str], resource: Resource
) -> tuple[str, str]:
    """Send the person to `server`'s authorization endpoint through `step` (None: the browser and
    a listener on loopback at `redirect_uri`); the code and the PKCE verifier.
    """
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    state = secrets.token_urlsafe(24)
    params = {
        "response_type": "code",
        "client_id": client_id,
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
            f"the authorization response comes from issuer {iss[:100]!r}, not {server.issuer!r}; its code is not used"
        )
    if iss is None and server.iss_parameter_supported:
        raise OAuthError(
            f"the authorization response lacks the iss that {server.issuer} promises; its code is not used"
        )
    code = answer.get("code")
    if not code:
        raise OAuthError("the authorization response carries no code")
    return code, verifier
