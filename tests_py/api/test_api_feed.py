"""GET /notificaties/wijzigingen and PUT …/bevestiging: CloudEvents, cursors, 400/410/429, ack."""

import json
import re
import uuid
from datetime import datetime

import pytest
from apitest import OIN_A, OIN_B, auth
from feedtest import ACK, FEED, intake, page, read_until, tamper, transition
from starlette.testclient import TestClient

from nmc.api.app import create_app
from nmc.feed.cloudevents import ATTRIBUTES, TYPE_PREFIX

SOURCE = "urn:nld:oin:00000001234567890000:systeem:nmc"


def problem_of(response, status: int, slug: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["type"].endswith("/" + slug)
    return body


def test_a_page_holds_cloudevents_with_exactly_the_required_attributes(client, conn):
    [notificatie_id] = intake(client)
    events, cursor = read_until(client, 1)
    [event] = events
    assert set(event) == set(ATTRIBUTES)
    assert event["specversion"] == "1.0"
    assert re.fullmatch(r"[1-9][0-9]*", event["id"])
    assert event["source"] == SOURCE
    assert event["type"] == TYPE_PREFIX + "aangenomen"
    assert event["subject"] == notificatie_id
    assert event["time"].endswith("Z") and datetime.fromisoformat(event["time"]).tzinfo
    assert (event["sequence"], event["sequencetype"]) == ("1", "Integer")
    assert event["datacontenttype"] == "application/json"
    assert event["data"] == {"van": None, "naar": "aangenomen", "reden": None, "versie": 1}

    transition(conn, notificatie_id, "in-verzending")
    [moved], cursor = read_until(client, 1, cursor)
    assert moved["type"] == TYPE_PREFIX + "in-verzending"
    assert (moved["sequence"], moved["data"]["van"], moved["data"]["versie"]) == (
        "2", "aangenomen", 2,
    )  # fmt: skip
    assert int(moved["id"]) > int(event["id"])
    # Nothing new: an empty page that still hands out a cursor.
    again = page(client, cursor)
    assert again["events"] == [] and again["cursor"]


def test_pages_follow_limiet_without_gaps_or_duplicates(client):
    ids = intake(client, 5)
    events, _ = read_until(client, 5, limiet=2)
    assert sorted(e["subject"] for e in events) == sorted(ids)
    assert len({e["id"] for e in events}) == 5
    first = page(client, limiet=2)
    assert len(first["events"]) == 2


def test_a_dv_sees_only_its_own_events(client):
    intake(client, 2, oin=OIN_A)
    [mine] = intake(client, 1, oin=OIN_B)
    events, _ = read_until(client, 1, oin=OIN_B)
    assert [e["subject"] for e in events] == [mine]


@pytest.mark.parametrize(
    "params",
    [{"limiet": "0"}, {"limiet": "abc"}, {"onbekend": "1"}, {"cursor": "niet geldig!"}],
)
def test_bad_query_is_400(client, params):
    response = client.get(FEED, params=params, headers=auth())
    body = problem_of(response, 400, "ongeldige-invoer")
    assert body["violations"] and body["violations"][0]["in"] == "query"


def test_a_tampered_cursor_is_400(client):
    intake(client)
    _, cursor = read_until(client, 1)
    for bad in (tamper(cursor), cursor[:-2], cursor + "AA", "A" * len(cursor)):
        response = client.get(FEED, params={"cursor": bad}, headers=auth())
        body = problem_of(response, 400, "ongeldige-invoer")
        assert body["violations"] == [
            {"field": "cursor", "in": "query", "message": "is geen geldige cursor"}
        ]
        assert bad not in response.text


def test_another_dvs_cursor_is_400(client):
    intake(client, oin=OIN_B)
    _, cursor_b = read_until(client, 1, oin=OIN_B)
    response = client.get(FEED, params={"cursor": cursor_b}, headers=auth(OIN_A))
    assert problem_of(response, 400, "ongeldige-invoer")["violations"][0]["field"] == "cursor"
    ack = client.put(ACK, json={"cursor": cursor_b}, headers=auth(OIN_A))
    assert problem_of(ack, 400, "ongeldige-invoer")["violations"][0]["in"] == "body"


def test_an_epoch_raise_expires_every_cursor(client, conn):
    intake(client)
    _, cursor = read_until(client, 1)
    conn.execute("SELECT nmc.raise_epoch()")
    response = client.get(FEED, params={"cursor": cursor}, headers=auth())
    problem_of(response, 410, "cursor-vervallen")
    problem_of(client.put(ACK, json={"cursor": cursor}, headers=auth()), 410, "cursor-vervallen")
    # Without a cursor the DV starts again from the oldest event, in the new epoch.
    events, fresh = read_until(client, 1)
    assert len(events) == 1
    assert page(client, fresh)["events"] == []


def test_a_cursor_older_than_the_max_cursor_age_is_410(client, conn):
    intake(client)
    _, cursor = read_until(client, 1)
    conn.execute("SELECT nmc.advance_clock('29 days')")
    fresh = page(client, cursor)["cursor"]  # still valid, and renewed by the answer
    conn.execute("SELECT nmc.advance_clock('2 days')")
    problem_of(client.get(FEED, params={"cursor": cursor}, headers=auth()), 410, "cursor-vervallen")
    assert page(client, fresh)["events"] == []


def test_a_cursor_into_a_dropped_partition_is_410(api_env, apply_dv, conn):
    apply_dv(OIN_A, maxCursorleeftijd="1000 days")  # only the partition can expire it
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        intake(client)
        _, cursor = read_until(client, 1)
        [(eind,)] = conn.execute(
            "SELECT xid_tot::text::bigint FROM nmc.event_partitie WHERE verwijderd_op IS NULL"
        ).fetchall()
        conn.execute(
            "SELECT nmc.maintain_event_partities(1000, %s::text::xid8)", (str(int(eind * 0.8)),)
        )
        # A kept notification holds its events' range: it ends and goes after the retention.
        conn.execute(
            "SELECT nmc.transition_notificatie(id, 'verlopen', 'verlopen') FROM nmc.notificatie"
        )
        conn.execute("SELECT nmc.advance_clock('400 days')")
        conn.execute("SELECT nmc.delete_expired(1000)")
        [(dropped,)] = conn.execute(
            "SELECT nmc.drop_event_partities(%s::text::xid8)", (str(eind + 1),)
        ).fetchall()
        assert dropped == ["event_x000000000000"]
        response = client.get(FEED, params={"cursor": cursor}, headers=auth())
        problem_of(response, 410, "cursor-vervallen")
        assert page(client)["events"] == []  # the oldest available: nothing is left


def test_the_call_rate_gives_429_with_retry_after(api_env, apply_dv):
    apply_dv(OIN_A, feedAanroepenPerMinuut=1)
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        # Two windows can meet between two calls, never between three.
        responses = [client.get(FEED, headers=auth()) for _ in range(3)]
    refused = [r for r in responses if r.status_code == 429]
    assert refused, [r.status_code for r in responses]
    problem_of(refused[0], 429, "aanroeplimiet-overschreden")
    assert 1 <= int(refused[0].headers["retry-after"]) <= 60


def test_acknowledgement_only_moves_forward(client, conn):
    intake(client, 2)
    _, after_first = read_until(client, 1, limiet=1)
    [second], after_both = read_until(client, 1, after_first, limiet=1)

    def ack(cursor):
        return client.put(ACK, json={"cursor": cursor}, headers=auth())

    first = ack(after_both)
    assert (first.status_code, first.headers["nmc-bevestiging"]) == (204, "bevestigd")
    assert first.content == b""
    older = ack(after_first)
    assert (older.status_code, older.headers["nmc-bevestiging"]) == (204, "ongewijzigd")
    assert ack(after_both).headers["nmc-bevestiging"] == "ongewijzigd"
    [(event_id,)] = conn.execute(
        "SELECT b.event_id FROM nmc.bevestiging AS b"
        " JOIN nmc.dienstverlener AS d USING (dv_id) WHERE d.oin = %s",
        (OIN_A,),
    ).fetchall()
    assert str(event_id) == second["id"]


@pytest.mark.parametrize(
    ("body", "field"),
    [({}, "cursor"), ({"cursor": 5}, "cursor"), ({"cursor": "x", "extra": 1}, "")],
)
def test_a_bad_acknowledgement_is_400(client, body, field):
    response = client.put(ACK, json=body, headers=auth())
    body = problem_of(response, 400, "ongeldige-invoer")
    assert field in {v["field"] for v in body["violations"]}


def test_acknowledgement_needs_json(client):
    headers = {**auth(), "content-type": "text/plain"}
    response = client.put(ACK, content=b"cursor=x", headers=headers)
    problem_of(response, 415, "niet-ondersteund-mediatype")


def test_feed_needs_a_token_and_a_known_dv(client):
    assert client.get(FEED).status_code == 401
    assert client.put(ACK, json={"cursor": "x"}).status_code == 401


def test_an_ldv_record_per_page_with_events(client, api_env, tmp_path):
    ids = intake(client, 2)
    read_until(client, 2)
    page(client)  # a page again, from the start: a second record
    _, cursor = read_until(client, 2)
    page(client, cursor)  # empty: provides nothing, no record
    records = [json.loads(line) for line in (tmp_path / "ldv.jsonl").read_text().splitlines()]
    assert records, "no LDV record written"
    for record in records:
        assert record["name"] == "feed.pagina"
        assert record["attributes"]["dpl.core.processing_activity_id"] == "nmc-status-verstrekken"
        assert set(record["attributes"]["nmc.notificatie_ids"]) <= set(ids)
        assert re.fullmatch(r"[0-9a-f]{32}", record["trace_id"])
    assert all(record["attributes"]["nmc.notificatie_ids"] for record in records)


def test_without_the_ldv_no_page_is_provided(api_env, dvs, monkeypatch):
    monkeypatch.setenv("NMC_LDV_URL", "http://127.0.0.1:9/ldv")  # nothing listens there
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        intake(client)
        for _ in range(200):
            response = client.get(FEED, headers=auth())
            if response.status_code != 200:
                break
            assert response.json()["events"] == []  # an empty page needs no record
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"]
        assert "events" not in response.text


def test_cursor_is_opaque_and_short(client):
    intake(client)
    _, cursor = read_until(client, 1)
    assert re.fullmatch(r"[A-Za-z0-9_-]{20,128}", cursor)
    assert str(uuid.UUID(int=0)) not in cursor
