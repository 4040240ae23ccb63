"""Unit tests of nmc.signing.webhook_signing: the ring, the public JWKS, the webhook JWT."""

import json

import jwt
import pytest

from nmc.feed.cloudevents import event_source, to_cloudevent, utc_rfc3339
from nmc.signing.webhook_signing import (
    SigningConfigError,
    issuer,
    load_signing_ring,
    new_signing_ring,
    parse_signing_ring,
)


@pytest.mark.parametrize("alg", ["ES256", "RS256"])
def test_sign_and_verify_with_the_published_key(alg):
    ring = parse_signing_ring(new_signing_ring("k1", alg))
    token = ring.sign("https://dv.example/hook", issuer="urn:nmc", now=1_700_000_000)
    [jwk] = ring.jwks()["keys"]
    assert jwk["alg"] == alg and jwk["kid"] == "k1" and jwk["use"] == "sig"
    assert not {"d", "p", "q", "dp", "dq", "qi"} & set(jwk)
    key = jwt.PyJWK.from_dict(jwk)
    claims = jwt.decode(
        token, key.key, algorithms=[alg], audience="https://dv.example/hook", issuer="urn:nmc",
        options={"verify_exp": False, "verify_nbf": False, "verify_iat": False},
    )  # fmt: skip
    assert claims["exp"] - claims["iat"] <= 300
    assert jwt.get_unverified_header(token)["kid"] == "k1"


def test_lifetime_is_at_most_five_minutes():
    ring = parse_signing_ring(new_signing_ring())
    with pytest.raises(ValueError, match="lifetime"):
        ring.sign("https://dv.example/hook", issuer="urn:nmc", lifetime_seconds=301)


def test_jti_is_fresh_per_token():
    ring = parse_signing_ring(new_signing_ring())
    tokens = [ring.sign("https://a", issuer="urn:nmc") for _ in range(2)]
    jtis = {jwt.decode(t, options={"verify_signature": False})["jti"] for t in tokens}
    assert len(jtis) == 2


def test_the_active_key_signs_and_every_key_is_published():
    a, b = new_signing_ring("a"), new_signing_ring("b", "RS256")
    ring = parse_signing_ring({"active": "b", "keys": {**a["keys"], **b["keys"]}})
    assert [k["kid"] for k in ring.jwks()["keys"]] == ["b", "a"]
    assert jwt.get_unverified_header(ring.sign("https://a", issuer="i"))["kid"] == "b"


@pytest.mark.parametrize(
    "document",
    [
        [],
        {"active": "x", "keys": {}},
        {"active": "y", "keys": new_signing_ring("x")["keys"]},
        {"active": "x", "keys": {"x": "geen pem"}},
        {"active": "x y", "keys": {"x y": new_signing_ring("x")["keys"]["x"]}},
    ],
)
def test_bad_rings_are_refused(document):
    with pytest.raises(SigningConfigError):
        parse_signing_ring(document)


def test_load_from_file_and_environment(tmp_path):
    path = tmp_path / "ring.json"
    path.write_text(json.dumps(new_signing_ring("k")))
    assert load_signing_ring(environ={"NMC_WEBHOOK_SIGNING_KEYS_FILE": str(path)}).active_id == "k"
    assert load_signing_ring(environ={}) is None
    with pytest.raises(SigningConfigError):
        load_signing_ring(tmp_path / "nergens.json")


def test_issuer_and_source_defaults():
    assert event_source({}) == "urn:nld:oin:00000000000000000000:systeem:nmc"
    assert event_source({"NMC_OIN": "00000001234567890000"}).startswith(
        "urn:nld:oin:00000001234567890000:"
    )
    assert event_source({"NMC_API_EVENT_SOURCE": "https://nmc.example"}) == "https://nmc.example"
    assert issuer({"NMC_OIN": "00000001234567890000"}) == event_source(
        {"NMC_OIN": "00000001234567890000"}
    )
    assert issuer({"NMC_WEBHOOK_ISSUER": "https://nmc.example/iss"}) == "https://nmc.example/iss"


def test_a_cloudevent_from_an_event_row():
    event = {
        "eventId": 9, "notificatieId": "0b6f6c5e-7a35-4e0e-9d7b-6d2f1c7c1a11", "sequence": 3,
        "van": "verzonden", "naar": "bezorgd", "reden": None,
        "tijdstip": "2025-03-01T10:00:07.5+01:00", "xid": "77",
    }  # fmt: skip
    cloudevent = to_cloudevent(event, "urn:nmc")
    assert cloudevent["id"] == "9" and cloudevent["sequence"] == "3"
    assert cloudevent["time"] == "2025-03-01T09:00:07.500000Z"
    assert cloudevent["data"] == {"van": "verzonden", "naar": "bezorgd", "reden": None, "versie": 3}
    assert "xid" not in json.dumps(cloudevent)
    assert utc_rfc3339("2025-01-01T00:00:00+00:00") == "2025-01-01T00:00:00.000000Z"
