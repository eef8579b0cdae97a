"""Every byte of an OAuth flow under the call's deadline (issue 27): discovery, registration, the
token request, a refresh and the identity provider's token exchange, each against an endpoint of
the tests' own (`tests.foreign.trickling_oauth`) that trickles its answer a byte every 0.25 s,
which a per-read timeout never notices.

Each trickle lasts until the test closes the server, after the call raised: a call that waits
for it cannot raise at all (before the fix: "the call did not return", where a user saw 18 s for
``timeout=1.0``). No timing bound is asserted; each test reports how far past its timeout the
call raised, and bench/deadline_margin.py measures it.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Generator, Iterator

import pytest
import requests

import mcp_tasks as mt
from mcp_tasks._clock import Deadline
from tests.conftest import Background
from tests.foreign.trickling_oauth import TricklingOAuth
from tests.transports.test_http_lookup_proxy import HANGS, HangingResolver

PATIENT = 30.0  # a hang detector: what a test waits for comes long before, or the test fails
TIMEOUT = 1.0


def backend(realm: TricklingOAuth) -> mt.OAuth:
    """A pre-registered backend (client credentials, its secret bound to the realm's issuer)."""
    return mt.OAuth(client_id="backend", client_secret="s3cret", grant="client_credentials", issuer=realm.issuer)


def registering(realm: TricklingOAuth) -> mt.OAuth:
    """A client that registers itself (RFC 7591) for client credentials."""
    return mt.OAuth(grant="client_credentials")


def enterprise(realm: TricklingOAuth) -> mt.OAuth:
    """Enterprise-managed authorization: an ID token exchanged at the realm's identity provider."""
    pytest.importorskip("cryptography")
    return mt.OAuth(
        grant="enterprise_managed",
        client_id="backend",
        id_token="header.id-token.signature",
        idp_token_endpoint=f"{realm.base}/idp/token",
        idp_client_id="idp-client",
    )


def raises_in_time(
    realm: TricklingOAuth,
    auth: mt.OAuth,
    record: Callable[[str, object], None],
    *,
    first: bool = True,
    session: requests.Session | None = None,
) -> mt.RequestTimeout:
    """The call raises `RequestTimeout` while the endpoint still trickles; the overshoot reported."""
    with mt.Client.http(realm.url, auth=auth, retries=0, protocol="2026-07-28", session=session) as client:
        if not first:
            assert client.request("tools/list", timeout=PATIENT) == {"tools": []}
            realm.revoke()
        start = time.monotonic()
        caller = Background(lambda: client.request("tools/list", timeout=TIMEOUT))
        with pytest.raises(mt.RequestTimeout) as raised:
            caller.result(PATIENT)  # raised while the endpoint still trickles
        overshoot = time.monotonic() - start - TIMEOUT
        assert realm.trickling.is_set() and not realm.stop.is_set()
    record("overshoot_s", round(overshoot, 3))
    print(f"overshoot past timeout={TIMEOUT}s: {overshoot * 1000:.0f} ms")
    return raised.value


@pytest.mark.parametrize(
    ("trickles", "make", "url_part"),
    [
        ("resource_metadata", backend, "/.well-known/oauth-protected-resource/mcp"),
        ("metadata", backend, "/.well-known/oauth-authorization-server"),
        ("register", registering, "/register"),
        ("token", backend, "/token"),
        ("idp", enterprise, "/idp/token"),
    ],
)
def test_a_trickling_oauth_endpoint_cannot_hold_a_call(
    trickles: str,
    make: Callable[[TricklingOAuth], mt.OAuth],
    url_part: str,
    record_property: Callable[[str, object], None],
) -> None:
    with TricklingOAuth(trickles) as realm:
        error = raises_in_time(realm, make(realm), record_property)
    assert "Authorization timed out" in error.message and url_part in error.message
    assert error.data == {"timeoutMs": TIMEOUT * 1000}


def test_a_trickling_refresh_cannot_hold_a_call(record_property: Callable[[str, object], None]) -> None:
    with TricklingOAuth() as realm:
        auth = backend(realm)
        realm.trickles = "refresh"  # the first token comes at once; its refresh trickles
        error = raises_in_time(realm, auth, record_property, first=False)
        assert realm.seen.count("token refresh") == 1
    assert "Authorization timed out" in error.message and "/token" in error.message


def test_a_trickling_token_endpoint_cannot_hold_a_call_through_a_users_session(
    record_property: Callable[[str, object], None],
) -> None:
    """A session of the user's (its stock adapters), the authorization server on another origin
    than the MCP server's: the flow's requests are watched as well.
    """
    with TricklingOAuth("token", issuer_host="localhost") as realm, requests.Session() as session:
        session.headers["X-Team"] = "reports"
        error = raises_in_time(realm, backend(realm), record_property, session=session)
    assert "Authorization timed out" in error.message and "/token" in error.message


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Iterator[HangingResolver]:
    standin = HangingResolver()
    monkeypatch.setattr(socket, "getaddrinfo", standin)
    try:
        yield standin
    finally:
        standin.release()


def test_a_hanging_lookup_of_the_authorization_servers_name_cannot_hold_a_call(
    resolver: HangingResolver, record_property: Callable[[str, object], None]
) -> None:
    realm = TricklingOAuth(issuer_host=HANGS)
    with realm, mt.Client.http(realm.url, auth=backend(realm), retries=0, protocol="2026-07-28") as client:
        start = time.monotonic()
        caller = Background(lambda: client.request("tools/list", timeout=TIMEOUT))
        with pytest.raises(mt.RequestTimeout) as raised:
            caller.result(PATIENT)  # raised while the lookup still hangs
        overshoot = time.monotonic() - start - TIMEOUT
        assert resolver.called.is_set() and not resolver.released.is_set()
        resolver.release()
    record_property("overshoot_s", round(overshoot, 3))
    print(f"overshoot past timeout={TIMEOUT}s: {overshoot * 1000:.0f} ms")
    assert f"Authorization timed out talking to http://{HANGS}:" in raised.value.message


def test_the_flow_runs_on_the_transports_connections_when_nothing_trickles() -> None:
    """The same realm answers at once: the call gets its answer (the tests above can fail only on time)."""
    with TricklingOAuth() as realm:
        with mt.Client.http(realm.url, auth=enterprise(realm), retries=0, protocol="2026-07-28") as client:
            assert client.request("tools/list", timeout=PATIENT) == {"tools": []}
        assert realm.seen[:5] == [
            "mcp 401",
            "resource_metadata",
            "metadata",
            "idp",
            "token urn:ietf:params:oauth:grant-type:jwt-bearer",
        ]


def test_an_oauth_session_of_the_users_sends_the_flows_requests_with_its_headers() -> None:
    """`OAuth(session=...)`: the flow's own requests go through that session (its headers), the
    re-sent MCP request through the client's.
    """
    with TricklingOAuth() as realm, requests.Session() as session:
        session.headers["X-Gateway"] = "internal"
        auth = mt.OAuth(
            client_id="backend",
            client_secret="s3cret",
            grant="client_credentials",
            issuer=realm.issuer,
            session=session,
        )
        with mt.Client.http(realm.url, auth=auth, retries=0, protocol="2026-07-28") as client:
            assert client.request("tools/list", timeout=PATIENT) == {"tools": []}
        assert realm.headers["token client_credentials"]["x-gateway"] == "internal"
        assert realm.headers["token client_credentials"]["authorization"].startswith("Basic ")
        assert "x-gateway" not in realm.headers["mcp 200"]


class LooksThenGivesUp(requests.auth.AuthBase):
    """A flow (no OAuth) that, on the 401, fetches a document of its own and then stops: the
    caller gets the 401. (An `AuthBase` for the type checker; the transport drives `auth_flow`.)
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.status: int | None = None

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        raise AssertionError("the transport should drive auth_flow")

    def auth_flow(
        self, request: requests.PreparedRequest, deadline: Deadline
    ) -> Generator[requests.PreparedRequest | tuple[requests.PreparedRequest, Deadline, bool], requests.Response, None]:
        response = yield request
        if response.status_code == 401:
            own = yield (requests.Request("GET", self.url).prepare(), deadline, True)
            self.status = own.status_code
            own.raw.read()


def test_a_flow_that_stops_after_a_request_of_its_own_leaves_the_caller_the_servers_answer() -> None:
    with TricklingOAuth() as realm:
        auth = LooksThenGivesUp(f"{realm.base}/.well-known/oauth-authorization-server")
        client = mt.Client.http(realm.url, auth=auth, retries=0, protocol="2026-07-28")
        with client, pytest.raises(mt.McpError, match="HTTP 401") as raised:
            client.request("tools/list", timeout=PATIENT)
        assert raised.value.kind == "authorization" and auth.status == 200
        assert realm.seen == ["mcp 401", "metadata"]
