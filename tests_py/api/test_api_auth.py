"""The authentication matrix through the real app: every refusal is a 401 problem with a
Bearer challenge, an unknown OIN is 403, another DV's notification is 404."""

import base64
import hashlib
import hmac
import json
import time
import uuid

import httpx
import jwt
import pytest
from apitest import AUDIENCE, BASE, ISSUER, OIN_A, OIN_B, OIN_UNKNOWN, auth, decentraal, token
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

DECENTRAAL = f"{BASE}/decentraal/notificaties"


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def claims(**overrides):
    now = int(time.time())
    base = {"iss": ISSUER, "aud": AUDIENCE, "oin": OIN_A, "iat": now, "nbf": now, "exp": now + 300}
    base.update(overrides)
    return base


def unsigned(header: dict, payload: dict, signature: bytes = b"") -> str:
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(payload).encode())}"
    return f"{signing_input}.{b64url(signature)}"


def dev_public_pem(api_env) -> bytes:
    key = serialization.load_pem_private_key(
        (api_env.secrets / "dev-iam-key.pem").read_bytes(), password=None
    )
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def dev_kid(api_env) -> str:
    return json.loads((api_env.secrets / "jwks.json").read_text())["keys"][0]["kid"]


def hs256_with_public_key(api_env) -> str:
    """The classic confusion attack: HS256 with the verifier's public key as the secret."""
    header = {"alg": "HS256", "typ": "JWT", "kid": dev_kid(api_env)}
    signing_input = unsigned(header, claims()).rsplit(".", 1)[0]
    mac = hmac.new(dev_public_pem(api_env), signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64url(mac)}"


def unknown_kid() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    return jwt.encode(claims(), key, algorithm="ES256", headers={"kid": "onbekende-sleutel"})


def signed_by_another_key_with_the_known_kid(api_env) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    return jwt.encode(claims(), key, algorithm="ES256", headers={"kid": dev_kid(api_env)})


CASES = {
    "malformed": lambda env: "dit-is-geen-jwt",
    "two parts": lambda env: "abc.def",
    "expired": lambda env: token(now=time.time() - 3600, lifetime_seconds=300),
    "not yet valid": lambda env: token(now=time.time() + 3600),
    "wrong issuer": lambda env: token(issuer="https://iam.elders.test"),
    "wrong audience": lambda env: token(audience="een-andere-api"),
    "alg none": lambda env: unsigned({"alg": "none", "typ": "JWT"}, claims()),
    "alg none with kid": lambda env: unsigned({"alg": "none", "kid": dev_kid(env)}, claims()),
    "hs256 with the public key": hs256_with_public_key,
    "unknown kid": lambda env: unknown_kid(),
    "bad signature": signed_by_another_key_with_the_known_kid,
    "no oin": lambda env: token(extra_claims={"oin": None}),
    "oin not 20 digits": lambda env: token(extra_claims={"oin": "123"}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_tokens_are_401(client, api_env, case):
    bearer = CASES[case](api_env)
    for method, path, kwargs in (
        ("POST", DECENTRAAL, {"json": decentraal()}),
        ("GET", f"{BASE}/notificaties/{uuid.uuid4()}", {}),
    ):
        response = client.request(
            method, path, headers={"Authorization": f"Bearer {bearer}"}, **kwargs
        )
        assert response.status_code == 401, case
        problem = response.json()
        assert problem["type"].endswith("/niet-geauthenticeerd")
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith('Bearer realm="nmc"')
        assert 'error="invalid_token"' in challenge
        assert bearer not in response.text


def test_no_token_is_401_with_a_bare_challenge(client):
    response = client.post(DECENTRAAL, json=decentraal())
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="nmc"'


@pytest.mark.parametrize("header", ["Basic dXNlcjpwdw==", "Bearer", "Bearer ", "token abc"])
def test_other_schemes_are_401(client, header):
    response = client.post(DECENTRAAL, json=decentraal(), headers={"Authorization": header})
    assert response.status_code == 401


def test_authentication_comes_before_input_checks(client):
    response = client.post(DECENTRAAL, content=b"geen json", headers={"Content-Type": "text/x"})
    assert response.status_code == 401


def test_unknown_oin_is_403(client, conn):
    for method, path, kwargs in (
        ("POST", DECENTRAAL, {"json": decentraal()}),
        ("GET", f"{BASE}/notificaties/{uuid.uuid4()}", {}),
        ("GET", f"{BASE}/notificaties", {"params": {"dvRef": "x"}}),
        ("DELETE", f"{BASE}/notificaties/{uuid.uuid4()}", {}),
    ):
        response = client.request(method, path, headers=auth(OIN_UNKNOWN), **kwargs)
        assert response.status_code == 403
        assert response.json()["type"].endswith("/geen-toegang")
    assert conn.execute("SELECT count(*) FROM nmc.notificatie").fetchone()[0] == 0


def test_a_deactivated_dv_cannot_deliver(client, apply_dv, conn):
    oin = "00000001005005005000"
    apply_dv(oin)
    assert client.post(DECENTRAAL, json=decentraal(), headers=auth(oin)).status_code == 202
    apply_dv(oin, actief=False)
    # The OIN lookup is cached, but the intake itself refuses an inactive DV (NM010).
    response = client.post(DECENTRAAL, json=decentraal(), headers=auth(oin))
    assert response.status_code == 403


def test_another_dvs_id_is_404(client):
    response = client.post(DECENTRAAL, json=decentraal(), headers=auth(OIN_B))
    other = response.json()["notificatieId"]
    assert client.get(f"{BASE}/notificaties/{other}", headers=auth(OIN_A)).status_code == 404
    assert client.delete(f"{BASE}/notificaties/{other}", headers=auth(OIN_A)).status_code == 404
    assert client.get(f"{BASE}/notificaties/{other}", headers=auth(OIN_B)).status_code == 200


@pytest.mark.parametrize("alg", ["RS256", "PS256"])
def test_rsa_tokens_from_a_jwks_are_accepted(api_env, dvs, monkeypatch, alg):
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm
    from starlette.testclient import TestClient

    from nmc.api.app import create_app

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = {**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "rsa-1"}
    jwks = api_env.secrets / "rsa-jwks.json"
    jwks.write_text(json.dumps({"keys": [jwk]}))
    monkeypatch.setenv("NMC_OAUTH_JWKS_FILE", str(jwks))
    bearer = jwt.encode(claims(), key, algorithm=alg, headers={"kid": "rsa-1"})
    with TestClient(create_app()) as client:
        response = client.post(
            DECENTRAAL, json=decentraal(), headers={"Authorization": f"Bearer {bearer}"}
        )
        assert response.status_code == 202


def test_two_authorization_headers_are_401(client):
    # Which of the two would count is a guess between proxies and the NMC: refuse both.
    headers = [("Authorization", f"Bearer {token(OIN_A)}"), ("Authorization", "Bearer x.y.z")]
    for pair in (headers, headers[::-1], [headers[0], headers[0]]):
        response = client.post(DECENTRAAL, json=decentraal(), headers=httpx.Headers(pair))
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"].startswith('Bearer realm="nmc"')
    assert client.post(DECENTRAAL, json=decentraal(), headers=auth()).status_code == 202
