"""mcp_tasks.OAuth used the way backends use it (tests/oauth/realm.py on 127.0.0.1): many threads
under their own deadlines, secrets kept to their issuer, short-lived tokens, processes sharing one
token file, and nothing of a query string in the logs."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
import requests

import mcp_tasks as mt
from mcp_tasks._clock import Deadline
from mcp_tasks._oauth.filelock import locked
from tests.oauth.realm import Realm, follow
from tests.oauth.test_oauth import CALL, Person, oauth, post


@pytest.fixture
def realm() -> Iterator[Realm]:
    made = Realm()
    yield made
    made.close()


class PendingPerson:
    """A person who has the sign-in page open and has not finished yet (until `release`)."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.release = threading.Event()

    def __call__(self, url: str) -> str:
        self.asked.set()
        self.release.wait(30)
        return follow(url)


def test_twenty_threads_with_short_timeouts_do_not_wait_on_a_pending_sign_in(realm: Realm) -> None:
    person = PendingPerson()
    auth = mt.OAuth(authorize=person, redirect_uri="http://127.0.0.1:9/callback")
    signed_in: list[object] = []

    def sign_in() -> None:
        with mt.Client.http(realm.url, auth=auth, timeout=60) as client:
            signed_in.append(client.request("tools/list"))

    leader = threading.Thread(target=sign_in, name="signing-in")
    leader.start()
    assert person.asked.wait(10)
    outcomes: list[tuple[str, float]] = []
    lock = threading.Lock()

    def impatient() -> None:
        with mt.Client.http(realm.url, auth=auth, timeout=0.5) as client:
            started = time.monotonic()
            try:
                client.request("tools/list")
                outcome = "answered"
            except mt.RequestTimeout:
                outcome = "timeout"
            elapsed = time.monotonic() - started
        with lock:
            outcomes.append((outcome, elapsed))

    threads = [threading.Thread(target=impatient, name=f"impatient-{n}") for n in range(20)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
    finally:
        person.release.set()
        leader.join(30)
    assert [outcome for outcome, _ in outcomes] == ["timeout"] * 20
    slowest = max(elapsed for _, elapsed in outcomes)
    assert slowest < 0.6, f"a 0.5 s call took {slowest:.3f} s behind another thread's sign-in"
    assert len(signed_in) == 1  # the sign-in itself went on and finished
    assert realm.counts["token:authorization_code"] == 1


def test_a_refresh_before_sending_is_bounded_by_the_calls_deadline(realm: Realm) -> None:
    store = mt.MemoryTokenStore()
    assert post(realm, oauth(store=store)).status_code == 200
    (key,) = store._records
    record = store.get(key)
    assert record is not None
    store.set(key, {**record, "expires_at": time.time() - 1})  # expired (as a later run finds it)
    realm.token_gate = threading.Event()  # the token endpoint does not answer while the call waits
    client = mt.Client.http(realm.url, auth=oauth(store=store, timeout=60.0), timeout=0.5)
    with client, pytest.raises(mt.RequestTimeout):
        client.request("tools/list")
    # the call gave up while the token endpoint still held the refresh (not after the OAuth's 60 s)
    assert realm.counts["token:gate-passed"] == 0
    assert realm.counts["token:refresh_token"] == 1


def backend(**options: object) -> mt.OAuth:
    return mt.OAuth(client_id="reports-job", client_secret="s3cret-value", grant="client_credentials", **options)  # type: ignore[arg-type]


def test_a_preregistered_secret_stays_with_the_first_issuer(realm: Realm) -> None:
    realm.token_auth_methods = ["client_secret_basic"]
    untrusted = Realm()
    try:
        auth = backend()
        assert post(realm, auth).status_code == 200
        assert realm.client_secrets_seen == ["s3cret-value"]
        with pytest.raises(mt.OAuthError, match="belongs to") as caught:
            post(untrusted, auth)
        assert untrusted.base in str(caught.value) and realm.base in str(caught.value)
        assert untrusted.client_secrets_seen == [] and "s3cret" not in str(caught.value)
    finally:
        untrusted.close()


def test_a_resource_that_moves_to_another_authorization_server_gets_no_secret(realm: Realm) -> None:
    other = Realm()
    try:
        auth = backend(issuer=realm.base)
        realm.authorization_server = other.base  # the resource now names another server
        with pytest.raises(mt.OAuthError, match="belongs to"):
            post(realm, auth)
        assert other.client_secrets_seen == [] and other.counts["token:client_credentials"] == 0
    finally:
        other.close()


def test_the_2025_fallback_gets_a_secret_only_when_named(realm: Realm) -> None:
    realm.prm_enabled = False
    realm.metadata_enabled = False  # the server is its own authorization server, at /token
    with pytest.raises(mt.OAuthError, match="2025-03-26"):
        post(realm, backend())
    assert realm.client_secrets_seen == []
    assert post(realm, backend(issuer=realm.base)).status_code == 200
    assert realm.client_secrets_seen == ["s3cret-value"]


def test_issuer_is_checked() -> None:
    with pytest.raises(ValueError, match="issuer"):
        backend(issuer="not a url")
    with pytest.raises(ValueError, match="client_id"):
        mt.OAuth(issuer="https://as.example.com")


def test_a_short_lived_token_is_used_most_of_its_life(realm: Realm) -> None:
    realm.expires_in = 20  # under the 30 s margin: it used to be refreshed before every request
    auth = oauth()
    for _ in range(5):
        assert post(realm, auth).status_code == 200
    assert realm.counts["token:refresh_token"] == 0
    assert realm.counts["token:authorization_code"] == 1


def run_in_another_process(code: str) -> str:
    """Run `code` in a fresh Python with this tree first on its path; its stdout."""
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


ANOTHER_RUN = """
import requests, sys
import mcp_tasks as mt
auth = mt.OAuth(authorize=lambda url: sys.exit("asked the person"), redirect_uri="http://127.0.0.1:9/callback",
                store=mt.FileTokenStore({path!r}))
response = requests.post({url!r}, json={{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}, auth=auth, timeout=30)
print(response.status_code)
"""


def test_two_processes_share_one_token_file_through_a_rotation(realm: Realm, tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    person = Person()
    auth = oauth(person, store=mt.FileTokenStore(path))
    assert post(realm, auth).status_code == 200
    realm.revoke_access()
    # Another process (a CLI run) refreshes first, and the server rotates the refresh token.
    assert run_in_another_process(ANOTHER_RUN.format(path=str(path), url=realm.url)).strip() == "200"
    assert realm.counts["token:refresh_token"] == 1
    # This process reads the record again before refreshing, and takes the new token.
    assert post(realm, auth).status_code == 200
    assert realm.counts["token:refresh_token"] == 1 and person.asked == 1
    (record,) = json.loads(path.read_text()).values()
    assert record["access_token"] in realm.access and record["refresh_token"] in realm.refresh


def test_a_failed_renewal_leaves_the_stored_tokens(realm: Realm, tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    assert post(realm, oauth(store=mt.FileTokenStore(path))).status_code == 200
    before = json.loads(path.read_text())
    realm.revoke_access()
    realm.revoke_refresh()

    def away(url: str) -> str:
        raise mt.OAuthError("the person closed the tab")

    with pytest.raises(mt.OAuthError, match="closed the tab"):
        post(realm, mt.OAuth(authorize=away, redirect_uri="http://127.0.0.1:9/callback", store=mt.FileTokenStore(path)))
    assert json.loads(path.read_text()) == before  # not replaced by a record without tokens


LOCKED_WRITER = """
import sys
import mcp_tasks as mt
print("writing", flush=True)
mt.FileTokenStore({path!r}).set("theirs", {{"access_token": "b"}})
"""


def test_a_write_from_another_process_waits_for_the_lock_and_keeps_both_records(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    store = mt.FileTokenStore(path)
    store.set("first", {"access_token": "0"})
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    with locked(path):
        child = subprocess.Popen(
            [sys.executable, "-c", LOCKED_WRITER.format(path=str(path))], env=env, stdout=subprocess.PIPE, text=True
        )
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "writing"
            # While this process holds the lock, it writes what it read before the other one did.
            store._write({"first": {"access_token": "0"}, "ours": {"access_token": "a"}})
        except BaseException:
            child.kill()
            child.wait()
            raise
    assert child.wait(60) == 0
    assert child.stdout is not None
    child.stdout.close()
    assert set(json.loads(path.read_text())) == {"first", "ours", "theirs"}


def test_no_query_string_reaches_the_logs(realm: Realm, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    auth = oauth()
    with mt.Client.http(realm.url + "?api_key=query-secret-1", auth=auth, timeout=10) as client:
        client.request("tools/list")
    realm.revoke_access()
    assert requests.post(realm.url + "?api_key=query-secret-2", json=CALL, auth=auth, timeout=10).status_code == 200
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("mcp_tasks"))
    assert "oauth: authorized" in ours and "oauth: refreshed" in ours
    assert "query-secret" not in ours  # (urllib3's own debug lines are its own)


def cli_with_oauth(realm: Realm, home: Path, *flags: str, env: dict[str, str] | None = None) -> str:
    home.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "mcp_tasks", "tools", realm.url, "--oauth", "--client-id", "cli", *flags],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "XDG_CONFIG_HOME": str(home), "HOME": str(home), **(env or {})},
        cwd=home,
    )
    assert done.returncode == 0, done.stderr
    assert "s3cret-value" not in done.stdout + done.stderr
    return done.stderr


def test_the_cli_reads_the_client_secret_from_a_file_or_the_environment(realm: Realm, tmp_path: Path) -> None:
    realm.token_auth_methods = ["client_secret_basic"]
    secret_file = tmp_path / "secret"
    secret_file.write_text("s3cret-value\n")
    cli_with_oauth(realm, tmp_path / "a", "--client-secret-file", str(secret_file), "--issuer", realm.base)
    cli_with_oauth(realm, tmp_path / "b", env={"MCP_TASKS_CLIENT_SECRET": "s3cret-value"})
    assert realm.counts["token:client_credentials"] == 2
    assert realm.client_secrets_seen == ["s3cret-value", "s3cret-value"]


def test_the_cli_refuses_two_secrets_and_an_unreadable_file(tmp_path: Path) -> None:
    base = [sys.executable, "-m", "mcp_tasks", "tools", "http://127.0.0.1:9/mcp", "--oauth", "--client-id", "x"]
    both = subprocess.run(
        [*base, "--client-secret", "a", "--client-secret-file", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert both.returncode == 2 and "not both" in both.stderr
    missing = subprocess.run(
        [*base, "--client-secret-file", str(tmp_path / "absent")], capture_output=True, text=True, timeout=60
    )
    assert missing.returncode == 2 and "--client-secret-file" in missing.stderr and "Traceback" not in missing.stderr


def test_no_query_string_or_user_info_in_error_messages(realm: Realm) -> None:
    realm.prm_resource = "http://127.0.0.1:1/elsewhere"
    url = realm.url.replace("http://", "http://user:pass-secret@") + "?api_key=query-secret"
    with pytest.raises(mt.OAuthError, match="elsewhere") as caught:
        requests.post(url, json=CALL, auth=oauth(), timeout=10)
    assert "query-secret" not in str(caught.value) and "pass-secret" not in str(caught.value)


class SecondTry(requests.auth.AuthBase):
    """Any auth object with ``auth_flow`` (no OAuth): a wrong token, then on the 401 the right one.
    (An `AuthBase` for the type checker; the transport drives `auth_flow`, never `__call__`.)"""

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        raise AssertionError("the transport should drive auth_flow")

    def __init__(self, token: str) -> None:
        self.token = token
        self.deadlines: list[float | None] = []

    def auth_flow(
        self, request: requests.PreparedRequest, deadline: Deadline
    ) -> Generator[requests.PreparedRequest, requests.Response, None]:
        self.deadlines.append(deadline.timeout)
        request.headers["Authorization"] = "Bearer wrong"
        response = yield request
        if response.status_code == 401:
            again = request.copy()
            again.headers["Authorization"] = f"Bearer {self.token}"
            yield again


def test_the_transport_drives_any_auth_flow_under_the_calls_deadline(realm: Realm) -> None:
    realm.access["static-token"] = {"mcp"}
    auth = SecondTry("static-token")
    with mt.Client.http(realm.url, auth=auth, timeout=7) as client:
        assert client.request("tools/list")["tools"] == []
    assert realm.counts["mcp:401"] >= 1 and realm.counts["mcp:200"] >= 1
    assert auth.deadlines and set(auth.deadlines) == {7}
