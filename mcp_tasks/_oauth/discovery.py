"""Finding the authorization server of an MCP server, as the MCP authorization spec orders it.

1. Protected resource metadata (RFC 9728): the ``resource_metadata`` URL of the server's
   challenge, else ``/.well-known/oauth-protected-resource`` with the server's path appended, then
   at the root. Its ``resource`` must name this server (a prefix of its URL on the same origin).
2. Authorization server metadata of its first ``authorization_servers`` entry: RFC 8414, then
   OpenID Connect discovery, in their path-aware forms for an issuer with a path. The document's
   ``issuer`` must be exactly the issuer the URL was built from.
3. A server with no protected resource metadata is a 2025-03-26 server: the authorization server is
   its origin, and without metadata there the endpoints are ``/authorize``, ``/token``, ``/register``.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import attrs

from mcp_tasks._clock import Deadline
from mcp_tasks._errors import OAuthError
from mcp_tasks._oauth.http import Exchanges, OAuthHttp, loggable

__all__ = ["AuthServer", "Resource", "discover_resource", "discover_server", "resource_matches"]


@attrs.frozen
class Resource:
    """What protected resource metadata said (or, for a 2025-03-26 server, what stands in for it)."""

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None
    legacy: bool = False


@attrs.frozen
class AuthServer:
    """The parts of authorization server metadata the flow uses."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None
    scopes_supported: tuple[str, ...] | None
    token_auth_methods: tuple[str, ...]
    grant_types: tuple[str, ...] | None
    code_challenge_methods: tuple[str, ...] | None
    iss_parameter_supported: bool
    client_id_metadata_documents: bool
    from_metadata: bool


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _path_of(url: str) -> str:
    path = urllib.parse.urlsplit(url).path
    return "" if path in ("", "/") else path.rstrip("/")


def resource_matches(resource: str, server_url: str) -> bool:
    """Whether protected resource metadata's `resource` names the server at `server_url`: the same
    origin, and a path that is the server's path or a parent of it.
    """
    want = urllib.parse.urlsplit(server_url)
    got = urllib.parse.urlsplit(resource)
    if (got.scheme.lower(), got.netloc.lower()) != (want.scheme.lower(), want.netloc.lower()) or got.fragment:
        return False
    prefix = _path_of(resource)
    path = _path_of(server_url)
    return path == prefix or path.startswith(prefix + "/") or prefix == ""


def _strings(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(item for item in value if isinstance(item, str))


def discover_resource(
    http: OAuthHttp, server_url: str, metadata_url: str | None, deadline: Deadline
) -> Exchanges[Resource]:
    """The protected resource metadata of the server at `server_url` (checked against it)."""
    origin = origin_of(server_url)
    path = _path_of(server_url)
    candidates = [metadata_url] if metadata_url else []
    if path:
        candidates.append(f"{origin}/.well-known/oauth-protected-resource{path}")
    candidates.append(f"{origin}/.well-known/oauth-protected-resource")
    for url in dict.fromkeys(candidates):
        document = yield from http.get_json(url, deadline)
        if document is None:
            continue
        resource = document.get("resource")
        servers = _strings(document.get("authorization_servers")) or ()
        if not isinstance(resource, str) or not servers:
            raise OAuthError(
                f"the protected resource metadata at {loggable(url)} lacks resource or authorization_servers"
            )
        if not resource_matches(resource, server_url):
            raise OAuthError(
                f"the protected resource metadata at {loggable(url)} is for {loggable(resource)!r}, "
                f"not for {loggable(server_url)}; not authorizing"
            )
        return Resource(resource, servers, _strings(document.get("scopes_supported")))
    # No protected resource metadata: a 2025-03-26 server, its own authorization server.
    return Resource(server_url.split("#", 1)[0], (origin,), None, legacy=True)


def _metadata_urls(issuer: str) -> list[str]:
    origin = origin_of(issuer)
    path = _path_of(issuer)
    if path:
        return [
            f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{origin}/.well-known/openid-configuration{path}",
            f"{origin}{path}/.well-known/openid-configuration",
        ]
    return [f"{origin}/.well-known/oauth-authorization-server", f"{origin}/.well-known/openid-configuration"]


def discover_server(http: OAuthHttp, issuer: str, deadline: Deadline, *, legacy: bool) -> Exchanges[AuthServer]:
    """The metadata of the authorization server `issuer`; its ``issuer`` must be `issuer` exactly.

    Without any metadata document, the 2025-03-26 default endpoints under `issuer`.
    """
    parts = urllib.parse.urlsplit(issuer)
    if parts.scheme not in ("https", "http") or parts.query or parts.fragment:
        raise OAuthError(f"the authorization server {issuer!r} is not a valid issuer URL")
    for url in _metadata_urls(issuer):
        document = yield from http.get_json(url, deadline)
        if document is None:
            continue
        if document.get("issuer") != issuer:
            raise OAuthError(
                f"the authorization server metadata at {loggable(url)} names the issuer {document.get('issuer')!r}, "
                f"not {issuer!r}; not using it"
            )
        authorization = document.get("authorization_endpoint")
        token = document.get("token_endpoint")
        if not isinstance(authorization, str) or not isinstance(token, str):
            raise OAuthError(
                f"the authorization server metadata at {loggable(url)} lacks an authorization or token endpoint"
            )
        registration = document.get("registration_endpoint")
        return AuthServer(
            issuer=issuer,
            authorization_endpoint=authorization,
            token_endpoint=token,
            registration_endpoint=registration if isinstance(registration, str) else None,
            scopes_supported=_strings(document.get("scopes_supported")),
            token_auth_methods=_strings(document.get("token_endpoint_auth_methods_supported"))
            or ("client_secret_basic",),
            grant_types=_strings(document.get("grant_types_supported")),
            code_challenge_methods=_strings(document.get("code_challenge_methods_supported")),
            iss_parameter_supported=document.get("authorization_response_iss_parameter_supported") is True,
            client_id_metadata_documents=document.get("client_id_metadata_document_supported") is True,
            from_metadata=True,
        )
    if not legacy:
        raise OAuthError(
            f"found no authorization server metadata for {issuer} (tried {', '.join(_metadata_urls(issuer))})"
        )
    base = issuer.rstrip("/")
    return AuthServer(
        issuer=issuer,
        authorization_endpoint=f"{base}/authorize",
        token_endpoint=f"{base}/token",
        registration_endpoint=f"{base}/register",
        scopes_supported=None,
        token_auth_methods=("client_secret_basic", "client_secret_post", "none"),
        grant_types=None,
        code_challenge_methods=("S256",),
        iss_parameter_supported=False,
        client_id_metadata_documents=False,
        from_metadata=False,
    )
