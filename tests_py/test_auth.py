"""Unit tests of nmc.auth.bearer (bearer verification), nmc.auth.jwks_cache and the dev token issuer
(nmc.admin.dev_iam)."""

import asyncio
import base64
import hashlib
import hmac
import json
import stat
import time

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from nmc.admin.dev_iam import DevIamNotConfigured, dev_jwks, generate_dev_iam_key, issue_dev_token
from nmc.auth.bearer import AuthSettings, BearerVerifier
from nmc.auth.errors import AuthConfigError, JwksUnavailable, Unauthenticated
from nmc.auth.jwks_cache import INITIAL_RETRY_SECONDS
from nmc.settings_env import SettingError

ISSUER = "https://iam.moza.test"
AUDIENCE = "nmc"
OIN = "00000001823288444000"
JWKS_URL = "https://iam.moza.test/.well-known/jwks.json"
JTI = "t-1"


@pytest.fixture(scope="module")
def rsa_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def ec_key():
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture(scope="module")
def other_ec_key():
    return ec.generate_private_key(ec.SECP256R1())


def public_jwk(private_key, kid, **extra):
    algorithm = RSAAlgorithm if isinstance(private_key, rsa.RSAPrivateKey) else ECAlgorithm
    return {**algorithm.to_jwk(private_key.public_key(), as_dict=True), "kid": kid, **extra}


def claims(**overrides):
    now = int(time.time())
    base = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "exp": now + 300,
        "iat": now,
        "oin": OIN,
        "sub": "client-1",
        "jti": JTI,
    }
    base.update(overrides)
    return {k: val for k, val in base.items() if val is not ...}


def token(key, alg="ES256", kid="ec-1", headers=None, **claim_overrides):
    return jwt.encode(
        claims(**claim_overrides),
        key,
        algorithm=alg,
        headers={"kid": kid, **(headers or {})} if kid else headers,
    )


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def hand_made_token(header: dict, payload: dict, signature: bytes = b"") -> str:
    signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(payload).encode())
    return signing_input + "." + b64url(signature)


@pytest.fixture
def jwks_file(tmp_path, rsa_key, ec_key):
    path = tmp_path / "jwks.json"
    path.write_text(
        json.dumps({"keys": [public_jwk(rsa_key, "rsa-1"), public_jwk(ec_key, "ec-1")]}),
        encoding="utf-8",
    )
    return path


@pytest.fixture
def verifier(jwks_file):
    return BearerVerifier(AuthSettings(ISSUER, AUDIENCE, jwks_file=str(jwks_file)))


async def reason_of(verifier, tok):
    with pytest.raises(Unauthenticated) as info:
        await verifier.verify(tok)
    return info.value.reason


# --------------------------------------------------------------------------------------------
# Accepted tokens


@pytest.mark.parametrize(
    ("alg", "kid"), [("ES256", "ec-1"), ("RS256", "rsa-1"), ("PS256", "rsa-1")]
)
async def test_valid_tokens(verifier, rsa_key, ec_key, alg, kid):
    key = ec_key if alg == "ES256" else rsa_key
    principal = await verifier.verify(token(key, alg, kid))
    assert principal.oin == OIN
    assert principal.subject == "client-1"
    assert principal.token_id == JTI
    assert principal.expires_at > time.time()


async def test_verify_header(verifier, ec_key):
    principal = await verifier.verify_header("Bearer " + token(ec_key))
    assert principal.oin == OIN
    assert (await verifier.verify_header("bearer  " + token(ec_key))).oin == OIN


async def test_audience_list_containing_ours(verifier, ec_key):
    assert (await verifier.verify(token(ec_key, aud=["other", AUDIENCE]))).oin == OIN


async def test_leeway_of_30_seconds(verifier, ec_key):
    now = int(time.time())
    assert await verifier.verify(token(ec_key, exp=now - 20))
    assert await verifier.verify(token(ec_key, nbf=now + 20))


async def test_custom_oin_claim(jwks_file, ec_key):
    settings = AuthSettings(ISSUER, AUDIENCE, jwks_file=str(jwks_file), oin_claim="urn:oin")
    v = BearerVerifier(settings)
    assert (await v.verify(token(ec_key, oin=..., **{"urn:oin": OIN}))).oin == OIN
    assert await reason_of(v, token(ec_key)) == "token bevat geen geldig OIN"


# --------------------------------------------------------------------------------------------
# Refused tokens


async def test_missing_header_is_a_bare_challenge(verifier):
    for value in (None, ""):
        with pytest.raises(Unauthenticated) as info:
            await verifier.verify_header(value)
        assert info.value.token_present is False


@pytest.mark.parametrize("value", ["Basic dXNlcjpwdw==", "Bearer", "Bearer   ", "Token abc"])
async def test_other_schemes_are_refused(verifier, value):
    with pytest.raises(Unauthenticated) as info:
        await verifier.verify_header(value)
    assert info.value.token_present is True


async def test_expired(verifier, ec_key):
    assert (
        await reason_of(verifier, token(ec_key, exp=int(time.time()) - 31)) == "token is verlopen"
    )


async def test_not_yet_valid(verifier, ec_key):
    tok = token(ec_key, nbf=int(time.time()) + 60)
    assert await reason_of(verifier, tok) == "token is nog niet geldig"


async def test_wrong_issuer_and_audience(verifier, ec_key):
    assert "iss" in await reason_of(verifier, token(ec_key, iss="https://evil.test"))
    assert "aud" in await reason_of(verifier, token(ec_key, aud="iemand-anders"))


@pytest.mark.parametrize("missing", ["exp", "iss", "aud"])
async def test_required_claims(verifier, ec_key, missing):
    reason = await reason_of(verifier, token(ec_key, **{missing: ...}))
    assert reason in (
        "verplichte claim ontbreekt",
        "onjuiste uitgever (iss)",
        "onjuiste audience (aud)",
    )


@pytest.mark.parametrize(
    "oin",
    [
        ...,
        "1234",
        "0" * 19,
        "0" * 21,
        1823288444000,
        "0000000182328844400a",
        "\uff10" * 6 + "01823288444000",
    ],
)
async def test_oin_must_be_20_digits(verifier, ec_key, oin):
    reason = await reason_of(verifier, token(ec_key, oin=oin))
    assert reason == "token bevat geen geldig OIN"


async def test_alg_none_is_refused(verifier):
    tok = hand_made_token({"alg": "none", "kid": "ec-1"}, claims())
    assert await reason_of(verifier, tok) == "algoritme niet toegestaan"


@pytest.mark.parametrize("key_form", ["pem", "jwk"])
async def test_hs256_signed_with_the_public_key_is_refused(verifier, rsa_key, key_form):
    """The algorithm-confusion attack: HMAC over the token with the public key as secret."""
    if key_form == "pem":
        secret = rsa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    else:
        secret = json.dumps(public_jwk(rsa_key, "rsa-1")).encode()
    header = {"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}
    unsigned = hand_made_token(header, claims()).rsplit(".", 1)[0]
    signature = hmac.new(secret, unsigned.encode(), hashlib.sha256).digest()
    assert await reason_of(verifier, unsigned + "." + b64url(signature)) == (
        "algoritme niet toegestaan"
    )
    # The same HMAC signature under an allowed alg label fails on the signature itself.
    relabelled = hand_made_token({**header, "alg": "RS256"}, claims()).rsplit(".", 1)[0]
    forged = (
        relabelled + "." + b64url(hmac.new(secret, relabelled.encode(), hashlib.sha256).digest())
    )
    assert await reason_of(verifier, forged) == "handtekening ongeldig"


@pytest.mark.parametrize("alg", ["HS256", "HS512", "ES384", "RS512", "EdDSA", "NONE", None])
async def test_only_three_algorithms(verifier, alg):
    tok = hand_made_token({"alg": alg, "kid": "ec-1"}, claims(), b"sig")
    assert await reason_of(verifier, tok) == "algoritme niet toegestaan"


async def test_unknown_kid(verifier, ec_key):
    assert await reason_of(verifier, token(ec_key, kid="ander")) == "onbekende sleutel"


async def test_key_type_must_fit_the_algorithm(verifier, ec_key):
    # kid of the RSA key, but an ES256 token: no RSA key may verify an EC signature
    assert await reason_of(verifier, token(ec_key, "ES256", "rsa-1")) == "onbekende sleutel"


async def test_signature_by_another_key_with_a_known_kid(verifier, other_ec_key):
    assert await reason_of(verifier, token(other_ec_key, kid="ec-1")) == "handtekening ongeldig"


async def test_tampered_payload(verifier, ec_key):
    header, _, signature = token(ec_key).split(".")
    evil = b64url(json.dumps(claims(oin="00000009999999999000")).encode())
    assert await reason_of(verifier, f"{header}.{evil}.{signature}") == "handtekening ongeldig"


@pytest.mark.parametrize("tok", ["abc", "a.b", "a.b.c", "....", "x" * 20000 + ".a.b"])
async def test_garbage(verifier, tok):
    reason = await reason_of(verifier, tok)
    assert reason in ("token is geen JWS", "token is onleesbaar")


async def test_crit_header_refused(verifier, ec_key):
    # PyJWT itself may already refuse an unknown `crit`; either way the token is refused.
    tok = token(ec_key, headers={"crit": ["exp"]})
    assert await reason_of(verifier, tok) in (
        "token is onleesbaar",
        "kritieke header-extensies worden niet ondersteund",
    )


async def test_token_without_kid_needs_an_unambiguous_key(tmp_path, ec_key, other_ec_key):
    single = tmp_path / "one.json"
    single.write_text(json.dumps({"keys": [public_jwk(ec_key, "ec-1")]}))
    v = BearerVerifier(AuthSettings(ISSUER, AUDIENCE, jwks_file=str(single)))
    assert (await v.verify(token(ec_key, kid=None))).oin == OIN
    double = tmp_path / "two.json"
    double.write_text(
        json.dumps({"keys": [public_jwk(ec_key, "a"), public_jwk(other_ec_key, "b")]})
    )
    v = BearerVerifier(AuthSettings(ISSUER, AUDIENCE, jwks_file=str(double)))
    assert await reason_of(v, token(ec_key, kid=None)) == "onbekende sleutel"


async def test_unusable_jwks_entries_are_skipped(tmp_path, ec_key):
    private = {**ECAlgorithm.to_jwk(ec_key, as_dict=True), "kid": "priv"}  # a usable key pair
    encryption = public_jwk(ec_key, "enc", use="enc")
    other_alg = public_jwk(ec_key, "alg", alg="ES384")
    no_verify = public_jwk(ec_key, "ops", key_ops=["encrypt"])
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [private, encryption, other_alg, no_verify, "junk"]}))
    v = BearerVerifier(AuthSettings(ISSUER, AUDIENCE, jwks_file=str(path)))
    for kid in ("priv", "enc", "alg", "ops"):
        assert await reason_of(v, token(ec_key, kid=kid)) == "onbekende sleutel"


async def test_reasons_hold_no_token_content(verifier, ec_key):
    tok = token(ec_key, oin="12345678901234567890x", aud="geheim-aud-QQ")
    reason = await reason_of(verifier, tok)
    assert "QQ" not in reason and "12345678901234567890" not in reason


# --------------------------------------------------------------------------------------------
# JWKS over HTTP: caching and refetch throttling


class FakeIam:
    """An httpx mock transport serving a JWKS that tests can change."""

    def __init__(self, keys):
        self.keys = keys
        self.requests = 0
        self.status = 200
        self.body = None

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        assert str(request.url) == JWKS_URL
        if self.body is not None:
            return httpx.Response(self.status, content=self.body)
        return httpx.Response(self.status, json={"keys": self.keys})


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def http_verifier(iam, clock, **settings):
    client = httpx.AsyncClient(transport=httpx.MockTransport(iam.handler))
    options = {"refetch_seconds": 60.0, "max_age_seconds": 3600.0, **settings}
    return BearerVerifier(
        AuthSettings(ISSUER, AUDIENCE, jwks_url=JWKS_URL, **options),
        http_client=client,
        clock=clock,
    )


async def test_jwks_is_fetched_once_and_cached(ec_key):
    iam, clock = FakeIam([public_jwk(ec_key, "ec-1")]), Clock()
    v = http_verifier(iam, clock)
    for _ in range(5):
        await v.verify(token(ec_key))
    assert iam.requests == 1


async def test_unknown_kid_refetches_at_most_once_per_interval(ec_key, other_ec_key):
    iam, clock = FakeIam([public_jwk(ec_key, "ec-1")]), Clock()
    v = http_verifier(iam, clock)
    await v.verify(token(ec_key))
    assert iam.requests == 1

    # A rotated key appears at the IAM; a token using it arrives within the throttle window.
    iam.keys = [public_jwk(ec_key, "ec-1"), public_jwk(other_ec_key, "ec-2")]
    clock.now += 10
    assert await reason_of(v, token(other_ec_key, kid="ec-2")) == "onbekende sleutel"
    assert iam.requests == 1
    for kid in ("x1", "x2", "x3"):
        await reason_of(v, token(ec_key, kid=kid))
    assert iam.requests == 1

    clock.now += 60
    assert (await v.verify(token(other_ec_key, kid="ec-2"))).oin == OIN
    assert iam.requests == 2
    assert await reason_of(v, token(ec_key, kid="x4")) == "onbekende sleutel"
    assert iam.requests == 2


async def test_concurrent_unknown_kids_cause_one_fetch(ec_key, other_ec_key):
    iam, clock = FakeIam([public_jwk(ec_key, "ec-1")]), Clock()
    v = http_verifier(iam, clock)
    await v.verify(token(ec_key))
    clock.now += 120
    iam.keys = [public_jwk(other_ec_key, "ec-2")]
    results = await asyncio.gather(*(v.verify(token(other_ec_key, kid="ec-2")) for _ in range(20)))
    assert all(p.oin == OIN for p in results)
    assert iam.requests == 2


async def test_old_keys_are_refreshed_and_kept_when_refresh_fails(ec_key):
    iam, clock = FakeIam([public_jwk(ec_key, "ec-1")]), Clock()
    v = http_verifier(iam, clock, max_age_seconds=600.0)
    await v.verify(token(ec_key))
    clock.now += 601
    iam.status = 503
    assert (await v.verify(token(ec_key))).oin == OIN  # stale keys still serve
    assert iam.requests == 2
    iam.status = 200
    iam.keys = []  # the IAM revoked the key
    clock.now += 61
    assert await reason_of(v, token(ec_key)) == "onbekende sleutel"


async def test_first_fetch_failure_is_jwks_unavailable_not_401(ec_key):
    iam, clock = FakeIam([]), Clock()
    iam.status = 500
    v = http_verifier(iam, clock)
    with pytest.raises(JwksUnavailable, match="HTTP 500"):
        await v.verify(token(ec_key))
    with pytest.raises(JwksUnavailable, match="last attempt failed"):
        await v.verify(token(ec_key))  # throttled: no new request yet
    assert iam.requests == 1
    iam.status = 200
    iam.keys = [public_jwk(ec_key, "ec-1")]
    clock.now += INITIAL_RETRY_SECONDS
    assert (await v.verify(token(ec_key))).oin == OIN


@pytest.mark.parametrize("body", [b"not json", b'{"no": "keys"}', b"[]"])
async def test_bad_jwks_documents(ec_key, body):
    iam, clock = FakeIam([]), Clock()
    iam.body = body
    with pytest.raises(JwksUnavailable):
        await http_verifier(iam, clock).prime()


async def test_connection_error_is_jwks_unavailable(ec_key):
    def refuse(request):
        raise httpx.ConnectError("refused", request=request)

    client = httpx.AsyncClient(transport=httpx.MockTransport(refuse))
    v = BearerVerifier(AuthSettings(ISSUER, AUDIENCE, jwks_url=JWKS_URL), http_client=client)
    with pytest.raises(JwksUnavailable, match="ConnectError"):
        await v.verify(token(ec_key))


async def test_missing_jwks_file(tmp_path, ec_key):
    v = BearerVerifier(AuthSettings(ISSUER, AUDIENCE, jwks_file=str(tmp_path / "absent.json")))
    with pytest.raises(JwksUnavailable):
        await v.verify(token(ec_key))


# --------------------------------------------------------------------------------------------
# Settings


def test_settings_from_env():
    s = AuthSettings.from_env(
        {
            "NMC_OAUTH_ISSUER": ISSUER,
            "NMC_OAUTH_AUDIENCE": AUDIENCE,
            "NMC_OAUTH_JWKS_URL": JWKS_URL,
            "NMC_OAUTH_JWKS_REFETCH_SECONDS": "15",
        }
    )
    assert (s.oin_claim, s.refetch_seconds, s.max_age_seconds) == ("oin", 15.0, 3600.0)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"NMC_OAUTH_AUDIENCE": "a", "NMC_OAUTH_JWKS_FILE": "f"}, "ISSUER"),
        ({"NMC_OAUTH_ISSUER": "i", "NMC_OAUTH_JWKS_FILE": "f"}, "AUDIENCE"),
        ({"NMC_OAUTH_ISSUER": "i", "NMC_OAUTH_AUDIENCE": "a"}, "exactly one"),
        (
            {
                "NMC_OAUTH_ISSUER": "i",
                "NMC_OAUTH_AUDIENCE": "a",
                "NMC_OAUTH_JWKS_FILE": "f",
                "NMC_OAUTH_JWKS_URL": JWKS_URL,
            },
            "exactly one",
        ),
        (
            {
                "NMC_OAUTH_ISSUER": "i",
                "NMC_OAUTH_AUDIENCE": "a",
                "NMC_OAUTH_JWKS_URL": "http://iam.example/jwks",
            },
            "https",
        ),
        (
            {
                "NMC_OAUTH_ISSUER": "i",
                "NMC_OAUTH_AUDIENCE": "a",
                "NMC_OAUTH_JWKS_FILE": "f",
                "NMC_OAUTH_JWKS_REFETCH_SECONDS": "soms",
            },
            "number of seconds",
        ),
    ],
)
def test_settings_errors(env, message):
    with pytest.raises(SettingError, match=message):
        AuthSettings.from_env(env)


def test_http_allowed_for_localhost():
    s = AuthSettings(ISSUER, AUDIENCE, jwks_url="http://127.0.0.1:8080/jwks")
    assert s.jwks_url.startswith("http://")


# --------------------------------------------------------------------------------------------
# Dev issuer


def dev_env(tmp_path, **extra):
    return {
        "NMC_DEV_IAM_KEY_FILE": str(tmp_path / "dev-iam.pem"),
        "NMC_OAUTH_ISSUER": ISSUER,
        "NMC_OAUTH_AUDIENCE": AUDIENCE,
        "NMC_OAUTH_JWKS_FILE": str(tmp_path / "dev-jwks.json"),
        **extra,
    }


def test_dev_token_refused_without_a_key():
    with pytest.raises(DevIamNotConfigured, match="NMC_DEV_IAM_KEY_FILE"):
        issue_dev_token(OIN, environ={"NMC_OAUTH_ISSUER": ISSUER})


def test_dev_token_refused_when_key_file_is_missing(tmp_path):
    with pytest.raises(AuthConfigError, match="not found"):
        issue_dev_token(OIN, environ=dev_env(tmp_path))


async def test_dev_issuer_round_trip(tmp_path):
    env = dev_env(tmp_path)
    kid = generate_dev_iam_key(env["NMC_DEV_IAM_KEY_FILE"], env["NMC_OAUTH_JWKS_FILE"])
    mode = stat.S_IMODE((tmp_path / "dev-iam.pem").stat().st_mode)
    assert mode == 0o600
    tok = issue_dev_token(OIN, environ=env)
    assert jwt.get_unverified_header(tok) == {"alg": "ES256", "kid": kid, "typ": "JWT"}
    principal = await BearerVerifier.from_env(env).verify(tok)
    assert principal.oin == OIN


def test_dev_kid_is_the_rfc7638_thumbprint(tmp_path):
    env = dev_env(tmp_path)
    kid = generate_dev_iam_key(env["NMC_DEV_IAM_KEY_FILE"], env["NMC_OAUTH_JWKS_FILE"])
    jwk = json.loads((tmp_path / "dev-jwks.json").read_text())["keys"][0]
    canonical = '{"crv":"%s","kty":"EC","x":"%s","y":"%s"}' % (jwk["crv"], jwk["x"], jwk["y"])  # noqa: UP031
    assert kid == b64url(hashlib.sha256(canonical.encode()).digest())
    assert "d" not in jwk and jwk["use"] == "sig" and jwk["alg"] == "ES256"


def test_generate_refuses_to_overwrite(tmp_path):
    env = dev_env(tmp_path)
    generate_dev_iam_key(env["NMC_DEV_IAM_KEY_FILE"], env["NMC_OAUTH_JWKS_FILE"])
    with pytest.raises(AuthConfigError, match="exists"):
        generate_dev_iam_key(env["NMC_DEV_IAM_KEY_FILE"], env["NMC_OAUTH_JWKS_FILE"])
    generate_dev_iam_key(env["NMC_DEV_IAM_KEY_FILE"], env["NMC_OAUTH_JWKS_FILE"], overwrite=True)


async def test_dev_token_claims_and_lifetime(tmp_path):
    env = dev_env(tmp_path, NMC_OAUTH_OIN_CLAIM="urn:oin")
    generate_dev_iam_key(env["NMC_DEV_IAM_KEY_FILE"], env["NMC_OAUTH_JWKS_FILE"])
    tok = issue_dev_token(OIN, environ=env, lifetime_seconds=60, now=time.time() - 120)
    body = jwt.decode(tok, options={"verify_signature": False})
    assert body["urn:oin"] == OIN and body["exp"] - body["iat"] == 60
    with pytest.raises(Unauthenticated, match="verlopen"):
        await BearerVerifier.from_env(env).verify(tok)


def test_dev_token_checks_the_oin(tmp_path):
    env = dev_env(tmp_path)
    generate_dev_iam_key(env["NMC_DEV_IAM_KEY_FILE"], env["NMC_OAUTH_JWKS_FILE"])
    with pytest.raises(ValueError, match="20 digits"):
        issue_dev_token("123", environ=env)


async def test_dev_issuer_accepts_an_rsa_key(tmp_path, rsa_key):
    env = dev_env(tmp_path)
    pem = rsa_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    (tmp_path / "dev-iam.pem").write_bytes(pem)
    (tmp_path / "dev-jwks.json").write_text(json.dumps(dev_jwks(tmp_path / "dev-iam.pem")))
    tok = issue_dev_token(OIN, environ=env)
    assert jwt.get_unverified_header(tok)["alg"] == "RS256"
    assert (await BearerVerifier.from_env(env).verify(tok)).oin == OIN


def test_dev_issuer_refuses_other_keys(tmp_path):
    key = ec.generate_private_key(ec.SECP384R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    (tmp_path / "dev-iam.pem").write_bytes(pem)
    with pytest.raises(AuthConfigError, match="P-256"):
        issue_dev_token(OIN, environ=dev_env(tmp_path))
    (tmp_path / "dev-iam.pem").write_text("geen sleutel")
    with pytest.raises(AuthConfigError, match="PEM"):
        issue_dev_token(OIN, environ=dev_env(tmp_path))
