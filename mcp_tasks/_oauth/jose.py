"""Signed JWTs for the OAuth grants that need them (private_key_jwt, DPoP proofs), on PyCA's
`cryptography`: the ``mcp_tasks[jwt]`` extra.

Why `cryptography` and no JWT library: it is the one well-kept Python library for the keys and
signatures themselves (the JOSE libraries sit on it), and a client only ever *makes* compact JWTs
(RFC 7515 §7.1: three base64url parts), which takes a few lines; nothing here parses or trusts
a token someone else signed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from typing import Any

__all__ = ["EXTRA_HINT", "SigningKey", "b64url", "load_private_key", "new_dpop_key", "require_extra"]

EXTRA_HINT = "pip install 'mcp_tasks[jwt]'"


def require_extra(feature: str) -> None:
    """Raise `ImportError` naming the extra when `cryptography` is not installed."""
    try:
        import cryptography  # noqa: F401
    except ImportError:
        raise ImportError(
            f"{feature} needs the mcp_tasks[jwt] extra (the cryptography package): {EXTRA_HINT}"
        ) from None


def b64url(data: bytes) -> str:
    """base64url without padding (RFC 7515 §2)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _json_part(value: dict[str, Any]) -> str:
    return b64url(json.dumps(value, separators=(",", ":"), sort_keys=False).encode())


def _int_bytes(value: int, size: int) -> bytes:
    return value.to_bytes(size, "big")


class SigningKey:
    """A private key and the JWS algorithm it signs with: ES256/ES384/ES512 for EC P-256/384/521,
    RS256 for RSA, EdDSA for Ed25519.
    """

    def __init__(self, key: Any, key_id: str | None = None) -> None:
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

        self._key = key
        self.key_id = key_id
        if isinstance(key, ec.EllipticCurvePrivateKey):
            curves = {"secp256r1": ("ES256", "P-256", 32), "secp384r1": ("ES384", "P-384", 48)}
            curves["secp521r1"] = ("ES512", "P-521", 66)
            if key.curve.name not in curves:
                raise ValueError(f"private_key: an EC key on {key.curve.name} cannot sign a JWT (P-256, P-384, P-521)")
            self.alg, self._crv, self._size = curves[key.curve.name]
        elif isinstance(key, rsa.RSAPrivateKey):
            if key.key_size < 2048:
                raise ValueError(f"private_key: an RSA key of {key.key_size} bits is too short (2048 at least)")
            self.alg, self._crv, self._size = "RS256", "", 0
        elif isinstance(key, ed25519.Ed25519PrivateKey):
            self.alg, self._crv, self._size = "EdDSA", "Ed25519", 32
        else:
            raise ValueError("private_key must be an EC (P-256/384/521), RSA or Ed25519 private key")

    def public_jwk(self) -> dict[str, str]:
        """The public half as a JWK (no private member)."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec, rsa

        public = self._key.public_key()
        if isinstance(public, ec.EllipticCurvePublicKey):
            numbers = public.public_numbers()
            return {
                "kty": "EC",
                "crv": self._crv,
                "x": b64url(_int_bytes(numbers.x, self._size)),
                "y": b64url(_int_bytes(numbers.y, self._size)),
            }
        if isinstance(public, rsa.RSAPublicKey):
            rsa_numbers = public.public_numbers()
            n = rsa_numbers.n.to_bytes((rsa_numbers.n.bit_length() + 7) // 8, "big")
            e = rsa_numbers.e.to_bytes((rsa_numbers.e.bit_length() + 7) // 8, "big")
            return {"kty": "RSA", "n": b64url(n), "e": b64url(e)}
        raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return {"kty": "OKP", "crv": "Ed25519", "x": b64url(raw)}

    def thumbprint(self) -> str:
        """The JWK SHA-256 thumbprint of the public key (RFC 7638): what a DPoP token is bound to."""
        jwk = self.public_jwk()
        required = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}
        canonical = json.dumps({k: jwk[k] for k in required[jwk["kty"]]}, separators=(",", ":"), sort_keys=True)
        return b64url(hashlib.sha256(canonical.encode()).digest())

    def sign(self, header: dict[str, Any], claims: dict[str, Any]) -> str:
        """A compact JWS of `claims` with `header` (``alg``, and ``kid`` when the key has one, added)."""
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, padding
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

        full = {"alg": self.alg, **header}
        if self.key_id is not None and "jwk" not in full:
            full.setdefault("kid", self.key_id)
        signing_input = f"{_json_part(full)}.{_json_part(claims)}".encode("ascii")
        if self.alg.startswith("ES"):
            digest = {"ES256": hashes.SHA256(), "ES384": hashes.SHA384(), "ES512": hashes.SHA512()}[self.alg]
            r, s = decode_dss_signature(self._key.sign(signing_input, ec.ECDSA(digest)))
            signature = _int_bytes(r, self._size) + _int_bytes(s, self._size)
        elif self.alg == "RS256":
            signature = self._key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
        else:
            signature = self._key.sign(signing_input)
        return f"{signing_input.decode('ascii')}.{b64url(signature)}"

    def __repr__(self) -> str:
        return f"<SigningKey {self.alg}{' kid=' + self.key_id if self.key_id else ''}>"


def load_private_key(source: str | bytes | os.PathLike[str], key_id: str | None = None) -> SigningKey:
    """A `SigningKey` from a PEM string or bytes (PKCS#8, or the traditional EC/RSA forms, not
    encrypted), or the path of a file holding one.
    """
    require_extra("private_key")
    from cryptography.hazmat.primitives import serialization

    if isinstance(source, bytes):
        pem = source
    elif isinstance(source, str) and source.lstrip().startswith("-----BEGIN"):
        pem = source.encode()
    elif isinstance(source, (str, os.PathLike)):
        try:
            with open(source, "rb") as file:
                pem = file.read()
        except OSError as exc:
            raise ValueError(f"private_key: cannot read the key file {os.fspath(source)!r}: {exc.strerror}") from None
    else:
        raise TypeError(f"private_key must be a PEM string, bytes or a path, got {type(source).__name__}")
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"private_key is not an unencrypted PEM private key ({type(exc).__name__})") from None
    return SigningKey(key, key_id)


def new_dpop_key() -> SigningKey:
    """A fresh EC P-256 key for DPoP proofs (kept in memory only)."""
    require_extra("dpop=True")
    from cryptography.hazmat.primitives.asymmetric import ec

    return SigningKey(ec.generate_private_key(ec.SECP256R1()))
