"""The DV client's content checks of a delivery proof beyond its signature and chain: a
`definitief-bezorgd` proof must carry its evidence (a settlement of a
delivered attempt with a delivered receipt, the settlement term between them), a forced
transition must be its event and never into a delivered status, and `iat` must be a past
whole second. Each proof here is signed with a test key, so only the content is wrong."""

import copy
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from nmc_client import (
    BewijsOngeldig,
    BewijsTijdOngeldig,
    BewijsZonderGrond,
    StaticJwks,
    verify_afleverbewijs,
)

ISSUER = "urn:nld:oin:00000001234567890000:systeem:nmc"
KID = "test-bewijs-1"
NID = "6f1c1f8e-2b9a-4f5e-9d3c-0a1b2c3d4e5f"

_KEY = ec.generate_private_key(ec.SECP256R1())
JWKS = StaticJwks({"keys": [{**jwt.algorithms.ECAlgorithm.to_jwk(_KEY.public_key(), as_dict=True),
                             "kid": KID, "alg": "ES256", "use": "sig",
                             "nmc_use": "afleverbewijs"}]})  # fmt: skip


def sign(claims: dict[str, Any]) -> str:
    return jwt.encode(
        claims, _KEY, algorithm="ES256", headers={"kid": KID, "typ": "afleverbewijs+jwt"}
    )


def definitief_bezorgd() -> dict[str, Any]:
    """A proof as the NMC signs it for a delivered and settled notification."""
    chain = [None, "aangenomen", "in-verzending", "verzonden", "bezorgd", "definitief-bezorgd"]
    return {
        "iss": ISSUER, "sub": NID, "iat": int(time.time()), "uitgegevenDoor": ISSUER,
        "formaat": "nmc-afleverbewijs/1", "definitief": True,
        "uitgegevenOp": "2026-12-10T12:00:00.5+00:00",
        "notificatie": {"notificatieId": NID, "status": "definitief-bezorgd", "reden": None,
                        "versie": 5},
        "pogingen": [{
            "nummer": 1, "status": "bezorgd", "afgerondOp": "2026-12-01T10:00:00+00:00",
            "receipts": [{"status": "delivered", "afgerondOp": "2026-12-01T10:00:00+00:00",
                          "bron": "callback", "toegepast": True}],
        }],
        "vaststelling": {"poging": 1, "afgerondOp": "2026-12-01T10:00:00+00:00",
                         "termijn": "P7D", "callbackVenster": "PT30M",
                         "geplandOp": "2026-12-08T10:30:00+00:00",
                         "vastgesteldOp": "2026-12-08T10:30:05+00:00"},
        "eindstatus": {"status": "definitief-bezorgd", "reden": None, "sequence": 5,
                       "tijdstip": "2026-12-08T10:30:05+00:00"},
        "events": [{"sequence": i, "van": chain[i - 1], "naar": chain[i]} for i in range(1, 6)],
    }  # fmt: skip


def verify(claims: dict[str, Any]):
    return verify_afleverbewijs(sign(claims), JWKS, issuer=ISSUER, notificatie_id=NID)


def test_a_proof_with_its_evidence_verifies():
    assert verify(definitief_bezorgd()).status == "definitief-bezorgd"
    legacy = definitief_bezorgd()
    del legacy["iat"]  # proofs signed before iat was added
    verify(legacy)
    verify({**definitief_bezorgd(), "vaststelling": {
        **definitief_bezorgd()["vaststelling"], "termijn": "P6DT23H59M"}})  # fmt: skip


def _zonder(path: tuple, value: Any = ...):
    def spoil(claims: dict[str, Any]) -> None:
        *parents, last = path
        node = claims
        for key in parents:
            node = node[key]
        if value is ...:
            del node[last]
        else:
            node[last] = value

    return spoil


FORCED_DEFINITIEF = {
    "soort": "forceer-overgang", "van": "bezorgd", "naar": "definitief-bezorgd", "sequence": 5,
    "door": "x", "tijdstip": "2026-12-08T10:30:05+00:00", "toelichting": "x",
}  # fmt: skip
ZONDER_GROND = {
    "no settlement": _zonder(("vaststelling",), None),
    "settlement not settled": _zonder(("vaststelling", "vastgesteldOp"), None),
    "unreadable term": _zonder(("vaststelling", "termijn"), "zeven dagen"),
    "settlement on no attempt": _zonder(("vaststelling", "poging"), 2),
    "attempt not delivered": _zonder(("pogingen", 0, "status"), "verzonden"),
    "no receipts": _zonder(("pogingen", 0, "receipts"), []),
    "receipt not delivered": _zonder(("pogingen", 0, "receipts", 0, "status"), "sending"),
    "other completed_at": _zonder(("pogingen", 0, "afgerondOp"), "2026-12-02T10:00:00+00:00"),
    "term not passed": _zonder(("vaststelling", "vastgesteldOp"), "2026-12-08T09:59:59+00:00"),
    "longer term": _zonder(("vaststelling", "termijn"), "P1M"),
    "forced into definitief-bezorgd": _zonder(("beheeracties",), [FORCED_DEFINITIEF]),
}


@pytest.mark.parametrize("name", sorted(ZONDER_GROND))
def test_definitief_bezorgd_without_its_evidence_is_refused(name):
    claims = copy.deepcopy(definitief_bezorgd())
    ZONDER_GROND[name](claims)
    with pytest.raises(BewijsZonderGrond):
        verify(claims)


def test_a_forced_transition_must_be_its_event():
    forced = {"soort": "forceer-overgang", "van": "verzonden", "naar": "verlopen", "sequence": 4,
              "door": "beheerder", "tijdstip": "2026-12-08T10:30:05+00:00",
              "toelichting": "ticket 12"}  # fmt: skip
    chain = [None, "aangenomen", "in-verzending", "verzonden", "verlopen"]
    claims = {
        **definitief_bezorgd(), "vaststelling": None, "pogingen": [], "beheeracties": [forced],
        "notificatie": {"notificatieId": NID, "status": "verlopen", "reden": "verlopen",
                        "versie": 4},
        "eindstatus": {"status": "verlopen", "reden": "verlopen", "sequence": 4},
        "events": [{"sequence": i, "van": chain[i - 1], "naar": chain[i]} for i in range(1, 5)],
    }  # fmt: skip
    assert verify(claims).status == "verlopen"
    for spoiled in ({**forced, "sequence": 3}, {**forced, "sequence": 9}, {**forced, "van": "x"}):
        with pytest.raises(BewijsOngeldig, match="beheeractie"):
            verify({**claims, "beheeracties": [spoiled]})


@pytest.mark.parametrize(
    "iat", [int(time.time()) + 3600, "1700000000", 1700000000.5, True], ids=str
)
def test_an_issue_time_in_the_future_or_not_whole_seconds_is_refused(iat):
    with pytest.raises(BewijsTijdOngeldig):
        verify({**definitief_bezorgd(), "iat": iat})
