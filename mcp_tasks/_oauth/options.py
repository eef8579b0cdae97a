"""What an `OAuth` was told: its options, checked together as `OAuth` documents them, kept in one
frozen object the parts of the flow read (its secrets out of its repr).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import Literal

import attrs

from mcp_tasks._clock import check_timeout
from mcp_tasks._oauth.grants import Assertion

__all__ = ["DEFAULT_STEP_UPS", "GRANTS", "Authorize", "Grant", "Options", "check_options"]

Grant = Literal["authorization_code", "client_credentials", "jwt_bearer", "enterprise_managed"]
GRANTS = ("authorization_code", "client_credentials", "jwt_bearer", "enterprise_managed")
Authorize = Callable[[str], str]

DEFAULT_STEP_UPS = 2


@attrs.frozen(repr=False)
class Options:
    """The options of one `OAuth` (see its docstring), as checked by `check_options`."""

    grant: Grant
    client_id: str | None
    client_secret: str | None
    client_metadata_url: str | None
    client_name: str
    scope: list[str] | None
    issuer: str | None
    timeout: float | None
    max_step_ups: int
    assertion: Assertion | None
    id_token: Assertion | None
    idp_token_endpoint: str | None
    idp_client_id: str | None
    idp_client_secret: str | None

    def __repr__(self) -> str:
        return f"<Options {self.grant}>"


def check_options(
    *,
    grant: str,
    client_id: str | None,
    client_secret: str | None,
    client_metadata_url: str | None,
    client_name: str,
    scope: str | None,
    authorize: object,
    issuer: str | None,
    timeout: float | None,
    max_step_ups: int,
    private_key: object,
    private_key_id: str | None,
    assertion: Assertion | None,
    id_token: Assertion | None,
    idp_token_endpoint: str | None,
    idp_client_id: str | None,
    idp_client_secret: str | None,
) -> Options:
    """The options as one `Options`, or a `ValueError`/`TypeError` naming the one that is wrong."""
    if grant not in GRANTS:
        raise ValueError(f"grant must be one of {', '.join(map(repr, GRANTS))}, got {grant!r}")
    _check_signed(
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
    if isinstance(max_step_ups, bool) or not isinstance(max_step_ups, int) or max_step_ups < 0:
        raise ValueError(f"max_step_ups must be a non-negative int, got {max_step_ups!r}")
    return Options(
        grant=grant,  # type: ignore[arg-type]  # one of GRANTS, checked above
        client_id=client_id,
        client_secret=client_secret,
        client_metadata_url=client_metadata_url,
        client_name=client_name,
        scope=scope.split() if scope else None,
        issuer=issuer,
        timeout=check_timeout("timeout", timeout),
        max_step_ups=max_step_ups,
        assertion=assertion,
        id_token=id_token,
        idp_token_endpoint=idp_token_endpoint,
        idp_client_id=idp_client_id,
        idp_client_secret=idp_client_secret,
    )


def _check_signed(
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
