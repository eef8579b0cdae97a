"""The signed grants of mcp_tasks.OAuth (the mcp_tasks[jwt] extra) against tests/oauth/realm.py on
127.0.0.1, which checks the signatures with `cryptography` itself: private_key_jwt, DPoP with the
nonces of both servers, workload identity (the JWT-bearer grant) and enterprise-managed
authorization (the identity provider's token exchange, then the JWT-bearer grant)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

import mcp_tasks as mt
from mcp_tasks._oauth.jose import load_private_key
from tests.oauth.realm import Realm, read_jwt
from tests.oauth.test_oauth import CALL, Person, oauth, post


@pytest.fixture
def realm() -> Iterator[Realm]:
    made = Realm()
    yield made
    made.close()


def new_key() -> tuple[str, ec.EllipticCurvePublicKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return pem, key.public_key()


def test_private_key_jwt_authenticates_a_backend_without_a_secret(realm: Realm, tmp_path: Path) -> None:
    pem, public = new_key()
    realm.client_keys["reports-job"] = public
    path = tmp_path / "key.pem"
    path.write_text(pem)
    for source in (pem, pem.encode(), path, str(path)):
        auth = mt.OAuth(client_id="reports-job", private_key=source, private_key_id="k1", grant="client_credentials")
        assert post(realm, auth).status_code == 200
    assert realm.counts["private_key_jwt"] == 4 and realm.client_secrets_seen == []
    assert realm.errors == []


def test_a_key_the_server_does_not_know_is_refused(realm: Realm) -> None:
    pem, _ = new_key()
    realm.client_keys["reports-job"] = new_key()[1]  # another key
    auth = mt.OAuth(client_id="reports-job", private_key=pem, grant="client_credentials")
    with pytest.raises(mt.OAuthError, match="invalid_client"):
        post(realm, auth)
    assert pem not in repr(auth)


def test_dpop_binds_the_token_and_proves_every_request_with_both_nonces(realm: Realm) -> None:
    realm.dpop = True
    realm.dpop_nonce = "as-nonce-1"
    realm.rs_dpop_nonce = "rs-nonce-1"
    person = Person()
    auth = oauth(person, dpop=True)
    with mt.Client.http(realm.url, auth=auth, timeout=10) as client:
        for _ in range(3):
            assert client.request("tools/list")["tools"] == []
    assert person.asked == 1
    assert realm.counts["token:nonce-challenge"] == 1 and realm.counts["mcp:nonce-challenge"] == 1
    assert len(realm.bound) == 1 and realm.errors == ["no nonce"]
    assert len(realm.proof_ids) >= 3 and len(set(realm.proof_ids)) == len(realm.proof_ids)  # fresh each time
    # plain requests too, and a refresh is proved as well
    realm.revoke_access()
    response = requests.post(realm.url, json=CALL, auth=auth, timeout=10)
    assert response.status_code == 200 and response.request.headers["Authorization"].startswith("DPoP ")
    assert realm.counts["token:refresh_token"] == 1 and len(realm.bound) == 2, (realm.counts, realm.errors)


def test_a_token_bound_to_another_runs_key_is_not_sent(realm: Realm) -> None:
    realm.dpop = True
    store = mt.MemoryTokenStore()
    person = Person()
    assert post(realm, oauth(person, dpop=True, store=store)).status_code == 200
    assert post(realm, oauth(person, dpop=True, store=store)).status_code == 200  # a new key: a new sign-in
    assert person.asked == 2 and realm.counts["token:refresh_token"] == 0
    assert not any("without its proof" in why for why in realm.errors)


def test_workload_identity_uses_the_jwt_bearer_grant_with_a_fresh_assertion(realm: Realm) -> None:
    issued: list[str] = []

    def workload_jwt() -> str:
        token = f"header.workload-{len(issued)}.sig"
        issued.append(token)
        realm.assertions.add(token)
        return token

    auth = mt.OAuth(grant="jwt_bearer", assertion=workload_jwt)
    assert post(realm, auth).status_code == 200
    realm.revoke_access()
    realm.revoke_refresh()
    assert post(realm, auth).status_code == 200
    assert len(issued) == 2 and realm.counts["token:urn:ietf:params:oauth:grant-type:jwt-bearer"] == 2


def test_a_refused_assertion_is_an_error_and_not_retried(realm: Realm) -> None:
    auth = mt.OAuth(client_id="workload", grant="jwt_bearer", assertion="a.b.c")
    with pytest.raises(mt.OAuthError, match="invalid_grant"):
        post(realm, auth)
    assert realm.counts["token:urn:ietf:params:oauth:grant-type:jwt-bearer"] == 1
    with pytest.raises(mt.OAuthError, match="JWT"):
        post(realm, mt.OAuth(grant="jwt_bearer", assertion=lambda: "not a jwt"))


def test_enterprise_managed_exchanges_the_id_token_at_the_identity_provider(realm: Realm) -> None:
    realm.token_auth_methods = ["client_secret_basic"]
    realm.id_tokens.add("id.token-of-ada.sig")
    auth = mt.OAuth(
        client_id="xaa-client",
        client_secret="xaa-secret",
        grant="enterprise_managed",
        id_token="id.token-of-ada.sig",
        idp_token_endpoint=f"{realm.base}/idp/token",
        idp_client_id="idp-client",
    )
    with mt.Client.http(realm.url, auth=auth, timeout=10) as client:
        assert client.request("tools/list")["tools"] == []
    assert realm.counts["idp:token-exchange"] == 1 and realm.counts["token:id-jag"] == 1
    assert realm.counts["id-jag-client:xaa-client"] == 1 and realm.client_secrets_seen == ["xaa-secret"]


def test_an_id_token_the_identity_provider_refuses_is_an_error(realm: Realm) -> None:
    auth = mt.OAuth(
        client_id="xaa-client",
        client_secret="xaa-secret",
        grant="enterprise_managed",
        id_token=lambda: "id.unknown.sig",
        idp_token_endpoint=f"{realm.base}/idp/token",
    )
    with pytest.raises(mt.OAuthError, match="identity provider"):
        post(realm, auth)
    assert realm.counts["token:urn:ietf:params:oauth:grant-type:jwt-bearer"] == 0


def test_the_options_go_together() -> None:
    pem, _ = new_key()
    with pytest.raises(ValueError, match="client_id"):
        mt.OAuth(private_key=pem, grant="client_credentials")
    with pytest.raises(ValueError, match="private_key"):
        mt.OAuth(client_id="c", private_key_id="k", client_secret="s", grant="client_credentials")
    with pytest.raises(ValueError, match="assertion"):
        mt.OAuth(grant="jwt_bearer")
    with pytest.raises(ValueError, match="assertion"):
        mt.OAuth(assertion="a.b.c")
    with pytest.raises(ValueError, match="idp_token_endpoint"):
        mt.OAuth(client_id="c", grant="enterprise_managed", id_token="a.b.c")
    with pytest.raises(ValueError, match="not an unencrypted PEM"):
        mt.OAuth(client_id="c", private_key=b"-----BEGIN PRIVATE KEY-----\nnope\n", grant="client_credentials")
    with pytest.raises(ValueError, match="cannot read"):
        mt.OAuth(client_id="c", private_key="/nonexistent/key.pem", grant="client_credentials")


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    pem, _ = new_key()
    monkeypatch.setitem(sys.modules, "cryptography", None)  # as if it were not installed
    for options in (
        {"client_id": "c", "private_key": pem, "grant": "client_credentials"},
        {"dpop": True},
        {"grant": "jwt_bearer", "assertion": "a.b.c"},
    ):
        with pytest.raises(ImportError, match=r"mcp_tasks\[jwt\]"):
            mt.OAuth(**options)


def test_the_realm_checks_what_it_is_sent() -> None:
    """The realm's own JWT reader refuses a forged signature (so the tests above can fail)."""
    pem, public = new_key()
    token = load_private_key(pem).sign({}, {"iss": "c"})
    assert read_jwt(token, public)[1] == {"iss": "c"}
    header, claims, _ = token.split(".")
    with pytest.raises(ValueError, match="verify"):
        read_jwt(f"{header}.{claims}.{'A' * 86}", public)


def run_cli(realm: Realm, home: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    home.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "mcp_tasks", "tools", realm.url, "--oauth", *flags],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "XDG_CONFIG_HOME": str(home), "HOME": str(home)},
        cwd=home,
    )


def test_the_cli_signs_with_a_key_and_takes_a_workload_jwt_from_a_file(realm: Realm, tmp_path: Path) -> None:
    pem, public = new_key()
    realm.client_keys["cli"] = public
    key = tmp_path / "key.pem"
    key.write_text(pem)
    done = run_cli(realm, tmp_path / "a", "--client-id", "cli", "--private-key", str(key), "--private-key-id", "k1")
    assert done.returncode == 0, done.stderr
    assert realm.counts["private_key_jwt"] == 1
    workload = tmp_path / "token.jwt"
    workload.write_text("h.workload.s\n")
    realm.assertions.add("h.workload.s")
    done = run_cli(realm, tmp_path / "b", "--assertion-file", str(workload))
    assert done.returncode == 0, done.stderr
    assert realm.counts["token:urn:ietf:params:oauth:grant-type:jwt-bearer"] == 1
    refused = run_cli(realm, tmp_path / "c", "--client-id", "cli", "--private-key", str(tmp_path / "absent.pem"))
    assert refused.returncode == 2 and "cannot read" in refused.stderr and "Traceback" not in refused.stderr


def test_the_cli_takes_the_enterprise_grant_with_secrets_from_files(realm: Realm, tmp_path: Path) -> None:
    realm.token_auth_methods = ["client_secret_basic"]
    realm.id_tokens.add("id.token-of-ada.sig")
    files = {"id.jwt": "id.token-of-ada.sig\n", "as.secret": "xaa-secret\n", "idp.secret": "idp-secret\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    flags = ["--grant", "enterprise_managed", "--client-id", "xaa-client"]
    flags += ["--client-secret-file", str(tmp_path / "as.secret"), "--id-token-file", str(tmp_path / "id.jwt")]
    flags += ["--idp-token-endpoint", f"{realm.base}/idp/token", "--idp-client-id", "idp-client"]
    done = run_cli(realm, tmp_path / "home", *flags, "--idp-client-secret-file", str(tmp_path / "idp.secret"))
    assert done.returncode == 0, done.stderr
    assert realm.idp_secrets_seen == [("idp-client", "idp-secret")] and realm.client_secrets_seen == ["xaa-secret"]
    assert "idp-secret" not in done.stderr and "xaa-secret" not in done.stderr
    empty = tmp_path / "empty"
    empty.write_text("\n")
    refused = run_cli(realm, tmp_path / "home2", *flags, "--idp-client-secret-file", str(empty))
    assert refused.returncode == 2 and "--idp-client-secret-file" in refused.stderr and "empty" in refused.stderr
