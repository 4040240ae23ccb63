"""Status, ETag, dvRef search with pagination, cancel, paths, headers, the OpenAPI document."""

import json
import uuid

import pytest
from apitest import BASE, OIN_A, OIN_B, auth, decentraal
from starlette.routing import Route
from starlette.testclient import TestClient

from nmc.api.app import create_app
from nmc.api.middleware import SECURITY_HEADERS
from nmc.api.openapi import API_VERSION, openapi_document
from nmc.crypto.peppers import new_peppers

DECENTRAAL = f"{BASE}/decentraal/notificaties"


def accept(client, oin=OIN_A, **body):
    response = client.post(DECENTRAAL, json=decentraal(**body), headers=auth(oin))
    assert response.status_code == 202
    return response.json()["notificatieId"]


def claim_all(conn):
    """Move every aangenomen notification on to in-verzending, as a worker's claim does."""
    conn.execute("SELECT * FROM nmc.claim_verzenden('test-worker', 1000)")


# --------------------------------------------------------------------------------------------
# Status


def test_status_with_version_attempts_and_etag(client, conn):
    notificatie_id = accept(client)
    response = client.get(f"{BASE}/notificaties/{notificatie_id}", headers=auth())
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {
        "notificatieId", "berichtType", "regie", "status", "reden", "versie", "aangenomenOp",
        "bijgewerktOp", "geldigTot", "pogingen",
    }  # fmt: skip
    assert body["notificatieId"] == notificatie_id
    assert (body["status"], body["versie"], body["pogingen"]) == ("aangenomen", 1, [])
    assert response.headers["etag"] == '"1"'

    claim_all(conn)
    response = client.get(f"{BASE}/notificaties/{notificatie_id}", headers=auth())
    body = response.json()
    assert (body["status"], body["versie"]) == ("in-verzending", 2)
    assert body["pogingen"] == [
        {"nummer": 1, "status": "gepland", "verzondenOp": None, "afgerondOp": None}
    ]
    assert response.headers["etag"] == '"2"'


@pytest.mark.parametrize(
    ("if_none_match", "status"),
    [('"1"', 304), ('W/"1"', 304), ('"7", "1"', 304), ("*", 304), ('"2"', 200), ("1", 200)],
)
def test_if_none_match(client, if_none_match, status):
    notificatie_id = accept(client)
    response = client.get(
        f"{BASE}/notificaties/{notificatie_id}",
        headers={**auth(), "If-None-Match": if_none_match},
    )
    assert response.status_code == status
    assert response.headers["etag"] == '"1"'
    if status == 304:
        assert response.content == b""


def test_another_dvs_notification_does_not_exist(client):
    notificatie_id = accept(client, OIN_B)
    missing = str(uuid.uuid4())
    for target in (notificatie_id, missing):
        response = client.get(f"{BASE}/notificaties/{target}", headers=auth(OIN_A))
        assert response.status_code == 404
        assert response.json()["type"].endswith("/niet-gevonden")
        response = client.delete(f"{BASE}/notificaties/{target}", headers=auth(OIN_A))
        assert response.status_code == 404
    bodies = {
        client.get(f"{BASE}/notificaties/{t}", headers=auth(OIN_A)).text
        for t in (notificatie_id, missing)
    }
    assert len(bodies) == 1, "another DV's id and a missing id answer the same"


def test_an_id_that_is_not_a_uuid(client):
    response = client.get(f"{BASE}/notificaties/niet-een-uuid", headers=auth())
    assert response.status_code == 400
    assert response.json()["violations"] == [
        {"field": "notificatieId", "in": "path", "message": "moet een UUID zijn"}
    ]


# --------------------------------------------------------------------------------------------
# dvRef search


def test_search_by_dvref_finds_only_the_callers_own(client):
    mine = accept(client, dvRef="zaak-1")
    accept(client, dvRef="zaak-2")
    accept(client, OIN_B, dvRef="zaak-1")
    response = client.get(f"{BASE}/notificaties", params={"dvRef": "zaak-1"}, headers=auth())
    assert response.status_code == 200
    body = response.json()
    assert [n["notificatieId"] for n in body["notificaties"]] == [mine]
    assert body["cursor"] is None
    assert "pogingen" not in body["notificaties"][0]
    assert "dvRef" not in response.text and "zaak-1" not in response.text
    response = client.get(f"{BASE}/notificaties", params={"dvRef": "zaak-3"}, headers=auth())
    assert response.json() == {"notificaties": [], "cursor": None}


def test_search_over_pepper_versions_with_pagination(api_env, dvs, monkeypatch):
    """A pepper rotation gives the same dvRef another HMAC: search finds rows of every live
    version, newest first, one page at a time. (Rows of one dvRef under several versions
    arise when an intake ran while the earlier version was no longer live; while it is,
    the intake answers the stored row instead: the next test.)"""
    peppers = api_env.peppers
    versions = dict(peppers["dvref"]["versions"])
    versions["2"] = new_peppers()["dvref"]["versions"]["1"]
    versions["3"] = new_peppers()["dvref"]["versions"]["1"]
    ids = []
    for current in ("1", "2", "3"):
        only_current = {"current": int(current), "versions": {current: versions[current]}}
        monkeypatch.setenv(
            "NMC_PEPPERS", json.dumps({"dvref": only_current, "payload": peppers["payload"]})
        )
        with TestClient(create_app()) as client:
            ids.append(accept(client, dvRef="zaak-gd-7"))
    assert len(set(ids)) == 3
    monkeypatch.setenv(
        "NMC_PEPPERS",
        json.dumps({"dvref": {"current": 3, "versions": versions}, "payload": peppers["payload"]}),
    )
    with TestClient(create_app()) as client:
        seen, cursor = [], None
        for _ in range(3):
            params = {"dvRef": "zaak-gd-7", "limiet": "1", **({"cursor": cursor} if cursor else {})}
            page = client.get(f"{BASE}/notificaties", params=params, headers=auth()).json()
            seen += [n["notificatieId"] for n in page["notificaties"]]
            cursor = page["cursor"]
        assert seen == list(reversed(ids))
        assert cursor is None
        page = client.get(
            f"{BASE}/notificaties", params={"dvRef": "zaak-gd-7", "limiet": "2"}, headers=auth()
        ).json()
        assert [n["notificatieId"] for n in page["notificaties"]] == ids[:0:-1]
        assert page["cursor"]
        rest = client.get(
            f"{BASE}/notificaties",
            params={"dvRef": "zaak-gd-7", "limiet": "2", "cursor": page["cursor"]},
            headers=auth(),
        ).json()
        assert [n["notificatieId"] for n in rest["notificaties"]] == ids[:1]
        assert rest["cursor"] is None


def test_replay_after_a_pepper_rotation_answers_the_stored_notification(api_env, dvs, monkeypatch):
    """While the earlier pepper version is live, a request accepted under it is a replay
    (same id, single and batch), another payload for it a 409, and a new dvRef is new."""
    versions = dict(api_env.peppers["dvref"]["versions"])
    versions["2"] = new_peppers()["dvref"]["versions"]["1"]
    body = decentraal(dvRef="voor-de-rotatie")
    with TestClient(create_app()) as client:
        first = client.post(DECENTRAAL, json=body, headers=auth()).json()["notificatieId"]
    monkeypatch.setenv(
        "NMC_PEPPERS",
        json.dumps(
            {
                "dvref": {"current": 2, "versions": versions},
                "payload": api_env.peppers["payload"],
            }
        ),
    )
    with TestClient(create_app()) as client:
        replay = client.post(DECENTRAAL, json=body, headers=auth())
        assert (replay.status_code, replay.json()["notificatieId"]) == (202, first)
        other = client.post(
            DECENTRAAL, json={**body, "emailAdres": "ander@voorbeeld.nl"}, headers=auth()
        )
        assert other.status_code == 409
        fresh = decentraal(dvRef="na-de-rotatie")
        batch = client.post(
            f"{DECENTRAAL}/_batch", json={"notificaties": [body, fresh]}, headers=auth()
        )
        assert batch.status_code == 202
        answered = [n["notificatieId"] for n in batch.json()["notificaties"]]
        assert answered[0] == first
        assert answered[1] != first
        found = client.get(
            f"{BASE}/notificaties", params={"dvRef": "voor-de-rotatie"}, headers=auth()
        ).json()["notificaties"]
        assert [n["notificatieId"] for n in found] == [first]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "dvRef"),
        ({"dvRef": ""}, "dvRef"),
        ({"dvRef": "a", "limiet": "0"}, "limiet"),
        ({"dvRef": "a", "limiet": "101"}, "limiet"),
        ({"dvRef": "a", "cursor": "!"}, "cursor"),
        ({"dvRef": "a", "cursor": "AAAA"}, "cursor"),
        ({"dvref": "a"}, ""),  # unknown: by its position, not its name
    ],
)
def test_search_query_violations(client, params, field):
    response = client.get(f"{BASE}/notificaties", params=params, headers=auth())
    assert response.status_code == 400
    assert field in {v["field"] for v in response.json()["violations"]}
    assert all(v["in"] == "query" for v in response.json()["violations"])


# --------------------------------------------------------------------------------------------
# Cancel


def test_cancel_while_aangenomen(client, conn):
    notificatie_id = accept(client)
    response = client.delete(f"{BASE}/notificaties/{notificatie_id}", headers=auth())
    assert response.status_code == 204
    assert response.content == b""
    body = client.get(f"{BASE}/notificaties/{notificatie_id}", headers=auth()).json()
    assert (body["status"], body["reden"], body["versie"]) == ("geannuleerd", "geannuleerd", 2)
    assert conn.execute(
        "SELECT staat::text FROM nmc.taak WHERE notificatie_id = %s AND soort = 'verzenden'",
        [notificatie_id],
    ).fetchall() == [("done",)]
    # Cancelling again: 409 with the current status.
    response = client.delete(f"{BASE}/notificaties/{notificatie_id}", headers=auth())
    assert response.status_code == 409
    assert response.json()["notificatieStatus"] == "geannuleerd"


def test_cancel_too_late_is_409_with_the_current_status(client, conn):
    notificatie_id = accept(client)
    claim_all(conn)
    response = client.delete(f"{BASE}/notificaties/{notificatie_id}", headers=auth())
    assert response.status_code == 409
    problem = response.json()
    assert problem["type"].endswith("/conflict")
    assert problem["notificatieStatus"] == "in-verzending"
    assert (
        client.get(f"{BASE}/notificaties/{notificatie_id}", headers=auth()).json()["status"]
        == "in-verzending"
    )


# --------------------------------------------------------------------------------------------
# Paths, methods, headers


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/decentraal/notificaties/"),
        ("POST", "/centraal/notificaties/_batch/"),
        ("GET", "/notificaties/"),
        ("GET", f"/notificaties/{uuid.uuid4()}/"),
        ("GET", "/openapi.json/"),
        ("POST", "/notifynl-callback/"),
        ("GET", "/bestaat-niet"),
    ],
)
def test_trailing_slash_and_unknown_paths_are_404(client, method, path):
    response = client.request(method, BASE + path, headers=auth(), follow_redirects=False)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"


def test_wrong_method_is_405_with_allow(client):
    response = client.put(f"{BASE}/notificaties/{uuid.uuid4()}", headers=auth())
    assert response.status_code == 405
    assert {m.strip() for m in response.headers["allow"].split(",")} >= {"GET", "DELETE"}


def test_headers_on_every_response(client):
    notificatie_id = accept(client)
    responses = [
        client.get(f"{BASE}/openapi.json"),
        client.post(DECENTRAAL, json=decentraal(), headers=auth()),
        client.get(f"{BASE}/notificaties/{notificatie_id}", headers=auth()),
        client.get(
            f"{BASE}/notificaties/{notificatie_id}", headers={**auth(), "If-None-Match": '"1"'}
        ),
        client.delete(f"{BASE}/notificaties/{notificatie_id}", headers=auth()),
        client.get(f"{BASE}/notificaties/{notificatie_id}"),  # 401
        client.get(f"{BASE}/notificaties/{notificatie_id}", headers=auth("00000009999999999000")),
        client.get(f"{BASE}/notificaties/{uuid.uuid4()}", headers=auth()),  # 404
        client.post(DECENTRAAL, content=b"{}", headers=auth()),  # 415
        client.post(DECENTRAAL, json={}, headers=auth()),  # 400
        client.put(DECENTRAAL, headers=auth()),  # 405
        client.get(f"{BASE}/nergens/"),  # 404
        client.post(f"{BASE}/notifynl-callback", json={}),  # 401
    ]
    assert {r.status_code for r in responses} == {
        200, 202, 204, 304, 400, 401, 403, 404, 405, 409, 415
    } - {409}  # fmt: skip
    for response in responses:
        assert response.headers["api-version"] == API_VERSION
        for name, value in SECURITY_HEADERS:
            assert response.headers[name] == value, (response.status_code, name)
        assert response.headers["traceparent"].startswith("00-")


def test_headers_on_an_internal_error(client, conn):
    # The API role loses its right to read: the handler fails with a database error (500).
    conn.execute("REVOKE EXECUTE ON FUNCTION nmc.get_notificatie(integer, uuid) FROM nmc_api")
    response = client.get(f"{BASE}/notificaties/{uuid.uuid4()}", headers=auth())
    assert response.status_code == 500
    assert response.json()["type"].endswith("/interne-fout")
    assert response.headers["api-version"] == API_VERSION
    assert response.headers["cache-control"] == "no-store"


# --------------------------------------------------------------------------------------------
# The OpenAPI document


def test_openapi_is_served_without_authentication(client):
    response = client.get(f"{BASE}/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    document = response.json()
    assert document == json.loads(json.dumps(openapi_document()))
    assert document["info"]["version"] == API_VERSION
    assert document["info"]["contact"]


def test_openapi_document_matches_the_routes(client):
    document = client.get(f"{BASE}/openapi.json").json()
    documented = {
        (path, method.upper())
        for path, item in document["paths"].items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    }
    served = {
        (route.path.removeprefix(BASE), method)
        for route in client.app.routes
        if isinstance(route, Route)
        for method in route.methods or ()
        if method != "HEAD"
    }
    # The NotifyNL callback has its own contract (docs/notifynl-callback.md); the JWKS is an
    # RFC 7517 document at a well-known URI (named in the info description); /metrics and
    # /health/* are for the platform, outside the DV API.
    undocumented = {
        ("/notifynl-callback", "POST"),
        ("/.well-known/jwks.json", "GET"),
        ("/metrics", "GET"),
        ("/health/live", "GET"),
        ("/health/ready", "GET"),
    }
    assert served - undocumented == documented
    outside = {route.path for route in client.app.routes if not route.path.startswith(BASE)}
    assert outside == {"/.well-known/jwks.json", "/metrics", "/health/live", "/health/ready"}
