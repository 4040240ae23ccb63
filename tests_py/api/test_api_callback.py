"""POST /api/nmc/v1/notifynl-callback: token, payload checks, storage, counters, no `to`."""

import uuid

import pytest
from apitest import BASE, CALLBACK_TOKEN, auth, decentraal
from starlette.testclient import TestClient

from nmc.api.app import create_app

CALLBACK = f"{BASE}/notifynl-callback"
TO = "ontvanger.callback@voorbeeld-bezorging.nl"


@pytest.fixture
def poging_id(client, conn) -> str:
    """An attempt of a notification that a worker claimed for sending (its id = reference)."""
    response = client.post(
        f"{BASE}/decentraal/notificaties", json=decentraal(emailAdres=TO), headers=auth()
    )
    assert response.status_code == 202
    row = conn.execute("SELECT poging_id::text FROM nmc.claim_verzenden('test', 10)").fetchone()
    return row[0]


def receipt(reference, **overrides):
    body = {
        "id": str(uuid.uuid4()),
        "reference": reference,
        "to": TO,
        "status": "delivered",
        "created_at": "2026-01-05T12:15:30.000000Z",
        "completed_at": "2026-01-05T12:15:33.342838Z",
        "sent_at": "2026-01-05T12:15:31.000000Z",
        "notification_type": "email",
        "template_id": str(uuid.uuid4()),
        "template_version": 1,
    }
    body.update(overrides)
    return body


def bearer(value=CALLBACK_TOKEN):
    return {"Authorization": f"Bearer {value}"}


def teller(conn, naam):
    row = conn.execute("SELECT aantal FROM nmc.teller WHERE naam = %s", [naam]).fetchone()
    return row[0] if row else 0


def receipt_taken(conn):
    return conn.execute(
        "SELECT poging_id::text, payload, receipt_completed_at FROM nmc.taak "
        "WHERE soort = 'receipt' ORDER BY id"
    ).fetchall()


def test_a_receipt_is_stored_as_a_receipt_task(client, conn, poging_id):
    body = receipt(poging_id)
    response = client.post(CALLBACK, json=body, headers=bearer())
    assert response.status_code == 200
    assert response.json() == {"resultaat": "opgeslagen"}
    [(stored_poging, payload, completed_at)] = receipt_taken(conn)
    assert stored_poging == poging_id
    assert payload["id"] == body["id"]
    assert payload["status"] == "delivered"
    assert completed_at.isoformat() == "2026-01-05T12:15:33.342838+00:00"
    assert "to" not in payload


def test_a_duplicate_is_a_no_op(client, conn, poging_id):
    body = receipt(poging_id)
    assert client.post(CALLBACK, json=body, headers=bearer()).json()["resultaat"] == "opgeslagen"
    again = client.post(CALLBACK, json=body, headers=bearer())
    assert again.status_code == 200
    assert again.json() == {"resultaat": "dubbel"}
    assert len(receipt_taken(conn)) == 1


def test_another_status_or_completed_at_is_another_receipt(client, conn, poging_id):
    client.post(CALLBACK, json=receipt(poging_id), headers=bearer())
    client.post(CALLBACK, json=receipt(poging_id, status="permanent-failure"), headers=bearer())
    client.post(
        CALLBACK, json=receipt(poging_id, completed_at="2026-01-05T13:00:00Z"), headers=bearer()
    )
    assert len(receipt_taken(conn)) == 3


@pytest.mark.parametrize("reference", [str(uuid.uuid4()), "niet-van-ons", None, "A" * 1000])
def test_an_unknown_reference_is_200_counted_not_stored(client, conn, reference):
    response = client.post(CALLBACK, json=receipt(reference), headers=bearer())
    assert response.status_code == 200
    assert response.json() == {"resultaat": "onbekende-reference"}
    assert teller(conn, "receipt_onbekende_reference") == 1
    assert receipt_taken(conn) == []


def test_optional_timestamps_and_other_shapes_are_accepted(client, conn, poging_id):
    body = receipt(poging_id, status="sending", completed_at=None, sent_at=None)
    del body["template_version"]
    assert client.post(CALLBACK, json=body, headers=bearer()).status_code == 200
    # GOV.UK Notify has sent timestamps without an offset: UTC.
    body = receipt(poging_id, completed_at="2026-01-05T12:15:33.342838", extra="nieuw veld")
    assert client.post(CALLBACK, json=body, headers=bearer()).status_code == 200


@pytest.mark.parametrize(
    "headers",
    [
        {},
        bearer("verkeerd-token"),
        bearer(CALLBACK_TOKEN + "x"),
        bearer(CALLBACK_TOKEN[:-1]),
        {"Authorization": f"Basic {CALLBACK_TOKEN}"},
        {"Authorization": CALLBACK_TOKEN},
    ],
)
def test_a_bad_token_is_401(client, conn, poging_id, headers):
    response = client.post(CALLBACK, json=receipt(poging_id), headers=headers)
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    assert receipt_taken(conn) == []
    assert teller(conn, "receipt_ongeldig") == 0


def test_a_refused_callback_is_counted_and_exported(client, conn, poging_id):
    # ADR 0024: rejected receipts are counted, not stored; a bad token is one of them.
    for headers in ({}, bearer("verkeerd-token"), auth()):
        response = client.post(CALLBACK, json=receipt(poging_id), headers=headers)
        assert response.status_code == 401
    assert teller(conn, "receipt_ongeautoriseerd") == 3
    assert receipt_taken(conn) == []
    metrics = client.get("/metrics").text
    assert 'nmc_teller_totaal{naam="receipt_ongeautoriseerd"} 3' in metrics
    # Only the count: nothing of the refused request (its token, its payload) is kept.
    assert "verkeerd-token" not in metrics and TO not in metrics


def test_a_dv_token_is_no_callback_token(client, poging_id):
    response = client.post(CALLBACK, json=receipt(poging_id), headers=auth())
    assert response.status_code == 401


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (lambda ref: receipt(ref, id="geen-uuid"), "id"),
        (lambda ref: {k: v for k, v in receipt(ref).items() if k != "id"}, "id"),
        (lambda ref: receipt(ref, status=None), "status"),
        (lambda ref: receipt(ref, status=""), "status"),
        (lambda ref: receipt(ref, status=7), "status"),
        (lambda ref: {**receipt(ref), "reference": 12}, "reference"),
        (lambda ref: {**receipt(ref), "reference": "x" * 1001}, "reference"),
        (lambda ref: receipt(ref, completed_at="gisteren"), "completed_at"),
        (lambda ref: receipt(ref, sent_at=12), "sent_at"),
        (lambda ref: [receipt(ref)], ""),
    ],
)
def test_a_malformed_payload_is_400_and_counted(client, conn, poging_id, body, field):
    response = client.post(CALLBACK, json=body(poging_id), headers=bearer())
    assert response.status_code == 400
    assert field in {v["field"] for v in response.json()["violations"]}
    assert TO not in response.text
    assert teller(conn, "receipt_ongeldig") == 1
    assert receipt_taken(conn) == []


@pytest.mark.parametrize(
    ("content", "content_type"),
    [(b'{"id": ', "application/json"), (b"{}", "text/plain"), (b"x" * 70_000, "application/json")],
)
def test_bad_json_is_400_and_counted(client, conn, content, content_type):
    response = client.post(
        CALLBACK, content=content, headers={**bearer(), "Content-Type": content_type}
    )
    assert response.status_code == 400
    assert teller(conn, "receipt_ongeldig") == 1


def test_storage_failure_is_503_so_notifynl_retries(client, conn, poging_id):
    conn.execute(
        "REVOKE EXECUTE ON FUNCTION nmc.store_receipts_v2("
        "text[], uuid[], text[], timestamptz[], timestamptz[], uuid[], integer[]) FROM nmc_api"
    )
    response = client.post(CALLBACK, json=receipt(poging_id), headers=bearer())
    assert response.status_code == 503
    assert response.headers["retry-after"]
    assert receipt_taken(conn) == []


def test_a_bad_token_is_401_even_when_it_cannot_be_counted(client, conn, poging_id):
    conn.execute("REVOKE EXECUTE ON FUNCTION nmc.count_refused_callback(integer) FROM nmc_api")
    response = client.post(CALLBACK, json=receipt(poging_id), headers=bearer("verkeerd-token"))
    assert response.status_code == 401


def test_without_a_configured_token_the_callback_is_503(api_env, dvs, monkeypatch):
    monkeypatch.delenv("NMC_NOTIFYNL_CALLBACK_TOKEN")
    with TestClient(create_app()) as client:
        response = client.post(CALLBACK, json=receipt(str(uuid.uuid4())), headers=bearer())
        assert response.status_code == 503


def test_to_is_nowhere_in_the_database(client, conn, poging_id):
    for status in ("sending", "delivered", "permanent-failure"):
        assert (
            client.post(
                CALLBACK, json=receipt(poging_id, status=status), headers=bearer()
            ).status_code
            == 200
        )
    client.post(CALLBACK, json=receipt(str(uuid.uuid4())), headers=bearer())
    client.post(CALLBACK, json=receipt(poging_id, id="kapot"), headers=bearer())
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'nmc' AND c.relkind IN ('r', 'p') AND NOT c.relispartition"
        ).fetchall()
    ]
    needles = (TO, TO.encode().hex())
    for table in tables:
        for (text,) in conn.execute(f"SELECT t::text FROM nmc.{table} AS t").fetchall():  # noqa: S608
            assert not any(needle in text.lower() for needle in needles), table


def test_two_authorization_headers_on_the_callback_are_401(client, conn, poging_id):
    import httpx

    for second in (bearer("verkeerd-token"), bearer()):
        headers = httpx.Headers([*bearer().items(), *second.items()])
        response = client.post(CALLBACK, json=receipt(poging_id), headers=headers)
        assert response.status_code == 401, response.text
    assert receipt_taken(conn) == []
    assert client.post(CALLBACK, json=receipt(poging_id), headers=bearer()).status_code == 200
