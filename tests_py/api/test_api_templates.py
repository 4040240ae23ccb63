"""The intake against the berichttype's NotifyNL template: a notification whose
berichtgegevens lack a placeholder is refused with 422 `ontbrekende-personalisatie` listing
the missing names (invalidParams, names only), single and per batch item; a berichttype
whose template is gone is refused with 422 `berichttype-niet-beschikbaar`."""

from apitest import BASE, TEMPLATE_ID, auth, decentraal

from nmc.api.validation import BERICHTGEGEVENS_TOTAL_MAX_BYTES
from nmc.notifynl.notifynl_templates import namen_van, ontdubbeld, sleutel

PROBLEMS = "https://mijnoverheidzakelijk.nl/nmc/problemen/"
NOTIFYNL_EMAIL_MAX_BYTES = 2_000_000  # NotifyNL: "Emails cannot be longer than 2000000 bytes"


def record(conn, uitkomst: str, placeholders: list[str] | None = None, versie: int = 2):
    names = ontdubbeld(placeholders or [])
    conn.execute(
        "SELECT nmc.record_template('standaard', %s, %s, %s, %s, %s, NULL)",
        [TEMPLATE_ID, uitkomst, versie, names[0], names[1]],
    )


def test_names_match_as_notifynl_matches_them():
    assert sleutel("Datum-Besluit") == sleutel("datum_besluit") == sleutel("datum besluit")
    assert namen_van({"Naam": "x", "Datum_besluit": "y"}) == "naam datumbesluit"
    assert namen_van({"naam": None}) == "", "NotifyNL counts a null value as missing"
    assert ontdubbeld(["Naam", "naam", "NAAM_2"]) == (["Naam", "NAAM_2"], ["naam", "naam2"])


def test_a_missing_placeholder_is_a_422_naming_it(client, conn):
    record(conn, "gelezen", ["naam", "Datum Besluit", "bedrag"])
    body = decentraal(berichtgegevens={"NAAM": "Voorbeeld B.V.", "overig": "genegeerd"})
    response = client.post(f"{BASE}/decentraal/notificaties", json=body, headers=auth())
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["type"] == PROBLEMS + "ontbrekende-personalisatie"
    assert response.headers["content-type"] == "application/problem+json"
    assert problem["invalidParams"] == [
        {"name": "berichtgegevens.Datum Besluit", "code": "required",
         "reason": "De template van dit berichttype vraagt dit veld."},
        {"name": "berichtgegevens.bedrag", "code": "required",
         "reason": "De template van dit berichttype vraagt dit veld."},
    ]  # fmt: skip
    assert "Voorbeeld" not in response.text, "names only, never values"
    assert conn.execute("SELECT count(*) FROM nmc.notificatie").fetchone()[0] == 0


def test_every_placeholder_present_in_any_spelling_is_accepted(client, conn):
    record(conn, "gelezen", ["naam", "Datum Besluit"])
    body = decentraal(berichtgegevens={"Naam": "x", "datum_besluit": "y", "extra": "z"})
    response = client.post(f"{BASE}/decentraal/notificaties", json=body, headers=auth())
    assert response.status_code == 202, response.text


def test_a_batch_item_lacking_a_placeholder_is_named_by_its_index(client, conn):
    record(conn, "gelezen", ["naam"])
    batch = {
        "notificaties": [
            decentraal(berichtgegevens={"naam": "x"}),
            decentraal(berichtgegevens={"anders": "x"}),
        ]
    }
    response = client.post(f"{BASE}/decentraal/notificaties/_batch", json=batch, headers=auth())
    assert response.status_code == 422, response.text
    assert [p["name"] for p in response.json()["invalidParams"]] == [
        "notificaties[1].berichtgegevens.naam"
    ]
    assert conn.execute("SELECT count(*) FROM nmc.notificatie").fetchone()[0] == 0


def test_a_berichttype_whose_template_is_gone_is_unavailable(client, conn):
    record(conn, "verdwenen")
    response = client.post(f"{BASE}/decentraal/notificaties", json=decentraal(), headers=auth())
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["type"] == PROBLEMS + "berichttype-niet-beschikbaar"
    assert problem["invalidParams"] == [
        {"name": "berichtType", "code": "unavailable",
         "reason": "Dit berichttype kan nu niet worden verzonden."}
    ]  # fmt: skip


def test_a_template_not_read_yet_is_not_checked(client):
    body = decentraal(berichtgegevens={})
    response = client.post(f"{BASE}/decentraal/notificaties", json=body, headers=auth())
    assert response.status_code == 202, response.text


def test_what_notifynl_refuses_in_values_is_refused_here_first():
    """NotifyNL refuses an e-mail over 2,000,000 bytes; the intake's own bound on all
    berichtgegevens together (texts only) stays far below it, so no accepted notification
    can be refused for its size by NotifyNL through its values alone."""
    assert BERICHTGEGEVENS_TOTAL_MAX_BYTES * 4 < NOTIFYNL_EMAIL_MAX_BYTES
