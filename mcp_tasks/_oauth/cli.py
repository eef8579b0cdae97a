"""`cli_oauth`: the `OAuth` the command line makes from its flags."""

from __future__ import annotations

from mcp_tasks._oauth.flow import OAuth
from mcp_tasks._oauth.grants import Assertion
from mcp_tasks._oauth.options import Grant
from mcp_tasks._oauth.redirect import LoopbackAuthorize, show_link
from mcp_tasks._oauth.tokens import FileTokenStore

__all__ = ["cli_oauth"]


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
    idp_client_secret: str | None = None,
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
        idp_client_secret=idp_client_secret,
    )
