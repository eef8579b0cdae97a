"""mcp_tasks.OAuth against a real authorization server and protected MCP server (tests/oauth/realm.py)
on 127.0.0.1: the flow, refresh, revocation, twenty threads, refused responses, deadlines, logs."""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import urllib3

import mcp_tasks as mt
from mcp_tasks._oauth.challenge import bearer_challenge, parse_challenges
from mcp_tasks._oauth.discovery import resource_matches
from mcp_tasks._oauth.redirect import LoopbackAuthorize
from tests.oauth.realm import Realm, follow

if urllib3.__version__.startswith("1."):  # type: ignore[attr-defined]
    # At the urllib3 1.26 floor, the connection of a 401 that a plain requests.post re-sent after
    # (as HTTPDigestAuth does) is left for the garbage collector to close.
    pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


@pytest.fixture
def realm() -> Iterator[Realm]:
    made = Realm()
    yield made
    made.close()


class Person:
    """The authorize step: counts how often a person is asked; follows the redirect."""

    def __init__(self) -> None:
        self.asked = 0
        self.lock = threading.Lock()

    def __call__(self, url: str) -> str:
        with self.lock:
            self.asked += 1
        return follow(url)


def oauth(person: Person | None = None, **options: object) -> mt.OAuth:
    return mt.OAuth(authorize=person or Person(), redirect_uri="http://127.0.0.1:9/callback", **options)  # type: ignore[arg-type]


def post(realm: Realm, auth: mt.OAuth, **options: object) -> requests.Response:
    return requests.post(realm.url, json=CALL, auth=auth, timeout=10, **options)  # type: ignore[arg-type]


def test_plain_requests_authorizes_once_then_reuses_the_token(realm: Realm) -> None:
    person = Person()
    auth = oauth(person)
    first = post(realm, auth)
    assert first.status_code == 200 and first.json()["id"] == 1
    assert [r.status_code for r in first.history] == [401]
    assert post(realm, auth).status_code == 200
    assert person.asked == 1
    assert realm.counts["token:authorization_code"] == 1 and realm.counts["register"] == 1
    # the resource parameter (RFC 8707) and PKCE went with the authorization request
    assert realm.counts["mcp:401"] == 1


def test_client_http_with_oauth(realm: Realm) -> None:
    person = Person()
    with mt.Client.http(realm.url, auth=oauth(person), timeout=10) as client:
        assert client.request("tools/list")["tools"] == []
        assert client.request("tools/list")["tools"] == []
    assert person.asked == 1


def test_an_unresolved_401_is_an_authorization_error_naming_url_and_challenge(realm: Realm) -> None:
    with mt.Client.http(realm.url, timeout=10) as client, pytest.raises(mt.McpError) as caught:
        client.request("tools/list")
    assert caught.value.kind == "authorization"
    assert realm.url in str(caught.value) and "resource_metadata" in str(caught.value)


def test_a_rejected_token_is_refreshed_without_asking_the_person_again(realm: Realm) -> None:
    person = Person()
    auth = oauth(person)
    assert post(realm, auth).status_code == 200
    realm.revoke_access()
    assert post(realm, auth).status_code == 200
    assert person.asked == 1
    assert realm.counts["token:refresh_token"] == 1


def test_an_expired_token_is_refreshed_before_it_is_sent(realm: Realm) -> None:
    person = Person()
    store = mt.MemoryTokenStore()
    assert post(realm, oauth(person, store=store)).status_code == 200
    (key,) = store._records
    record = store.get(key)
    assert record is not None
    store.set(key, {**record, "expires_at": record["expires_at"] - 3600})  # as a later run finds it
    rejected = realm.counts["mcp:401"]
    assert post(realm, oauth(person, store=store)).status_code == 200
    assert realm.counts["token:refresh_token"] == 1
    assert realm.counts["mcp:401"] == rejected  # the stale token was never sent
    assert person.asked == 1


def test_a_revoked_refresh_token_leads_to_a_new_authorization(realm: Realm) -> None:
    person = Person()
    auth = oauth(person)
    assert post(realm, auth).status_code == 200
    realm.revoke_access()
    realm.revoke_refresh()
    assert post(realm, auth).status_code == 200
    assert realm.counts["token:refresh_token"] == 1  # tried, refused
    assert person.asked == 2


def test_twenty_threads_with_a_rejected_token_make_one_token_request(realm: Realm) -> None:
    person = Person()
    auth = oauth(person)
    assert post(realm, auth).status_code == 200
    realm.revoke_access()
    realm.hold = threading.Barrier(20)  # every thread's stale request is in before any 401 leaves
    statuses: list[int] = []
    lock = threading.Lock()

    def call() -> None:
        status = post(realm, auth).status_code
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=call, name=f"caller-{n}") for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert statuses == [200] * 20
    assert realm.counts["token:refresh_token"] == 1
    assert realm.counts["token:authorization_code"] == 1 and person.asked == 1


def test_step_up_on_insufficient_scope_asks_for_the_union(realm: Realm) -> None:
    realm.required_scope["tools/call"] = "write"
    person = Person()
    auth = oauth(person)
    assert post(realm, auth).status_code == 200
    call = {**CALL, "method": "tools/call"}
    response = requests.post(realm.url, json=call, auth=auth, timeout=10)
    assert response.status_code == 200
    assert person.asked == 2
    token = response.request.headers["Authorization"][7:]
    assert {"mcp", "write"} <= realm.access[token]


def test_step_up_is_bounded(realm: Realm) -> None:
    person = Person()
    auth = oauth(person, max_step_ups=2)
    assert post(realm, auth).status_code == 200
    realm.required_scope["tools/call"] = "<a new one each time>"  # no step-up can satisfy it
    response = requests.post(realm.url, json={**CALL, "method": "tools/call"}, auth=auth, timeout=10)
    assert response.status_code == 403
    assert person.asked == 1 + 2


def test_a_bad_state_is_refused_and_the_code_never_used(realm: Realm) -> None:
    def forged(url: str) -> str:
        redirect = urllib.parse.urlsplit(follow(url))
        query = dict(urllib.parse.parse_qsl(redirect.query))
        query["state"] = "forged"
        return urllib.parse.urlunsplit(redirect._replace(query=urllib.parse.urlencode(query)))

    with pytest.raises(mt.OAuthError, match="state") as caught:
        post(realm, mt.OAuth(authorize=forged, redirect_uri="http://127.0.0.1:9/callback"))
    assert caught.value.kind == "authorization"
    assert realm.counts["token:authorization_code"] == 0
    assert not any(code in str(caught.value) for code in realm.secrets_issued())


def test_a_wrong_iss_is_refused(realm: Realm) -> None:
    realm.iss = "https://evil.example.com"
    with pytest.raises(mt.OAuthError, match=r"evil\.example\.com"):
        post(realm, oauth())
    assert realm.counts["token:authorization_code"] == 0


def test_metadata_for_another_resource_is_refused_before_authorizing(realm: Realm) -> None:
    realm.prm_resource = "http://127.0.0.1:1/elsewhere"
    person = Person()
    with pytest.raises(mt.OAuthError, match="elsewhere"):
        post(realm, oauth(person))
    assert person.asked == 0 and realm.counts["register"] == 0


def test_a_slow_token_endpoint_times_out_under_the_calls_deadline(realm: Realm) -> None:
    realm.token_gate = threading.Event()  # never set while the call waits
    with mt.Client.http(realm.url, auth=oauth(timeout=60.0), timeout=0.5) as client, pytest.raises(mt.RequestTimeout):
        client.request("tools/list")
    assert realm.counts["token:authorization_code"] == 1


def test_no_secret_reaches_logs_reprs_or_messages(realm: Realm, caplog: pytest.LogCaptureFixture) -> None:
    realm.token_auth_methods = ["client_secret_basic"]  # the registration gets a secret
    caplog.set_level(logging.DEBUG)
    auth = oauth()
    assert post(realm, auth).status_code == 200
    realm.revoke_access()
    assert post(realm, auth).status_code == 200  # a refresh too
    realm.revoke_access()
    realm.revoke_refresh()
    realm.iss = "https://evil.example.com"
    with pytest.raises(mt.OAuthError) as caught:
        post(realm, auth)
    issued = realm.secrets_issued()
    assert len(issued) >= 5 and any(c.get("client_secret") for c in realm.clients.values())
    text = caplog.text + repr(auth) + repr(auth.store) + str(caught.value) + repr(caught.value)
    assert "oauth:" in caplog.text
    leaked = [secret for secret in issued if secret in text]
    assert leaked == []


def test_file_store_keeps_tokens_owner_only_and_across_runs(realm: Realm, tmp_path: Path) -> None:
    path = tmp_path / "config" / "tokens.json"
    person = Person()
    assert post(realm, oauth(person, store=mt.FileTokenStore(path))).status_code == 200
    assert post(realm, oauth(person, store=mt.FileTokenStore(path))).status_code == 200
    assert person.asked == 1  # the second run found the token in the file
    if os.name != "nt":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert isinstance(json.loads(path.read_text()), dict)


def test_file_store_rejects_a_corrupt_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        mt.FileTokenStore(path).get("x")


def test_default_store_is_in_the_config_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("APPDATA", str(tmp_path))
    store = mt.FileTokenStore.default()
    assert store.path.name == "tokens.json" and "mcp_tasks" in store.path.parts


def test_the_default_authorize_step_catches_the_redirect_on_loopback(realm: Realm) -> None:
    browsers: list[threading.Thread] = []

    def browser(url: str) -> None:  # what a browser does with the link: follow every redirect
        thread = threading.Thread(target=lambda: requests.get(url, timeout=10), name="browser")
        browsers.append(thread)
        thread.start()

    step = LoopbackAuthorize(timeout=20, show=browser)
    auth = mt.OAuth(authorize=step)
    step.redirect_uri = None  # OAuth picks the redirect URI; the step must be told it
    # wire the step to the redirect URI the OAuth object registers
    original = auth._redirect_uri

    def told(client: Any) -> str:
        uri = original(client)
        step.redirect_uri = uri
        return uri

    auth._redirect_uri = told  # type: ignore[method-assign]
    assert post(realm, auth).status_code == 200
    for thread in browsers:
        thread.join(10)
    assert realm.counts["token:authorization_code"] == 1


def test_constructor_checks_its_options() -> None:
    with pytest.raises(ValueError, match="grant"):
        mt.OAuth(grant="password")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="client_metadata_url"):
        mt.OAuth(client_metadata_url="http://example.com/c.json")
    with pytest.raises(ValueError, match="client_id"):
        mt.OAuth(client_secret="s")
    with pytest.raises(TypeError, match="store"):
        mt.OAuth(store=object())  # type: ignore[arg-type]


def test_www_authenticate_parsing() -> None:
    header = (
        'Basic realm="x", Bearer error="insufficient_scope", scope="a b", resource_metadata="https://h/p?q=\\"1\\""'
    )
    assert bearer_challenge(header) == {
        "error": "insufficient_scope",
        "scope": "a b",
        "resource_metadata": 'https://h/p?q="1"',
    }
    assert [scheme for scheme, _ in parse_challenges(header)] == ["basic", "bearer"]
    assert bearer_challenge("Basic realm=x") is None and bearer_challenge(None) is None
    assert bearer_challenge("Bearer") == {}


def test_resource_matching() -> None:
    assert resource_matches("https://h.example/mcp", "https://h.example/mcp")
    assert resource_matches("https://h.example", "https://h.example/mcp")
    assert resource_matches("https://H.example/", "https://h.example/mcp")
    assert not resource_matches("https://h.example/mc", "https://h.example/mcp")
    assert not resource_matches("https://evil.example/mcp", "https://h.example/mcp")
    assert not resource_matches("http://h.example/mcp", "https://h.example/mcp")
