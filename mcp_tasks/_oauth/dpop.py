"""DPoP (RFC 9449, MCP SEP-1932): a proof of possession signed with this client's own key on
every token request and every request that carries a DPoP-bound token, and the nonces servers ask
for (``use_dpop_nonce`` with a ``DPoP-Nonce`` header), kept per endpoint (a token endpoint and an MCP
server on one origin each give their own).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
import urllib.parse
from collections.abc import Mapping

from mcp_tasks._oauth.jose import SigningKey, b64url, new_dpop_key

__all__ = ["DPoP", "htu"]

NONCE_ERROR = "use_dpop_nonce"


def htu(url: str) -> str:
    """The ``htu`` of a request: its URL without query and fragment (RFC 9449 §4.2)."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class DPoP:
    """The DPoP key of one `OAuth` object (made fresh, never stored) and the nonces servers gave."""

    def __init__(self, key: SigningKey | None = None) -> None:
        self.key = key if key is not None else new_dpop_key()
        self.jkt = self.key.thumbprint()
        self._jwk = self.key.public_jwk()
        self._nonces: dict[str, str] = {}
        self._lock = threading.Lock()

    def proof(self, method: str, url: str, access_token: str | None = None) -> str:
        """A fresh proof for `method url` (with ``ath`` for `access_token`, and the server's nonce)."""
        claims: dict[str, object] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method.upper(),
            "htu": htu(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = b64url(hashlib.sha256(access_token.encode("ascii")).digest())
        with self._lock:
            nonce = self._nonces.get(htu(url))
        if nonce is not None:
            claims["nonce"] = nonce
        return self.key.sign({"typ": "dpop+jwt", "jwk": self._jwk}, claims)

    def learn(self, url: str, headers: Mapping[str, str]) -> bool:
        """Keep the ``DPoP-Nonce`` a response from `url` carries; whether it is a new one."""
        nonce = headers.get("DPoP-Nonce")
        if not nonce or len(nonce) > 1024:
            return False
        where = htu(url)
        with self._lock:
            new = self._nonces.get(where) != nonce
            self._nonces[where] = nonce
        return new

    def __repr__(self) -> str:
        return f"<DPoP {self.key.alg} jkt={self.jkt[:8]}…>"
