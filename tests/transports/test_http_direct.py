"""The plain path (transports/_direct.py): HTTPS with requests' meaning of ``verify``, a header
value that would split the request refused, and kept connections reused (checked against a
socket-level server over TLS, with a certificate made by the openssl command line).
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mcp_tasks as mt
from tests.foreign.http_servers import Conn, ForeignServer, Request, tool_result


class TlsServer(ForeignServer):
    """`ForeignServer` over TLS (each accepted connection is wrapped)."""

    def __init__(self, handler: Callable[[Request, Conn], None], context: ssl.SSLContext) -> None:
        self.context = context
        super().__init__(handler, name="foreign-tls")
        self.url = self.url.replace("http://", "https://")

    def accepted(self, sock: socket.socket) -> socket.socket | None:
        """`sock` wrapped in TLS, counted (None when the handshake fails)."""
        try:
            wrapped = self.context.wrap_socket(sock, server_side=True)
        except (OSError, ssl.SSLError):
            sock.close()
            return None
        with self.lock:
            self.connections += 1
        return wrapped


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[str, str]:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command line")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return str(cert), str(key)


def answer(request: Request, conn: Conn) -> None:
    conn.json(tool_result(request, "over tls"))


def test_https_on_the_plain_path_verifies_with_the_given_ca(certificate: tuple[str, str]) -> None:
    cert, key = certificate
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    with TlsServer(answer, context) as server:
        with mt.Client.http(server.url, verify=cert, protocol="2026-07-28", retries=0) as client:
            for _ in range(3):
                assert client.call_tool("x")["content"][0]["text"] == "over tls"
        assert server.connections == 1  # kept and reused
        with (
            mt.Client.http(server.url, protocol="2026-07-28", retries=0) as client,  # certifi's CAs
            pytest.raises(mt.TransportError, match="TLS"),
        ):
            client.call_tool("x")
        with mt.Client.http(server.url, verify=False, protocol="2026-07-28", retries=0) as client:
            assert client.call_tool("x")["content"][0]["text"] == "over tls"


def test_a_header_value_that_would_split_the_request_is_refused() -> None:
    def never(request: Request, conn: Conn) -> Any:
        raise AssertionError("nothing may arrive")

    with ForeignServer(never) as server:
        with (
            mt.Client.http(server.url, protocol="2026-07-28", retries=0, headers={"X-Bad": "a\r\nX-Evil: 1"}) as client,
            pytest.raises(ValueError, match="line break"),
        ):
            client.call_tool("x")
        assert server.count("tools/call") == 0
