"""What the API's door refuses, found by probing it as a black box: names the caller
made up are never echoed, HEAD does no work, and a body is `application/json` in UTF-8 only.
"""

import json
import os
import re
import uuid
from pathlib import Path

import pytest
from apitest import BASE, OIN_A, OIN_B, auth, centraal, decentraal
from feedtest import ACK, FEED, SNAPSHOT, intake
from test_api_afleverbewijs import callback, delivered, send, submit

DECENTRAAL = f"{BASE}/decentraal/notificaties"
CENTRAAL = f"{BASE}/centraal/notificaties"
BSN = "999993653"  # a valid BSN (elfproef), sent as a member or parameter name


def proof_url(notificatie_id: str) -> str:
    return f"{BASE}/notificaties/{notificatie_id}/afleverbewijs"


def history_url(notificatie_id: str) -> str:
    return f"{BASE}/notificaties/{notificatie_id}/geschiedenis"


def refused_without_echo(response, secret: str = BSN) -> list[dict]:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert secret not in response.text
    return response.json()["violations"]


def ldv_records() -> list[dict]:
    path = Path(os.environ["NMC_LDV_FILE"])
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


# --------------------------------------------------------------------------------------------
# Item 8: names echoed in errors


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (DECENTRAAL, lambda: decentraal(**{BSN: "x"})),
        (CENTRAAL, lambda: centraal(**{BSN: "x"})),
        (f"{DECENTRAAL}/_batch", lambda: {"notificaties": [decentraal(**{BSN: "x"})]}),
        (f"{DECENTRAAL}/_batch", lambda: {"notificaties": [decentraal()], BSN: "x"}),
    ],
)
def test_an_unknown_body_member_is_never_named(client, path, body):
    [found] = refused_without_echo(client.post(path, json=body(), headers=auth()))
    assert found["in"] == "body"
    assert found["field"] in ("", "notificaties[0]")
    assert found["message"].startswith("bevat een onbekend veld (veld ")


def test_an_unknown_member_of_the_acknowledgement_is_never_named(client):
    response = client.put(ACK, json={"cursor": "abc", BSN: "x"}, headers=auth())
    violations = refused_without_echo(response)
    assert any("onbekend veld" in v["message"] for v in violations)


def test_an_unknown_member_says_where_it_is(client):
    body = {"notificaties": [decentraal(), decentraal(**{BSN: "x", "misspelt": 1})]}
    found = refused_without_echo(client.post(f"{DECENTRAAL}/_batch", json=body, headers=auth()))
    assert [v["field"] for v in found] == ["notificaties[1]"] * 2
    assert "misspelt" not in json.dumps(found)
    # Positions tell the two apart: the fifth and sixth member of that object.
    assert [v["message"] for v in found] == [
        "bevat een onbekend veld (veld 5 van het object)",
        "bevat een onbekend veld (veld 6 van het object)",
    ]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (DECENTRAAL, lambda: decentraal(berichtgegevens={"naam": "x", BSN: 1}), "berichtgegevens"),
        (
            CENTRAAL,
            lambda: centraal(berichtgegevens={"naam": "x", BSN: "a\u0000"}),
            "berichtgegevens",
        ),
        (
            f"{DECENTRAAL}/_batch",
            lambda: {"notificaties": [decentraal(berichtgegevens={"naam": "x", BSN: "x" * 2001})]},
            "notificaties[0].berichtgegevens",
        ),
    ],
)
def test_a_berichtgegevens_key_is_never_named(client, path, body, field):
    # A value refused for its type, a control character or its length: the key (here a BSN)
    # is the DV's own text, so the violation names the member by its position.
    [found] = refused_without_echo(client.post(path, json=body(), headers=auth()))
    assert (found["field"], found["in"]) == (field, "body")
    assert found["message"].startswith("veld 2 van berichtgegevens ")


@pytest.mark.parametrize(
    "url",
    [
        f"{BASE}/notificaties?dvRef=zaak-1",
        FEED,
        SNAPSHOT,
        "HISTORY",
        "PROOF",
    ],
)
def test_an_unknown_query_parameter_is_never_named(client, url):
    if url in ("HISTORY", "PROOF"):
        [notificatie_id] = intake(client)
        url = history_url(notificatie_id) if url == "HISTORY" else proof_url(notificatie_id)
    separator = "&" if "?" in url else "?"
    response = client.get(f"{url}{separator}{BSN}=1", headers=auth())
    [found] = refused_without_echo(response)
    assert (found["field"], found["in"]) == ("", "query")
    position = 2 if separator == "&" else 1
    assert found["message"] == f"bevat een onbekende parameter (parameter {position} van de query)"


def test_a_known_name_is_still_named(client):
    response = client.post(DECENTRAAL, json=decentraal(callbackUrl="https://x.nl"), headers=auth())
    assert [v["field"] for v in response.json()["violations"]] == ["callbackUrl"]
    response = client.get(FEED, params={"limiet": "0"}, headers=auth())
    assert [v["field"] for v in response.json()["violations"]] == ["limiet"]


# --------------------------------------------------------------------------------------------
# Item 9: HEAD does no work


@pytest.mark.parametrize("which", ["proof", "history", "feed", "snapshot"])
def test_head_is_refused_without_the_work(client, which):
    [notificatie_id] = intake(client)
    url = {
        "proof": proof_url(notificatie_id),
        "history": history_url(notificatie_id),
        "feed": FEED,
        "snapshot": SNAPSHOT,
    }[which]
    before = len(ldv_records())
    response = client.head(url, headers=auth())
    assert response.status_code == 405
    assert response.headers["allow"] == "GET"
    assert response.content == b""
    assert len(ldv_records()) == before
    assert client.get(url, headers=auth()).status_code == 200


# --------------------------------------------------------------------------------------------
# Item 11: content types


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json; charset=utf-16",
        "application/json; charset=latin-1",
        "application/json; charset=utf-8; charset=utf-16",
        "application/merge-patch+json",
        "application/problem+json",
        "application/json-seq",
        "text/json",
        "application/json; foo=bar",
    ],
)
def test_a_body_is_application_json_in_utf8_only(client, conn, content_type):
    data = json.dumps(decentraal()).encode("utf-8")
    response = client.post(
        DECENTRAAL, content=data, headers={**auth(), "Content-Type": content_type}
    )
    assert response.status_code == 415, response.text
    assert response.json()["type"].endswith("/niet-ondersteund-mediatype")
    response = client.put(
        ACK, content=b'{"cursor": "abc"}', headers={**auth(), "Content-Type": content_type}
    )
    assert response.status_code == 415, response.text
    assert conn.execute("SELECT count(*) FROM nmc.notificatie").fetchone()[0] == 0


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "Application/JSON",
        "application/json; charset=utf-8",
        'application/json;charset="UTF-8"',
        "application/json ; Charset=utf-8",
    ],
)
def test_application_json_in_utf8_is_accepted(client, content_type):
    data = json.dumps(decentraal()).encode("utf-8")
    response = client.post(
        DECENTRAAL, content=data, headers={**auth(), "Content-Type": content_type}
    )
    assert response.status_code == 202, response.text


def test_the_proof_and_the_history_refuse_unknown_parameters_alike(client):
    [notificatie_id] = intake(client)
    for url in (proof_url(notificatie_id), history_url(notificatie_id)):
        response = client.get(url, params={"onbekend": "1"}, headers=auth())
        [found] = refused_without_echo(response, "onbekend=")
        assert (found["field"], found["in"]) == ("", "query")
    # The proof has no parameters at all: the history's are unknown to it.
    response = client.get(proof_url(notificatie_id), params={"limiet": "5"}, headers=auth())
    assert response.status_code == 400
    assert client.get(proof_url(str(uuid.uuid4())), headers=auth()).status_code == 404


# --------------------------------------------------------------------------------------------
# Item 3: an address NotifyNL would refuse is a 422 at intake


ADDRESS_REFUSED = "https://mijnoverheidzakelijk.nl/nmc/problemen/emailadres-geweigerd"


@pytest.mark.parametrize(
    "address",
    [
        "incorrect-punycode@xn---something.com",  # accepted before: NotifyNL refuses it
        "jan@voor---beeld.nl",
        "jan@voorbeeld.xn--p1--ai",
        "plainaddress",
        "jan@voorbeeld..nl",
    ],
)
def test_an_address_notifynl_would_refuse_is_a_422(client, conn, address):
    response = client.post(DECENTRAAL, json=decentraal(emailAdres=address), headers=auth())
    assert response.status_code == 422, response.text
    problem = response.json()
    assert (problem["type"], problem["status"]) == (ADDRESS_REFUSED, 422)
    assert problem["violations"] == [
        {"field": "emailAdres", "in": "body", "message": "wordt door NotifyNL geweigerd"}
    ]
    assert address not in response.text
    assert conn.execute("SELECT count(*) FROM nmc.notificatie").fetchone()[0] == 0


def test_a_batch_names_the_items_whose_address_notifynl_would_refuse(client):
    body = {
        "notificaties": [
            decentraal(),
            decentraal(emailAdres="jan@voor---beeld.nl"),
            decentraal(emailAdres="plainaddress"),
        ]
    }
    response = client.post(f"{DECENTRAAL}/_batch", json=body, headers=auth())
    assert response.status_code == 422, response.text
    assert [v["field"] for v in response.json()["violations"]] == [
        "notificaties[1].emailAdres",
        "notificaties[2].emailAdres",
    ]


def test_a_request_of_the_wrong_shape_is_a_400_listing_the_address_too(client):
    body = decentraal(emailAdres="plainaddress", dvRef="")
    response = client.post(DECENTRAAL, json=body, headers=auth())
    assert response.status_code == 400, response.text
    assert {v["field"] for v in response.json()["violations"]} == {"dvRef", "emailAdres"}


@pytest.mark.parametrize("address", [" jan@voorbeeld.nl", ".jan@voorbeeld.nl", "a" * 65 + "@x.nl"])
def test_an_address_notifynl_accepts_but_the_nmc_form_refuses_stays_a_400(client, address):
    response = client.post(DECENTRAAL, json=decentraal(emailAdres=address), headers=auth())
    assert response.status_code == 400, response.text
    assert response.json()["violations"][0]["field"] == "emailAdres"


# --------------------------------------------------------------------------------------------
# Item 10: the history's page cursor is bound to the notification and holds no global counter


def history_pages(client, notificatie_id, limiet="1", oin=OIN_A):
    """Every page of the history; the cursors handed out."""
    pages, cursors, cursor = [], [], None
    while True:
        params = {"limiet": limiet, **({"cursor": cursor} if cursor else {})}
        response = client.get(history_url(notificatie_id), params=params, headers=auth(oin))
        assert response.status_code == 200, response.text
        pages.append(response.json())
        cursor = pages[-1]["volgende"]
        if cursor is None:
            return pages, cursors
        cursors.append(cursor)


def test_the_history_cursor_is_bound_to_its_notification(client, conn):
    other = delivered(client, conn)  # NMC-wide receipt numbers now start above 1
    notificatie_id = submit(client)
    send(conn, notificatie_id)
    callback(client, conn, notificatie_id, "temporary-failure")
    send(conn, notificatie_id)
    callback(client, conn, notificatie_id, "delivered")
    pages, cursors = history_pages(client, notificatie_id)
    assert [e["sequence"] for p in pages for e in p["events"]] == [1, 2, 3, 4, 5]
    assert [r["status"] for p in pages for r in p["receipts"]] == [
        "temporary-failure",
        "delivered",
    ]
    first = cursors[0]
    assert re.fullmatch(r"[A-Za-z0-9_-]{20,128}", first) and "." not in first
    # Its position is the notification's own: after event 1 and after its first receipt,
    # not the NMC-wide number of that receipt.
    codec = client.app.state.nmc.cursors
    dv_a = conn.execute("SELECT dv_id FROM nmc.dienstverlener WHERE oin = %s", (OIN_A,)).fetchone()[
        0
    ]
    assert codec.decode_geschiedenis(dv_a, uuid.UUID(notificatie_id), first) == (1, 1)
    # On another notification, the same DV's or another DV's, it is no cursor.
    theirs = submit(client, oin=OIN_B)
    for target, oin in ((other, OIN_A), (theirs, OIN_B)):
        response = client.get(history_url(target), params={"cursor": first}, headers=auth(oin))
        [found] = response.json()["violations"]
        assert (response.status_code, found["field"], found["in"]) == (400, "cursor", "query")
    # The old form (`<sequence>.<receipt>`) is refused as well.
    response = client.get(history_url(notificatie_id), params={"cursor": "1.1"}, headers=auth())
    assert response.status_code == 400


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", DECENTRAAL, decentraal),
        ("POST", CENTRAAL, centraal),
        ("POST", f"{DECENTRAAL}/_batch", lambda: {"notificaties": [decentraal()]}),
        ("POST", f"{CENTRAAL}/_batch", lambda: {"notificaties": [centraal()]}),
        ("GET", "STATUS", None),
        ("DELETE", "STATUS", None),
        ("PUT", ACK, lambda: {"cursor": "abc"}),
        ("POST", f"{BASE}/webhook/hervatten", None),
    ],
)
def test_every_operation_refuses_a_query_parameter_it_does_not_know(
    client, conn, method, path, body
):
    if path == "STATUS":
        [notificatie_id] = intake(client)
        path = f"{BASE}/notificaties/{notificatie_id}"
    before = conn.execute("SELECT count(*), max(versie) FROM nmc.notificatie").fetchone()
    response = client.request(
        method, f"{path}?{BSN}=1", json=body() if body else None, headers=auth()
    )
    [found] = refused_without_echo(response)
    assert (found["field"], found["in"]) == ("", "query")
    assert conn.execute("SELECT count(*), max(versie) FROM nmc.notificatie").fetchone() == before
