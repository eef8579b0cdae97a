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
        if path == "/mcp":
            return self._mcp(body)
        self._send(404, {"error": "not_found"})

    def _token(self, form: dict[str, str]) -> None:
        realm = self.realm
        grant = form.get("grant_type", "")
        realm.counts[f"token:{grant}"] += 1
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
                if not (self.headers.get("Authorization", "").startswith("Basic ") or form.get("client_secret")):
                    return self._send(401, {"error": "invalid_client"})
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
        answer = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": realm.expires_in,
            "refresh_token": refresh,
        }
        self._send(200, {**answer, "scope": " ".join(sorted(scopes))})

    def _mcp(self, body: bytes) -> None:
        realm = self.realm
        message = json.loads(body)
        header = self.headers.get("Authorization", "")
        token = header[7:] if header.startswith("Bearer ") else None
        with realm.lock:
            scopes = realm.access.get(token or "")
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
