"""Intake through the real app and database: single, batch, replay, 409, validation, quota."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from apitest import BASE, OIN_A, auth, centraal, decentraal

DECENTRAAL = f"{BASE}/decentraal/notificaties"
CENTRAAL = f"{BASE}/centraal/notificaties"
TRACEPARENT_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACEPARENT_ID}-00f067aa0ba902b7-01"


def stored(conn, notificatie_id):
    return conn.execute(
        "SELECT status::text, versie, regie::text, berichttype, trace_id, batch_id::text, "
        "dienst, kek_id, pepper_versie FROM nmc.notificatie WHERE id = %s",
        [notificatie_id],
    ).fetchone()


def violations_of(response):
    assert response.headers["content-type"] == "application/problem+json"
    return {v["field"] for v in response.json()["violations"]}


# --------------------------------------------------------------------------------------------
# Accepted


@pytest.mark.parametrize(("path", "body"), [(DECENTRAAL, decentraal), (CENTRAAL, centraal)])
def test_intake_202_with_location_and_everything_in_one_transaction(client, conn, path, body):
    response = client.post(
        path, json=body(dienst="Toeslagen"), headers={**auth(), "traceparent": TRACEPARENT}
    )
    assert response.status_code == 202
    notificatie_id = response.json()["notificatieId"]
    assert response.headers["location"] == f"{BASE}/notificaties/{notificatie_id}"
    regie = "decentraal" if path == DECENTRAAL else "centraal"
    assert stored(conn, notificatie_id) == (
        "aangenomen", 1, regie, "aanslag", TRACEPARENT_ID, None, "Toeslagen", "kek-test-1", 1
    )  # fmt: skip
    assert conn.execute(
        "SELECT (SELECT count(*) FROM nmc.event WHERE notificatie_id = %(id)s AND sequence = 1),"
        " (SELECT count(*) FROM nmc.taak WHERE notificatie_id = %(id)s AND soort = 'verzenden'"
        "  AND trace_id = %(trace)s)",
        {"id": notificatie_id, "trace": TRACEPARENT_ID},
    ).fetchone() == (1, 1)
    assert response.headers["traceparent"].startswith(f"00-{TRACEPARENT_ID}-")


def test_without_traceparent_a_new_trace_id_is_stored_and_returned(client, conn):
    response = client.post(DECENTRAAL, json=decentraal(), headers=auth())
    trace_id = response.headers["traceparent"].split("-")[1]
    assert stored(conn, response.json()["notificatieId"])[4] == trace_id


def test_an_invalid_traceparent_is_ignored(client, conn):
    bad = "00-00000000000000000000000000000000-00f067aa0ba902b7-01"
    response = client.post(DECENTRAAL, json=decentraal(), headers={**auth(), "traceparent": bad})
    assert response.status_code == 202
    trace_id = stored(conn, response.json()["notificatieId"])[4]
    assert trace_id != "0" * 32
    assert response.headers["traceparent"].split("-")[1] == trace_id


def test_geldig_tot_beyond_the_maximum_is_refused_and_within_it_stored(client, conn):
    body = decentraal(geldigTot="2099-01-31T17:00:00+01:00", berichtType="aanslag")
    # 2099 is beyond the 30-day maximum: SQL refuses it (NM014) as a violation on geldigTot.
    response = client.post(DECENTRAAL, json=body, headers=auth())
    assert response.status_code == 400
    assert violations_of(response) == {"geldigTot"}
    soon = (datetime.now(UTC) + timedelta(days=2)).replace(microsecond=0)
    response = client.post(DECENTRAAL, json=decentraal(geldigTot=soon.isoformat()), headers=auth())
    assert response.status_code == 202
    assert (
        conn.execute(
            "SELECT geldig_tot FROM nmc.notificatie WHERE id = %s",
            [response.json()["notificatieId"]],
        ).fetchone()[0]
        == soon
    )


# --------------------------------------------------------------------------------------------
# Idempotency


def test_same_request_again_returns_the_same_id(client, conn):
    body = decentraal()
    first = client.post(DECENTRAAL, json=body, headers=auth())
    again = client.post(DECENTRAAL, json=body, headers=auth())
    assert first.status_code == again.status_code == 202
    assert first.json() == again.json()
    assert again.headers["location"] == first.headers["location"]
    assert conn.execute("SELECT count(*) FROM nmc.notificatie").fetchone()[0] == 1


def test_replay_is_canonical_key_order_and_domain_case_do_not_matter(client):
    body = decentraal(emailAdres="Info@Voorbeeld.NL")
    first = client.post(DECENTRAAL, json=body, headers=auth())
    reordered = dict(reversed(list(body.items())))
    reordered["emailAdres"] = "Info@voorbeeld.nl"
    again = client.post(DECENTRAAL, json=reordered, headers=auth())
    assert again.json() == first.json()


def test_same_notification_in_another_batch_is_a_replay(client):
    body = decentraal(batchId=str(uuid.uuid4()))
    first = client.post(DECENTRAAL, json=body, headers=auth())
    item = {k: v for k, v in body.items() if k != "batchId"}
    again = client.post(
        f"{DECENTRAAL}/_batch",
        json={"batchId": str(uuid.uuid4()), "notificaties": [item]},
        headers=auth(),
    )
    assert again.status_code == 202
    assert again.json()["notificaties"] == [first.json()]


def test_same_dvref_other_payload_is_409(client, conn):
    body = decentraal()
    client.post(DECENTRAAL, json=body, headers=auth())
    response = client.post(
        DECENTRAAL, json={**body, "berichtgegevens": {"naam": "Ander"}}, headers=auth()
    )
    assert response.status_code == 409
    problem = response.json()
    assert problem["type"].endswith("/conflict")
    assert [v["field"] for v in problem["violations"]] == ["dvRef"]
    # Through the other regie it is another payload too.
    response = client.post(CENTRAAL, json=centraal(dvRef=body["dvRef"]), headers=auth())
    assert response.status_code == 409
    assert conn.execute("SELECT count(*) FROM nmc.notificatie").fetchone()[0] == 1


def test_the_same_dvref_of_another_dv_is_another_notification(client):
    body = decentraal()
    a = client.post(DECENTRAAL, json=body, headers=auth())
    b = client.post(DECENTRAAL, json=body, headers=auth("00000001002002002000"))
    assert a.status_code == b.status_code == 202
    assert a.json() != b.json()


# --------------------------------------------------------------------------------------------
# Batch


def test_batch_accepts_all_in_order_with_one_batch_id(client, conn):
    batch_id = str(uuid.uuid4())
    items = [centraal(), centraal(identificatieType="KVK", identificatieNummer="12345678")]
    items.append(centraal(identificatieType="RSIN", identificatieNummer="002564440"))
    response = client.post(
        f"{CENTRAAL}/_batch", json={"batchId": batch_id, "notificaties": items}, headers=auth()
    )
    assert response.status_code == 202
    ids = [n["notificatieId"] for n in response.json()["notificaties"]]
    assert response.json()["batchId"] == batch_id
    assert len(set(ids)) == 3
    rows = conn.execute(
        "SELECT id::text, batch_id::text, regie::text FROM nmc.notificatie ORDER BY aangenomen_op"
    ).fetchall()
    assert {row[0] for row in rows} == set(ids)
    assert {(row[1], row[2]) for row in rows} == {(batch_id, "centraal")}
    # The same batch again: the same ids in the same order, nothing new.
    again = client.post(
        f"{CENTRAAL}/_batch", json={"batchId": batch_id, "notificaties": items}, headers=auth()
    )
    assert [n["notificatieId"] for n in again.json()["notificaties"]] == ids
    assert conn.execute("SELECT count(*) FROM nmc.notificatie").fetchone()[0] == 3


def test_batch_mixes_replays_and_new_items(client):
    known = decentraal()
    first = client.post(DECENTRAAL, json=known, headers=auth()).json()["notificatieId"]
    response = client.post(
        f"{DECENTRAAL}/_batch", json={"notificaties": [decentraal(), known]}, headers=auth()
    )
    assert response.status_code == 202
    ids = [n["notificatieId"] for n in response.json()["notificaties"]]
    assert ids[1] == first and ids[0] != first


def test_batch_400_lists_every_bad_item_by_index(client, conn):
    items = [
        decentraal(),
        decentraal(emailAdres="geen-adres"),
        decentraal(),
        decentraal(dvRef="", berichtgegevens={"naam": 3}),
    ]
    response = client.post(f"{DECENTRAAL}/_batch", json={"notificaties": items}, headers=auth())
    assert response.status_code == 400
    assert violations_of(response) == {
        "notificaties[1].emailAdres",
        "notificaties[3].dvRef",
        "notificaties[3].berichtgegevens",
    }
    assert conn.execute("SELECT count(*) FROM nmc.notificatie").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("item", "status", "field"),
    [
        ({"berichtType": "onbekend"}, 400, "notificaties[2].berichtType"),
        ({"berichtType": "alleen-centraal"}, 400, "notificaties[2].berichtType"),
        ({"geldigTot": "2099-01-01T00:00:00Z"}, 400, "notificaties[2].geldigTot"),
    ],
)
def test_batch_refusals_from_sql_name_the_item(client, conn, item, status, field):
    items = [decentraal(), decentraal(), decentraal(**item)]
    response = client.post(f"{DECENTRAAL}/_batch", json={"notificaties": items}, headers=auth())
    assert response.status_code == status
    assert violations_of(response) == {field}
    assert conn.execute("SELECT count(*) FROM nmc.notificatie").fetchone()[0] == 0


def test_batch_conflict_names_the_item(client):
    body = decentraal()
    client.post(DECENTRAAL, json=body, headers=auth())
    changed = {**body, "berichtgegevens": {"naam": "Ander"}}
    response = client.post(
        f"{DECENTRAAL}/_batch", json={"notificaties": [decentraal(), changed]}, headers=auth()
    )
    assert response.status_code == 409
    assert violations_of(response) == {"notificaties[1].dvRef"}


def test_batch_limits(client):
    response = client.post(f"{DECENTRAAL}/_batch", json={"notificaties": []}, headers=auth())
    assert violations_of(response) == {"notificaties"}
    too_many = [decentraal() for _ in range(1001)]
    response = client.post(f"{DECENTRAAL}/_batch", json={"notificaties": too_many}, headers=auth())
    assert response.status_code == 400
    assert violations_of(response) == {"notificaties"}
    dup = decentraal()
    response = client.post(
        f"{DECENTRAAL}/_batch", json={"notificaties": [dup, dict(dup)]}, headers=auth()
    )
    assert violations_of(response) == {"notificaties[1].dvRef"}


def test_batch_of_1000(client, conn):
    items = [decentraal() for _ in range(1000)]
    response = client.post(f"{DECENTRAAL}/_batch", json={"notificaties": items}, headers=auth())
    assert response.status_code == 202
    assert len(response.json()["notificaties"]) == 1000
    assert conn.execute("SELECT count(*) FROM nmc.taak").fetchone()[0] == 1000


# --------------------------------------------------------------------------------------------
# Validation reaching the HTTP layer


def _past():
    return (datetime.now(UTC) - timedelta(minutes=5)).isoformat()


@pytest.mark.parametrize(
    ("path", "body", "fields"),
    [
        # NotifyNL takes these, the NMC's form does not (what NotifyNL refuses is a 422:
        # test_api_door.py).
        (DECENTRAAL, decentraal(emailAdres=".a@b.nl"), {"emailAdres"}),
        (DECENTRAAL, decentraal(emailAdres=" a@b.nl"), {"emailAdres"}),
        (DECENTRAAL, decentraal(emailAdres=...), {"emailAdres"}),
        (DECENTRAAL, decentraal(emailAdres="a" * 250 + "@b.nl"), {"emailAdres"}),
        (DECENTRAAL, decentraal(dvRef=""), {"dvRef"}),
        (DECENTRAAL, decentraal(dvRef="x" * 201), {"dvRef"}),
        (DECENTRAAL, decentraal(dvRef="a\u0000b"), {"dvRef"}),
        (DECENTRAAL, decentraal(dvRef=...), {"dvRef"}),
        (DECENTRAAL, decentraal(berichtType=...), {"berichtType"}),
        (DECENTRAAL, decentraal(berichtType="met spatie"), {"berichtType"}),
        (DECENTRAAL, decentraal(berichtgegevens=["a"]), {"berichtgegevens"}),
        (DECENTRAAL, decentraal(berichtgegevens={"a": {"b": "c"}}), {"berichtgegevens"}),
        (DECENTRAAL, decentraal(berichtgegevens={"a": 1}), {"berichtgegevens"}),
        (DECENTRAAL, decentraal(berichtgegevens={"a-b": "c"}), {"berichtgegevens"}),
        (DECENTRAAL, decentraal(berichtgegevens={"a": "x" * 2001}), {"berichtgegevens"}),
        (
            DECENTRAAL,
            decentraal(berichtgegevens={f"k{i}": "x" * 1000 for i in range(17)}),
            {"berichtgegevens"},
        ),
        (
            DECENTRAAL,
            decentraal(berichtgegevens={f"k{i}": "x" for i in range(51)}),
            {"berichtgegevens"},
        ),
        (DECENTRAAL, decentraal(geldigTot="morgen"), {"geldigTot"}),
        (DECENTRAAL, decentraal(geldigTot="2030-01-01T00:00:00"), {"geldigTot"}),
        (DECENTRAAL, decentraal(geldigTot=_past()), {"geldigTot"}),
        (DECENTRAAL, decentraal(batchId="batch-1"), {"batchId"}),
        (DECENTRAAL, decentraal(dienst=""), {"dienst"}),
        (DECENTRAAL, decentraal(callbackUrl="https://dv.example/cb"), {"callbackUrl"}),
        (DECENTRAAL, decentraal(onbekend="x"), {""}),  # unknown: named by position only
        (DECENTRAAL, decentraal(identificatieType="BSN"), {"identificatieType"}),
        (CENTRAAL, centraal(identificatieNummer="111222334"), {"identificatieNummer"}),
        (CENTRAAL, centraal(identificatieNummer="000000000"), {"identificatieNummer"}),
        (CENTRAAL, centraal(identificatieNummer=111222333), {"identificatieNummer"}),
        (
            CENTRAAL,
            centraal(identificatieType="RSIN", identificatieNummer="002564441"),
            {"identificatieNummer"},
        ),
        (
            CENTRAAL,
            centraal(identificatieType="KVK", identificatieNummer="1234567"),
            {"identificatieNummer"},
        ),
        (
            CENTRAAL,
            centraal(identificatieType="KVK", identificatieNummer="1234567a"),
            {"identificatieNummer"},
        ),
        (CENTRAAL, centraal(identificatieType="IBAN"), {"identificatieType"}),
        (CENTRAAL, centraal(emailAdres="a@b.nl"), {"emailAdres"}),
        (CENTRAAL, centraal(identificatieNummer=...), {"identificatieNummer"}),
        # Checked in SQL (NM008, NM014), still reported as a violation on the field.
        (DECENTRAAL, decentraal(berichtType="onbekend"), {"berichtType"}),
        (DECENTRAAL, decentraal(berichtType="alleen-centraal"), {"berichtType"}),
        (DECENTRAAL, decentraal(geldigTot="2099-01-01T00:00:00Z"), {"geldigTot"}),
    ],
)
def test_every_rule_is_a_400_with_violations(client, conn, path, body, fields):
    response = client.post(path, json=body, headers=auth())
    assert response.status_code == 400
    problem = response.json()
    assert problem["type"] == "https://mijnoverheidzakelijk.nl/nmc/problemen/ongeldige-invoer"
    assert problem["status"] == 400
    assert violations_of(response) == fields
    assert all(v["in"] == "body" for v in problem["violations"])
    assert conn.execute("SELECT count(*) FROM nmc.notificatie").fetchone()[0] == 0


def test_all_violations_at_once(client):
    body = decentraal(emailAdres="x", dvRef="", geldigTot=_past(), callbackUrl="https://x.nl")
    response = client.post(DECENTRAAL, json=body, headers=auth())
    assert violations_of(response) == {"emailAdres", "dvRef", "geldigTot", "callbackUrl"}
    callback = next(v for v in response.json()["violations"] if v["field"] == "callbackUrl")
    assert "webhook" in callback["message"]


def test_geldig_tot_against_the_database_clock(client, conn):
    # The NMC clock runs two days ahead: tomorrow (by the wall clock) is in its past.
    conn.execute("SELECT nmc.advance_clock('2 days')")
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    response = client.post(DECENTRAAL, json=decentraal(geldigTot=tomorrow), headers=auth())
    assert response.status_code == 400
    assert violations_of(response) == {"geldigTot"}


@pytest.mark.parametrize(
    ("content", "content_type", "status"),
    [
        (b'{"dvRef": ', "application/json", 400),
        (b"[1, 2", "application/json", 400),
        (b'{"dvRef": NaN}', "application/json", 400),
        (b"\xff\xfe\x00", "application/json", 400),
        (b"{}", "text/plain", 415),
        (b"{}", None, 415),
        (b"dvRef=x", "application/x-www-form-urlencoded", 415),
    ],
)
def test_bad_json_and_wrong_content_type(client, content, content_type, status):
    headers = auth()
    if content_type:
        headers["Content-Type"] = content_type
    response = client.post(DECENTRAAL, content=content, headers=headers)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    if status == 415:
        assert response.json()["type"].endswith("/niet-ondersteund-mediatype")


def test_json_with_charset_is_fine(client):
    import json

    response = client.post(
        DECENTRAAL,
        content=json.dumps(decentraal()).encode(),
        headers={**auth(), "Content-Type": "application/json; charset=utf-8"},
    )
    assert response.status_code == 202


def test_body_that_is_not_an_object(client):
    response = client.post(DECENTRAAL, json=["a"], headers=auth())
    assert response.status_code == 400


def test_body_size_limit(client, monkeypatch):
    big = decentraal(berichtgegevens={"a": "x" * 70_000})
    response = client.post(DECENTRAAL, json=big, headers=auth())
    assert response.status_code == 400
    assert response.json()["violations"][0]["message"] == "is groter dan 65536 bytes"


def test_body_size_limit_without_content_length(client):
    def chunks():
        yield b'{"dvRef": "'
        for _ in range(100):
            yield b"x" * 1000
        yield b'"}'

    response = client.post(
        DECENTRAAL, content=chunks(), headers={**auth(), "Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert "groter dan" in response.json()["violations"][0]["message"]


# --------------------------------------------------------------------------------------------
# Quota


def test_quota_429_with_retry_after(client, apply_dv):
    oin = "00000001003003003000"
    apply_dv(oin, quotumPerMinuut=100, quotumPerDag=2)
    for _ in range(2):
        assert client.post(DECENTRAAL, json=decentraal(), headers=auth(oin)).status_code == 202
    response = client.post(DECENTRAAL, json=decentraal(), headers=auth(oin))
    assert response.status_code == 429
    assert response.json()["type"].endswith("/quotum-overschreden")
    assert 1 <= int(response.headers["retry-after"]) <= 86_400
    # A batch counts every item; a refused batch leaves nothing behind.
    response = client.post(
        f"{DECENTRAAL}/_batch",
        json={"notificaties": [decentraal(), decentraal()]},
        headers=auth(oin),
    )
    assert response.status_code == 429
    # Another DV is not affected.
    assert client.post(DECENTRAAL, json=decentraal(), headers=auth(OIN_A)).status_code == 202


def test_replays_do_not_count_against_the_quota(client, apply_dv):
    oin = "00000001004004004000"
    apply_dv(oin, quotumPerMinuut=100, quotumPerDag=1)
    body = decentraal()
    for _ in range(3):
        assert client.post(DECENTRAAL, json=body, headers=auth(oin)).status_code == 202


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_a_body_that_is_not_utf8_is_refused(client, codec):
    import json

    body = json.dumps(decentraal()).encode(codec)
    response = client.post(
        DECENTRAAL, content=body, headers={**auth(), "Content-Type": "application/json"}
    )
    assert response.status_code == 400, response.text
    assert response.json()["violations"][0]["field"] == ""


def test_a_byte_order_mark_is_refused(client):
    import json

    body = b"\xef\xbb\xbf" + json.dumps(decentraal()).encode()
    response = client.post(
        DECENTRAAL, content=body, headers={**auth(), "Content-Type": "application/json"}
    )
    assert response.status_code == 400


@pytest.mark.parametrize(
    "content",
    [
        b'{"dvRef": "zaak-a", "dvRef": "zaak-b", "berichtType": "aanslag",'
        b' "emailAdres": "info@voorbeeld.nl"}',
        b'{"dvRef": "zaak-a", "berichtType": "aanslag", "emailAdres": "info@voorbeeld.nl",'
        b' "berichtgegevens": {"naam": "a", "naam": "b"}}',
    ],
)
def test_a_member_twice_in_one_object_is_refused(client, conn, content):
    response = client.post(
        DECENTRAAL, content=content, headers={**auth(), "Content-Type": "application/json"}
    )
    assert response.status_code == 400, response.text
    assert response.json()["violations"] == [
        {"field": "", "in": "body", "message": "bevat een veld twee keer in hetzelfde object"}
    ]
    assert conn.execute("SELECT count(*) FROM nmc.notificatie").fetchone()[0] == 0


def test_a_member_twice_in_a_batch_item_is_refused(client):
    content = (
        b'{"notificaties": [{"dvRef": "zaak-a", "berichtType": "aanslag",'
        b' "emailAdres": "a@voorbeeld.nl", "emailAdres": "b@voorbeeld.nl"}]}'
    )
    response = client.post(
        DECENTRAAL + "/_batch",
        content=content,
        headers={**auth(), "Content-Type": "application/json"},
    )
    assert response.status_code == 400, response.text


def test_invisible_characters_do_not_make_a_second_notification(client, conn):
    first = client.post(DECENTRAAL, json=decentraal(dvRef="zaakX"), headers=auth())
    assert first.status_code == 202
    for lookalike in ("zaak\u200bX", "zaak\u202eX", "zaak\u00a0X", "\ufeffzaakX"):
        response = client.post(DECENTRAAL, json=decentraal(dvRef=lookalike), headers=auth())
        assert response.status_code == 400, response.text
        assert response.json()["violations"][0]["field"] == "dvRef"
    assert conn.execute("SELECT count(*) FROM nmc.notificatie").fetchone()[0] == 1


@pytest.mark.parametrize("name", ["berichtgegevens", "dienst", "geldigTot", "batchId"])
def test_null_for_an_optional_field_is_a_400(client, name):
    response = client.post(DECENTRAAL, json=decentraal(**{name: None}), headers=auth())
    assert response.status_code == 400, response.text
    assert [item["field"] for item in response.json()["violations"]] == [name]
