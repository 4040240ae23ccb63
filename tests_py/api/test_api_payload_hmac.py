"""The idempotency value of a notification is a keyed HMAC under the payload pepper.

An unkeyed SHA-256 of the canonical request (recipient included) would let anyone holding the
database or a backup test candidate e-mail addresses, or every valid BSN, offline, also after
the data key is erased. Stored: HMAC-SHA256 under the `payload` pepper with its version; replays
still work across a payload pepper rotation and for rows stored before the payload pepper.
"""

import hashlib
import hmac
import json
import secrets
import uuid
from datetime import UTC, datetime

import pytest
from apitest import BASE, auth, centraal, decentraal
from starlette.testclient import TestClient

from nmc.api import validation
from nmc.api.app import create_app
from nmc.api.intake import idempotency_form
from nmc.crypto.peppers import dvref_hmac, new_peppers, parse_peppers
from nmc.crypto.secret_files import CryptoConfigError
from nmc.signing.canonical_json import canonical_json, payload_hash

DECENTRAAL = f"{BASE}/decentraal/notificaties"
CENTRAAL = f"{BASE}/centraal/notificaties"
NOW = datetime(2030, 1, 1, tzinfo=UTC)


def canonical_request(body: dict, regie: str) -> bytes:
    """The canonical JSON of a request as the intake compares it (without batchId)."""
    validate = (
        validation.validate_decentraal if regie == "decentraal" else validation.validate_centraal
    )
    return canonical_json(idempotency_form(validate(body, now=NOW)))


def stored_payload(conn, notificatie_id: str) -> tuple[bytes, int, int]:
    return conn.execute(
        "SELECT payload_hash, payload_pepper_versie, dv_id FROM nmc.notificatie WHERE id = %s",
        [notificatie_id],
    ).fetchone()


@pytest.mark.parametrize(
    ("path", "body", "regie"),
    [(DECENTRAAL, decentraal, "decentraal"), (CENTRAAL, centraal, "centraal")],
)
def test_the_stored_value_is_a_keyed_hmac_not_sha256_of_the_request(
    client, conn, api_env, path, body, regie
):
    request = body()
    response = client.post(path, json=request, headers=auth())
    assert response.status_code == 202
    notificatie_id = response.json()["notificatieId"]
    stored, dv_id = conn.execute(
        "SELECT payload_hash, dv_id FROM nmc.notificatie WHERE id = %s", [notificatie_id]
    ).fetchone()
    canonical = canonical_request(request, regie)
    assert bytes(stored) != hashlib.sha256(canonical).digest()
    versie = stored_payload(conn, notificatie_id)[1]
    pepper = api_env.peppers["payload"]
    key = parse_peppers(api_env.peppers).for_purpose("payload").versions[pepper["current"]]
    message = b"nmc/payload/v1\x00" + dv_id.to_bytes(8, "big", signed=True) + canonical
    assert bytes(stored) == hmac.new(key, message, hashlib.sha256).digest()
    assert versie == pepper["current"]


def test_the_api_does_not_start_without_a_payload_pepper(api_env, dvs, monkeypatch):
    monkeypatch.setenv("NMC_PEPPERS", json.dumps({"dvref": api_env.peppers["dvref"]}))
    with pytest.raises(CryptoConfigError, match="'payload'"), TestClient(create_app()):
        pass


def test_replay_after_a_payload_pepper_rotation(api_env, dvs, conn, monkeypatch):
    """While the earlier payload pepper version is live, a request accepted under it is a
    replay (single and batch); another payload is a 409; the new row gets the new version."""
    rotated = dict(api_env.peppers)
    rotated["payload"] = {
        "current": 2,
        "versions": {
            **api_env.peppers["payload"]["versions"],
            "2": new_peppers(("payload",))["payload"]["versions"]["1"],
        },
    }
    body = decentraal(dvRef="voor-de-payload-rotatie")
    with TestClient(create_app()) as client:
        first = client.post(DECENTRAAL, json=body, headers=auth()).json()["notificatieId"]
    monkeypatch.setenv("NMC_PEPPERS", json.dumps(rotated))
    with TestClient(create_app()) as client:
        replay = client.post(DECENTRAAL, json=body, headers=auth())
        assert (replay.status_code, replay.json()["notificatieId"]) == (202, first)
        other = client.post(
            DECENTRAAL, json={**body, "emailAdres": "ander@voorbeeld.nl"}, headers=auth()
        )
        assert other.status_code == 409
        fresh = decentraal(dvRef="na-de-payload-rotatie")
        batch = client.post(
            f"{DECENTRAAL}/_batch", json={"notificaties": [body, fresh]}, headers=auth()
        )
        assert batch.status_code == 202
        answered = [n["notificatieId"] for n in batch.json()["notificaties"]]
        assert answered[0] == first and answered[1] != first
    assert stored_payload(conn, answered[1])[1] == 2
    assert stored_payload(conn, first)[1] == 1


def test_replay_of_a_row_from_before_the_payload_pepper(client, conn, api_env, dvs):
    """A row an earlier release stored (unkeyed SHA-256, version 0, through the old intake
    signature) is answered on a replay, single and batch; another payload is a 409."""
    body = decentraal(dvRef="uit-de-vorige-release")
    peppers = parse_peppers(api_env.peppers)
    dvref_mac, dvref_versie = dvref_hmac(dvs["A"], body["dvRef"], pepper_set=peppers)
    canonical = idempotency_form(validation.validate_decentraal(body, now=NOW))
    oud_id = uuid.uuid4()
    conn.execute(
        "SELECT nmc.intake_notificatie_v3(%s, %s, 'aanslag', 'decentraal', %s, %s::smallint, %s, "
        "0::smallint, '\\x0a', '\\x0b', '\\x0c', 'kek-test-1', NULL, NULL, %s, NULL, NULL)",
        [oud_id, dvs["A"], dvref_mac, dvref_versie, payload_hash(canonical),
         secrets.token_hex(16)],
    )  # fmt: skip
    assert stored_payload(conn, oud_id)[1] == 0
    replay = client.post(DECENTRAAL, json=body, headers=auth())
    assert (replay.status_code, replay.json()["notificatieId"]) == (202, str(oud_id))
    other = client.post(
        DECENTRAAL, json={**body, "berichtgegevens": {"naam": "Ander"}}, headers=auth()
    )
    assert other.status_code == 409
    batch = client.post(
        f"{DECENTRAAL}/_batch",
        json={"notificaties": [decentraal(dvRef="nieuw-naast-oud"), body]},
        headers=auth(),
    )
    assert batch.status_code == 202
    assert batch.json()["notificaties"][1]["notificatieId"] == str(oud_id)
    new_id = batch.json()["notificaties"][0]["notificatieId"]
    stored, versie, _ = stored_payload(conn, new_id)
    assert versie == 1 and len(bytes(stored)) == 32
