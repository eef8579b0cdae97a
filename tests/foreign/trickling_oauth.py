"""An MCP server and its authorization server at the socket level (sharing nothing with mcp_tasks),
one of whose OAuth endpoints trickles its answer: a status line and endless headers, one byte every
`PAUSE` seconds (a per-read timeout longer than that never fires), until the test closes it.

The endpoints, all on one 127.0.0.1 port:

- ``POST /mcp``: an MCP server that answers any request with an empty result to a valid bearer
  token, and a 401 whose ``WWW-Authenticate`` names its protected resource metadata otherwise;
- ``/.well-known/oauth-protected-resource/mcp`` (``"resource_metadata"``): protected resource
  metadata naming this origin as the authorization server;
- ``/.well-known/oauth-authorization-server`` (``"metadata"``): authorization server metadata;
- ``POST /register`` (``"register"``): dynamic client registration, a public client each time;
- ``POST /token`` (``"token"``; ``"refresh"`` for a ``refresh_token`` grant only): issues an access
  token and a refresh token for client credentials, the JWT-bearer grant and refresh tokens;
- ``POST /idp/token`` (``"idp"``): an identity provider's token exchange (RFC 8693) that issues an
  ID-JAG for any ID token.

`trickles` names the endpoint that trickles (None: none does; it can be changed while the server
runs); `issuer_host` puts the authorization server on another origin (``localhost`` for one, on
the same port). `seen` lists ``"<endpoint> <grant or method>"`` for each request; `trickling` is set once
the trickle started. `revoke()` makes the tokens issued so far invalid.
"""

from __future__ import annotations

import json
import secrets
import socket
import threading
import urllib.parse
from typing import Any

from tests.foreign.sockets import ENDLESS_HEAD, SocketServer, read_headers, trickle

PAUSE = 0.25  # seconds between two trickled bytes
HOLD = 120.0  # the most a trickle lasts (a test that is done closes the server first)
ENDPOINTS = ("resource_metadata", "metadata", "register", "token", "refresh", "idp")
_ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


class TricklingOAuth(SocketServer):
    """See the module's docstring; `url` is the MCP endpoint, `base` its origin, `issuer` the
    authorization server's.
    """

    def __init__(self, trickles: str | None = None, *, issuer_host: str = "127.0.0.1") -> None:
        if trickles is not None and trickles not in ENDPOINTS:
            raise ValueError(f"trickles must be one of {ENDPOINTS} or None, got {trickles!r}")
        super().__init__("oauth-trickle")
        self.trickles = trickles
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"
        self.issuer = f"http://{issuer_host}:{self.port}"  # another origin, if told
        self.seen: list[str] = []
        self.headers: dict[str, dict[str, str]] = {}  # the last request's headers (lower-cased names) per entry of seen
        self.tokens: set[str] = set()
        self.trickling = threading.Event()

    def revoke(self) -> None:
        """Every access token issued so far is refused from now on."""
        with self.lock:
            self.tokens.clear()

    def serve(self, sock: socket.socket, reader: Any) -> None:
        """Answer the connection's one request, or trickle if its endpoint is the one that does."""
        line = reader.readline().decode("latin-1")
        headers = read_headers(reader)
        length = int(headers.get("content-length") or 0)
        body = reader.read(length) if length else b""
        method, _, rest = line.partition(" ")
        path = urllib.parse.urlsplit(rest.rpartition(" ")[0]).path
        endpoint, status, answer, extra = self._answer(method, path, headers, body)
        with self.lock:
            self.seen.append(endpoint)
            self.headers[endpoint] = headers
        if endpoint.partition(" ")[0] == self.trickles or endpoint == f"token {self.trickles}":
            self.trickling.set()
            trickle(sock, ENDLESS_HEAD, PAUSE, self.stop)
            return
        data = json.dumps(answer).encode()
        head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in extra.items()) + "Connection: close\r\n\r\n"
        sock.sendall(head.encode() + data)

    def _answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[str, str, Any, dict[str, str]]:
        """(what was asked, the status line's rest, the JSON answer, extra headers)."""
        if path == "/mcp":
            message = json.loads(body or b"{}")
            token = headers.get("authorization", "").partition(" ")[2]
            with self.lock:
                valid = token in self.tokens
            if not valid:
                challenge = f'Bearer resource_metadata="{self.base}/.well-known/oauth-protected-resource/mcp"'
                return "mcp 401", "401 Unauthorized", {"error": "invalid_token"}, {"WWW-Authenticate": challenge}
            return "mcp 200", "200 OK", {"jsonrpc": "2.0", "id": message.get("id"), "result": {"tools": []}}, {}
        if path.startswith("/.well-known/oauth-protected-resource"):
            document = {"resource": self.url, "authorization_servers": [self.issuer]}
            return "resource_metadata", "200 OK", document, {}
        if path == "/.well-known/oauth-authorization-server":
            document = {
                "issuer": self.issuer,
                "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token",
                "registration_endpoint": f"{self.issuer}/register",
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
                "code_challenge_methods_supported": ["S256"],
            }
            return "metadata", "200 OK", document, {}
        if path == "/register" and method == "POST":
            return "register", "201 Created", {"client_id": f"public-{secrets.token_hex(4)}"}, {}
        form = dict(urllib.parse.parse_qsl(body.decode("latin-1")))
        grant = form.get("grant_type", "")
        if path == "/idp/token" and method == "POST":
            answer = {"access_token": "h.id-jag.s", "issued_token_type": _ID_JAG, "token_type": "N_A"}
            return "idp", "200 OK", answer, {}
        if path == "/token" and method == "POST":
            kind = "refresh" if grant == "refresh_token" else grant
            token = secrets.token_urlsafe(16)
            with self.lock:
                self.tokens.add(token)
            answer = {"access_token": token, "token_type": "Bearer", "refresh_token": secrets.token_urlsafe(16)}
            return f"token {kind}", "200 OK", answer, {}
        return f"{method} {path}", "404 Not Found", {"error": "not_found"}, {}
