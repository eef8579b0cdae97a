"""A small, real OAuth 2.1 authorization server and an MCP server it protects, on 127.0.0.1, for the
OAuth tests. Written at the http.server level; it shares no code with mcp_tasks.

One ThreadingHTTPServer serves both (the resource at ``/mcp``, the authorization server at the
root): protected resource metadata, authorization server metadata (RFC 8414, with RFC 9207 iss),
dynamic registration, an authorization endpoint that redirects at once (the "person" always
consents), and a token endpoint that checks PKCE and issues and rotates refresh tokens.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import sys
import threading
import time
import urllib.parse
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import requests


class Realm:
    """The servers and what they saw; the attributes below change their behaviour."""

    def __init__(self) -> None:
        self.httpd = _QuietServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.realm = self  # type: ignore[attr-defined]
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.url = f"{self.base}/mcp"
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.access: dict[str, set[str]] = {}  # valid access token -> its scopes
        self.refresh: dict[str, set[str]] = {}  # valid refresh token -> its scopes
        self.codes: dict[str, dict[str, Any]] = {}
        self.clients: dict[str, dict[str, Any]] = {}
        self.seen_tokens: list[str] = []
        # behaviour
        self.iss: str | None = self.base  # the iss of authorization responses (None: left out)
        self.prm_resource = self.url
        self.expires_in = 3600
        self.required_scope: dict[str, str] = {}  # JSON-RPC method -> the scope it needs (or "<a new one each time>")
        self.token_gate: threading.Event | None = None  # the token endpoint waits for it
        self.hold: threading.Barrier | None = None  # requests with a rejected token wait here
        self.token_auth_methods = ["none"]
        self.prm_enabled = True  # False: no protected resource metadata (a 2025-03-26 server)
        self.metadata_enabled = True  # False: no authorization server metadata either
        self.authorization_server: str | None = None  # the issuer the metadata names (default: this realm)
        self.client_secrets_seen: list[str] = []  # client secrets that reached this token endpoint
        # signed grants (see tests/oauth/test_signed.py)
        self.client_keys: dict[str, Any] = {}  # client id -> the public key of its private_key_jwt
        self.dpop = False  # True: DPoP-bound tokens for a valid DPoP proof at the token endpoint
        self.dpop_nonce: str | None = None  # the nonce the token endpoint insists on
        self.rs_dpop_nonce: str | None = None  # the nonce the MCP endpoint insists on
        self.bound: dict[str, str] = {}  # DPoP-bound access token -> the thumbprint of its key
        self.proof_ids: list[str] = []  # the jti of every DPoP proof the MCP endpoint accepted
        self.assertions: set[str] = set()  # JWTs the jwt-bearer grant accepts (workload identity)
        self.id_tokens: set[str] = set()  # ID tokens the identity provider (/idp/token) exchanges
        self.idp_secrets_seen: list[tuple[str, str]] = []  # (client id, secret) the identity provider got
        self.id_jags: dict[str, tuple[str, str, str]] = {}  # ID-JAG -> (client id, audience, resource)
        self.errors: list[str] = []  # why the realm refused something
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="oauth-realm", daemon=True)
        self.thread.start()

    def close(self) -> None:
        if self.token_gate is not None:
            self.token_gate.set()
        if self.hold is not None:
            self.hold.abort()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)

    def revoke_access(self) -> None:
        with self.lock:
            self.access.clear()

    def revoke_refresh(self) -> None:
        with self.lock:
            self.refresh.clear()

    def secrets_issued(self) -> list[str]:
        """Every token, code and client secret this realm handed out."""
        with self.lock:
            issued = list(self.seen_tokens) + list(self.codes)
            issued += [c["client_secret"] for c in self.clients.values() if "client_secret" in c]
            return issued


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def read_jwt(token: str, key: Any = None) -> tuple[dict[str, Any], dict[str, Any], bytes]:
    """A compact JWS's header and claims; with an EC P-256 public `key`, its ES256 signature is
    checked too (ValueError when it does not verify).
    """
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError("not a compact JWS")
    header, claims, signature = json.loads(_unb64(parts[0])), json.loads(_unb64(parts[1])), _unb64(parts[2])
    if key is not None:
        if header.get("alg") != "ES256" or len(signature) != 64:
            raise ValueError(f"not ES256: {header.get('alg')}")
        der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
        try:
            key.verify(der, f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise ValueError("the signature does not verify") from None
    return header, claims, signature


def jwk_public_key(jwk: dict[str, str]) -> Any:
    from cryptography.hazmat.primitives.asymmetric import ec

    if jwk.get("kty") != "EC" or jwk.get("crv") != "P-256":
        raise ValueError("only EC P-256 keys here")
    x, y = (int.from_bytes(_unb64(jwk[c]), "big") for c in ("x", "y"))
    return ec.EllipticCurvePublicNumbers(x, y, ec.SECP256R1()).public_key()


def jwk_thumbprint(jwk: dict[str, str]) -> str:
    canonical = json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True)
    return b64url(hashlib.sha256(canonical.encode()).digest())


def follow(url: str) -> str:
    """The person's part: the authorization endpoint redirects at once; return where it points."""
    response = requests.get(url, allow_redirects=False, timeout=10)
    response.close()
    return response.headers["Location"]


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-request is ordinary here (the flow's sessions close early)."""

    request_queue_size = 128  # a real server's listen backlog (socketserver's default is 5)

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    @property
    def realm(self) -> Realm:
        return self.server.realm  # type: ignore[attr-defined,no-any-return]

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_GET(self) -> None:
        realm = self.realm
        parts = urllib.parse.urlsplit(self.path)
        if parts.path == "/.well-known/oauth-protected-resource/mcp" and realm.prm_enabled:
            realm.counts["prm"] += 1
            document = {
                "resource": realm.prm_resource,
                "authorization_servers": [realm.authorization_server or realm.base],
                "scopes_supported": ["mcp"],
            }
            return self._send(200, document)
        if parts.path == "/.well-known/oauth-authorization-server" and realm.metadata_enabled:
            realm.counts["as-metadata"] += 1
            return self._send(
                200,
                {
                    "issuer": realm.base,
                    "authorization_endpoint": f"{realm.base}/authorize",
                    "token_endpoint": f"{realm.base}/token",
                    "registration_endpoint": f"{realm.base}/register",
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": realm.token_auth_methods,
                    "authorization_response_iss_parameter_supported": realm.iss == realm.base,
                    "scopes_supported": ["mcp", "write", "offline_access"],
                    **({"dpop_signing_alg_values_supported": ["ES256"]} if realm.dpop else {}),
                },
            )
        if parts.path == "/authorize":
            realm.counts["authorize"] += 1
            query = dict(urllib.parse.parse_qsl(parts.query))
            code = secrets.token_urlsafe(16)
            with realm.lock:
                realm.codes[code] = query
            answer = {"code": code, "state": query.get("state", "")}
            if realm.iss is not None:
                answer["iss"] = realm.iss
            location = query["redirect_uri"] + "?" + urllib.parse.urlencode(answer)
            return self._send(302, None, {"Location": location})
        self._send(404, {"error": "not_found"})

    def do_POST(self) -> None:
        realm = self.realm
        path = urllib.parse.urlsplit(self.path).path
        body = self._body()
        if path == "/register":
            realm.counts["register"] += 1
            metadata = json.loads(body)
            client = {"client_id": f"client-{secrets.token_hex(4)}", **metadata}
            if metadata.get("token_endpoint_auth_method") != "none":
                client["client_secret"] = secrets.token_urlsafe(16)
            with realm.lock:
                realm.clients[client["client_id"]] = client
            return self._send(201, client)
        if path == "/token":
            return self._token(dict(urllib.parse.parse_qsl(body.decode())))
        if path == "/idp/token":
            return self._idp_token(dict(urllib.parse.parse_qsl(body.decode())))
        if path == "/mcp":
            return self._mcp(body)
        self._send(404, {"error": "not_found"})

    def _refuse(self, status: int, error: str, why: str, headers: dict[str, str] | None = None) -> None:
        with self.realm.lock:
            self.realm.errors.append(why)
        self._send(status, {"error": error}, headers)

    def _client_assertion(self, form: dict[str, str]) -> str | None:
        """The client a valid private_key_jwt assertion authenticates (None: no or a bad one)."""
        realm = self.realm
        if form.get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
            return None
        try:
            _, claims, _ = read_jwt(form.get("client_assertion", ""))
            key = realm.client_keys[claims["iss"]]
            read_jwt(form["client_assertion"], key)
        except (KeyError, ValueError) as exc:
            realm.errors.append(f"client assertion: {exc!r}")
            return None
        if claims.get("sub") != claims["iss"] or claims.get("aud") != realm.base or claims.get("exp", 0) < time.time():
            realm.errors.append(f"client assertion claims: {claims}")
            return None
        realm.counts["private_key_jwt"] += 1
        return str(claims["iss"])

    def _dpop_proof(self, method: str, url: str, token: str | None) -> tuple[str | None, str | None]:
        """(the thumbprint of a valid DPoP proof's key, or None; why it is not valid)."""
        proof = self.headers.get("DPoP")
        if not proof:
            return None, "no DPoP proof"
        try:
            header, claims, _ = read_jwt(proof)
            if header.get("typ") != "dpop+jwt" or "d" in header.get("jwk", {}):
                return None, "typ or jwk"
            read_jwt(proof, jwk_public_key(header["jwk"]))
        except (KeyError, ValueError) as exc:
            return None, f"bad proof: {exc!r}"
        if claims.get("htm") != method or claims.get("htu") != url or abs(time.time() - claims.get("iat", 0)) > 60:
            return None, f"htm/htu/iat: {claims}"
        if token is not None and claims.get("ath") != b64url(hashlib.sha256(token.encode()).digest()):
            return None, "ath"
        with self.realm.lock:
            if claims.get("jti") in self.realm.proof_ids:
                return None, "a replayed jti"
        return jwk_thumbprint(header["jwk"]), claims.get("nonce")

    def _idp_token(self, form: dict[str, str]) -> None:
        """The identity provider: exchanges an ID token it issued for an ID-JAG (RFC 8693)."""
        realm = self.realm
        realm.counts["idp:token-exchange"] += 1
        basic = self.headers.get("Authorization", "")
        if basic.startswith("Basic "):
            user, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
            with realm.lock:
                realm.idp_secrets_seen.append((urllib.parse.unquote(user), urllib.parse.unquote(secret)))
        if (
            form.get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange"
            or form.get("subject_token") not in realm.id_tokens
            or form.get("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token"
            or form.get("requested_token_type") != "urn:ietf:params:oauth:token-type:id-jag"
        ):
            return self._refuse(400, "invalid_request", f"token exchange: {sorted(form)}")
        jag = f"jag.{secrets.token_urlsafe(12)}.sig"
        with realm.lock:
            realm.id_jags[jag] = (form.get("client_id", ""), form.get("audience", ""), form.get("resource", ""))
        answer = {"access_token": jag, "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"}
        self._send(200, {**answer, "token_type": "N_A"})

    def _token(self, form: dict[str, str]) -> None:
        realm = self.realm
        grant = form.get("grant_type", "")
        realm.counts[f"token:{grant}"] += 1
        asserted = self._client_assertion(form)
        jkt: str | None = None
        if realm.dpop:
            jkt, nonce = self._dpop_proof("POST", f"{realm.base}/token", None)
            if jkt is not None and realm.dpop_nonce is not None and nonce != realm.dpop_nonce:
                realm.counts["token:nonce-challenge"] += 1
                return self._refuse(400, "use_dpop_nonce", "no nonce", {"DPoP-Nonce": realm.dpop_nonce})
        basic = self.headers.get("Authorization", "")
        with realm.lock:
            if basic.startswith("Basic "):
                pair = base64.b64decode(basic[6:]).decode()
                realm.client_secrets_seen.append(urllib.parse.unquote(pair.partition(":")[2]))
            if form.get("client_secret"):
                realm.client_secrets_seen.append(form["client_secret"])
        if realm.token_gate is not None:
            realm.token_gate.wait(30)
            realm.counts["token:gate-passed"] += 1
        with realm.lock:
            if grant == "authorization_code":
                request = realm.codes.pop(form.get("code", ""), None)
                verifier = form.get("code_verifier", "").encode()
                challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
                if request is None or request.get("code_challenge") != challenge:
                    return self._send(400, {"error": "invalid_grant"})
                scopes = set(request.get("scope", "").split())
            elif grant == "client_credentials":
                if not (basic.startswith("Basic ") or form.get("client_secret") or asserted):
                    return self._send(401, {"error": "invalid_client"})
                scopes = set(form.get("scope", "").split())
            elif grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
                assertion = form.get("assertion", "")
                jag = realm.id_jags.pop(assertion, None)
                if jag is not None:  # enterprise-managed: an ID-JAG for this server, from its client
                    client = urllib.parse.unquote(base64.b64decode(basic[6:]).decode().partition(":")[0])
                    if not basic.startswith("Basic ") or jag[1:] != (realm.base, realm.url):
                        return self._send(400, {"error": "invalid_grant"})
                    realm.counts["token:id-jag"] += 1
                    realm.counts[f"id-jag-client:{client}"] += 1
                elif assertion not in realm.assertions:
                    return self._send(400, {"error": "invalid_grant"})
                scopes = set(form.get("scope", "").split())
            elif grant == "refresh_token":
                scopes_or_none = realm.refresh.pop(form.get("refresh_token", ""), None)
                if scopes_or_none is None:
                    return self._send(400, {"error": "invalid_grant"})
                scopes = scopes_or_none
            else:
                return self._send(400, {"error": "unsupported_grant_type"})
            access, refresh = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
            realm.access[access] = scopes
            realm.refresh[refresh] = scopes
            realm.seen_tokens += [access, refresh]
        if jkt is not None:
            with realm.lock:
                realm.bound[access] = jkt
        answer = {
            "access_token": access,
            "token_type": "DPoP" if jkt is not None else "Bearer",
            "expires_in": realm.expires_in,
            "refresh_token": refresh,
        }
        self._send(200, {**answer, "scope": " ".join(sorted(scopes))})

    def _mcp(self, body: bytes) -> None:
        realm = self.realm
        message = json.loads(body)
        header = self.headers.get("Authorization", "")
        scheme, _, token_or_empty = header.partition(" ")
        token = token_or_empty or None if scheme in ("Bearer", "DPoP") else None
        with realm.lock:
            scopes = realm.access.get(token or "")
            jkt = realm.bound.get(token or "")
        if jkt is not None:
            proved, nonce = self._dpop_proof("POST", realm.url, token)
            if scheme != "DPoP" or proved != jkt:
                return self._refuse(401, "invalid_token", f"a bound token without its proof: {nonce}")
            if realm.rs_dpop_nonce is not None and nonce != realm.rs_dpop_nonce:
                realm.counts["mcp:nonce-challenge"] += 1
                where = f"{realm.base}/.well-known/oauth-protected-resource/mcp"
                challenge = f'DPoP error="use_dpop_nonce", resource_metadata="{where}"'
                return self._send(
                    401, {"error": "use_dpop_nonce"}, {"WWW-Authenticate": challenge, "DPoP-Nonce": realm.rs_dpop_nonce}
                )
            _, claims, _ = read_jwt(self.headers["DPoP"])
            with realm.lock:
                realm.proof_ids.append(claims["jti"])
        challenge = f'Bearer resource_metadata="{realm.base}/.well-known/oauth-protected-resource/mcp"'
        if scopes is None:
            realm.counts["mcp:401"] += 1
            if token is not None and realm.hold is not None:
                try:
                    realm.hold.wait(10)
                except threading.BrokenBarrierError:
                    pass
            return self._send(401, {"error": "invalid_token"}, {"WWW-Authenticate": challenge + ', scope="mcp"'})
        needed = realm.required_scope.get(message.get("method", ""))
        if needed == "<a new one each time>":
            needed = f"admin{realm.counts['mcp:403']}"
        if needed and needed not in scopes:
            realm.counts["mcp:403"] += 1
            header = challenge + f', error="insufficient_scope", scope="{needed}"'
            return self._send(403, {"error": "insufficient_scope"}, {"WWW-Authenticate": header})
        realm.counts["mcp:200"] += 1
        result = {"tools": [], "resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {}}
        self._send(200, {"jsonrpc": "2.0", "id": message.get("id"), "result": result})
