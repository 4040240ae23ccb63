"""Proof keys and webhook keys are apart.

Every worker holds the webhook ring; only the API holds the proof ring. So a proof must verify
only under a key the published JWKS marks as a proof key, and a webhook token only under a
webhook key; the API publishes the webhook ring's public keys without holding its private
keys. The JWKS here is the one the API builds (nmc.api.app.published_jwks).
"""

import json
import time
import uuid
from datetime import UTC, datetime, timedelta

import jwt
import pytest
from starlette.testclient import TestClient

from nmc.api.app import create_app, published_jwks
from nmc.signing import afleverbewijs_signing as proof_keys
from nmc.signing.afleverbewijs_signing import TYP, parse_afleverbewijs_ring
from nmc.signing.webhook_signing import new_signing_ring, parse_signing_ring
from nmc_client import BewijsOngeldig, StaticJwks, verify_afleverbewijs
from nmc_client.webhook import WebhookRejected, WebhookVerifier

ISSUER = "urn:nld:oin:00000001234567890000:systeem:nmc"
HOOK = "https://dv.example/nmc-webhook"
JWKS = "/.well-known/jwks.json"


def claims_of_a_proof(notificatie_id: str, uitgegeven_op: str = "2026-06-01T12:00:00Z") -> dict:
    """A proof's claims with a valid chain (the content checks pass)."""
    return {
        "iss": ISSUER,
        "sub": notificatie_id,
        "uitgegevenDoor": ISSUER,
        "uitgegevenOp": uitgegeven_op,
        "definitief": True,
        "notificatie": {"notificatieId": notificatie_id, "status": "geannuleerd",
                        "reden": "geannuleerd", "versie": 2},
        "eindstatus": {"status": "geannuleerd", "reden": "geannuleerd", "sequence": 2},
        "events": [
            {"sequence": 1, "van": None, "naar": "aangenomen"},
            {"sequence": 2, "van": "aangenomen", "naar": "geannuleerd"},
        ],
    }  # fmt: skip


@pytest.fixture
def rings():
    webhook = parse_signing_ring(new_signing_ring("nmc-webhook-1"))
    proof = parse_afleverbewijs_ring(proof_keys.new_afleverbewijs_ring("nmc-bewijs-1"))
    return webhook, proof


class StaticCache:
    """A JwksCache stand-in over a JWKS document (the webhook verifier asks `key(kid)`)."""

    def __init__(self, document):
        self._keys = {k["kid"]: k for k in document["keys"]}

    def key(self, kid):
        return self._keys.get(kid)


def test_a_proof_signed_with_a_webhook_key_is_rejected(rings):
    webhook, proof = rings
    jwks = StaticJwks(published_jwks(webhook.jwks(), proof))
    notificatie_id = str(uuid.uuid4())
    claims = claims_of_a_proof(notificatie_id)
    # The real proof verifies.
    assert verify_afleverbewijs(proof.sign(claims), jwks, issuer=ISSUER).kid == "nmc-bewijs-1"
    # A worker holds the webhook key: it can write a JWS with the proof's typ and its own kid.
    key = webhook.keys["nmc-webhook-1"]
    forged = jwt.encode(
        claims, key.private_key, algorithm="ES256", headers={"kid": key.kid, "typ": TYP}
    )
    with pytest.raises(BewijsOngeldig, match="not a delivery-proof key"):
        verify_afleverbewijs(forged, jwks, issuer=ISSUER)


def test_a_webhook_token_signed_with_a_proof_key_is_rejected(rings):
    webhook, proof = rings
    cache = StaticCache(published_jwks(webhook.jwks(), proof))
    verifier = WebhookVerifier(cache, audience=HOOK, issuer=ISSUER)
    verifier.verify(f"Bearer {webhook.sign(HOOK, issuer=ISSUER)}")
    now = int(time.time())
    key = proof.keys["nmc-bewijs-1"]
    claims = {"iss": ISSUER, "aud": HOOK, "iat": now, "nbf": now, "exp": now + 60,
              "jti": str(uuid.uuid4())}  # fmt: skip
    token = jwt.encode(claims, key.private_key, algorithm="ES256", headers={"kid": key.kid})
    with pytest.raises(WebhookRejected, match="not a webhook key"):
        verifier.verify(f"Bearer {token}")


def test_a_retired_key_verifies_only_proofs_issued_before_its_retirement():
    document = proof_keys.add_key(proof_keys.new_afleverbewijs_ring("oud"), "nieuw")
    old_ring = parse_afleverbewijs_ring(document)  # "oud" still signs here
    retired_at = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    ring = parse_afleverbewijs_ring(proof_keys.activate_key(document, "nieuw", now=retired_at))
    jwks = StaticJwks(ring.jwks())
    [oud] = [k for k in ring.jwks()["keys"] if k["kid"] == "oud"]
    assert oud["nmc_ingetrokken_op"] == "2026-06-01T12:00:00Z"
    notificatie_id = str(uuid.uuid4())
    earlier = old_ring.sign(claims_of_a_proof(notificatie_id, "2026-06-01T11:59:59.5+00:00"))
    assert verify_afleverbewijs(earlier, jwks, issuer=ISSUER).kid == "oud"
    later = old_ring.sign(claims_of_a_proof(notificatie_id, "2026-06-01T12:00:01Z"))
    with pytest.raises(BewijsOngeldig, match="after its key was retired"):
        verify_afleverbewijs(later, jwks, issuer=ISSUER)
    undated = claims_of_a_proof(notificatie_id)
    undated.pop("uitgegevenOp")
    with pytest.raises(BewijsOngeldig, match="uitgegevenOp"):
        verify_afleverbewijs(old_ring.sign(undated), jwks, issuer=ISSUER)


def test_activate_drops_retired_keys_after_the_keep_it_is_given():
    document = proof_keys.add_key(proof_keys.new_afleverbewijs_ring("a"), "b")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    document = proof_keys.activate_key(document, "b", now=start, keep=timedelta(days=31))
    document = proof_keys.add_key(document, "c")
    keep = timedelta(days=31)
    kept = proof_keys.activate_key(document, "c", now=start + timedelta(days=30), keep=keep)
    assert set(kept["retired"]) == {"a", "b"}
    dropped = proof_keys.activate_key(document, "c", now=start + timedelta(days=32), keep=keep)
    assert set(dropped["retired"]) == {"b"}


def test_the_api_publishes_webhook_keys_from_the_public_file_alone(api_env, dvs, monkeypatch):
    from nmc.signing.webhook_signing import write_public_keys

    ring_document = new_signing_ring("nmc-webhook-pub")
    public = api_env.secrets / "webhook-public-keys.json"
    write_public_keys(public, parse_signing_ring(ring_document))
    assert "PRIVATE" not in public.read_text()
    # The private ring is not there for the API at all.
    monkeypatch.setenv("NMC_WEBHOOK_SIGNING_KEYS_FILE", str(api_env.secrets / "absent.json"))
    monkeypatch.setenv("NMC_WEBHOOK_PUBLIC_KEYS_FILE", str(public))
    with TestClient(create_app()) as client:
        keys = client.get(JWKS).json()["keys"]
    assert [(k["kid"], k["nmc_use"]) for k in keys] == [
        ("nmc-webhook-pub", "webhook"),
        ("nmc-bewijs-test-1", "afleverbewijs"),
    ]
    ring = parse_signing_ring(ring_document)
    verifier = WebhookVerifier(StaticCache({"keys": keys}), audience=HOOK, issuer=ISSUER)
    verifier.verify(f"Bearer {ring.sign(HOOK, issuer=ISSUER)}")


def test_a_public_key_file_with_a_private_member_is_refused(tmp_path, monkeypatch):
    from nmc.signing.webhook_signing import SigningConfigError, load_public_keys

    ring = parse_signing_ring(new_signing_ring("k"))
    private = jwt.algorithms.ECAlgorithm.to_jwk(ring.keys["k"].private_key, as_dict=True)
    path = tmp_path / "public.json"
    path.write_text(json.dumps({"keys": [{**private, "kid": "k", "alg": "ES256"}]}))
    with pytest.raises(SigningConfigError, match="private"):
        load_public_keys(path)


def test_activate_keeps_retired_keys_for_the_databases_retention(api_env, conn, monkeypatch):
    """Not a fixed 366 days: the retention the database holds, plus a day, on its clock."""
    from nmc.cli import main as nmc_main
    from nmc.signing.afleverbewijs_signing import read_ring_document, write_ring_document

    monkeypatch.setenv("NMC_DATABASE_URL", api_env.db_url)
    conn.execute("UPDATE nmc.instellingen SET bewijs_bewaartermijn = interval '30 days'")
    ring_file = api_env.secrets / "afleverbewijs-signing.json"
    write_ring_document(ring_file, proof_keys.add_key(read_ring_document(ring_file), "k2"))

    def activate(kid: str) -> set[str]:
        assert nmc_main(["admin", "keys", "afleverbewijs", "activate", "--kid", kid,
                         "--file", str(ring_file)]) == 0  # fmt: skip
        return set(read_ring_document(ring_file)["retired"])

    conn.execute("SELECT nmc.advance_clock('10 days')")
    assert activate("k2") == {"nmc-bewijs-test-1"}
    [(now,)] = conn.execute("SELECT nmc.now()").fetchall()
    retired_at = read_ring_document(ring_file)["retired"]["nmc-bewijs-test-1"]["retiredAt"]
    moment = datetime.fromisoformat(retired_at.replace("Z", "+00:00"))
    assert abs(moment - now) < timedelta(seconds=30)  # the database's clock, not the wall's
    conn.execute("SELECT nmc.advance_clock('30 days')")
    write_ring_document(ring_file, proof_keys.add_key(read_ring_document(ring_file), "k3"))
    assert activate("k3") == {"nmc-bewijs-test-1", "k2"}  # 30 days < 30 days + 1
    conn.execute("SELECT nmc.advance_clock('2 days')")
    write_ring_document(ring_file, proof_keys.add_key(read_ring_document(ring_file), "k4"))
    assert activate("k4") == {"k2", "k3"}


def test_the_cli_writes_the_rings_public_keys_and_keys_init_too(tmp_path, capsys):
    from nmc.admin.onboarding import init_secrets
    from nmc.cli import main as nmc_main
    from nmc.signing.webhook_signing import load_public_keys, load_signing_ring

    init_secrets(tmp_path / "geheim")
    ring = load_signing_ring(tmp_path / "geheim" / "webhook-signing.json")
    written = load_public_keys(tmp_path / "geheim" / "webhook-public-keys.json")
    assert written == ring.jwks()
    assert "NMC_WEBHOOK_PUBLIC_KEYS_FILE=" in (tmp_path / "geheim" / "dev.env").read_text()
    out = tmp_path / "publiek.json"
    ring_file = tmp_path / "geheim" / "webhook-signing.json"
    assert nmc_main(["admin", "keys", "webhook-public", "--file", str(ring_file),
                     "--out", str(out)]) == 0  # fmt: skip
    assert load_public_keys(out) == ring.jwks()
    assert "PRIVATE" not in out.read_text()
