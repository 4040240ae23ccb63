"""No personal data at rest, in logs or in responses: only ciphertext and HMACs reach the database.

Known e-mail addresses, identifying numbers, dvRefs and personalisation values go in through
every endpoint (also as invalid input and through the callback); then every table of schema nmc
(each row cast to text, so bytea shows as hex), every captured log record and every response
(status line, headers, body) is searched for them, in plain text and hex-encoded.

The suite-wide scan (tests_py/privacy_scan.py) registers the same values from the requests
themselves and searches every test's logs, error bodies, events and metrics for them; this
test checks that it did, and adds what only this scenario can: the tables at rest, success
bodies and the hex forms.
"""

import logging
import uuid

from apitest import BASE, CALLBACK_TOKEN, OIN_B, auth

from nmc.observability.logs import JsonFormatter
from privacy_scan import SCAN

EMAIL = "geheim.persoon@prive-voorbeeld.nl"
EMAIL_CENTRAAL = "verborgen.adres@prive-voorbeeld.nl"
BSN = "111222333"
RSIN = "002564440"
KVK = "90817263"
DVREFS = ("dvref-geheim-4711", "dvref-geheim-4712", "dvref-geheim-4713", "dvref-geheim-4714")
NAAM = "Jansen-Geheimzinnig"
KENMERK = "kenmerk-zeer-prive-8832"

NEEDLES = (EMAIL, EMAIL_CENTRAAL, BSN, RSIN, KVK, *DVREFS, NAAM, KENMERK)


def forms(needle: str) -> tuple[str, ...]:
    return (needle.lower(), needle.encode().hex())


def hits(text: str) -> list[str]:
    lowered = text.lower()
    return [needle for needle in NEEDLES if any(form in lowered for form in forms(needle))]


def test_personal_data_appears_nowhere(client, conn, caplog, tmp_path):
    caplog.set_level(logging.DEBUG)
    gegevens = {"naam": NAAM, "kenmerk": KENMERK}
    responses = []

    def call(method, path, **kwargs):
        response = client.request(method, BASE + path, **kwargs)
        responses.append(response)
        return response

    ok = call(
        "POST",
        "/decentraal/notificaties",
        json={"dvRef": DVREFS[0], "berichtType": "aanslag", "emailAdres": EMAIL,
              "berichtgegevens": gegevens},
        headers=auth(),
    )  # fmt: skip
    assert ok.status_code == 202
    notificatie_id = ok.json()["notificatieId"]
    batch = call(
        "POST",
        "/centraal/notificaties/_batch",
        json={
            "notificaties": [
                {"dvRef": DVREFS[1], "berichtType": "aanslag", "identificatieType": "BSN",
                 "identificatieNummer": BSN, "berichtgegevens": gegevens},
                {"dvRef": DVREFS[2], "berichtType": "aanslag", "identificatieType": "RSIN",
                 "identificatieNummer": RSIN},
                {"dvRef": DVREFS[3], "berichtType": "aanslag", "identificatieType": "KVK",
                 "identificatieNummer": KVK, "berichtgegevens": gegevens},
            ]
        },
        headers=auth(),
    )  # fmt: skip
    assert batch.status_code == 202

    # Replays, conflicts, refusals and invalid input carrying the same values. (Field *names*
    # are schema: validation repeats a made-up name that looks like one, so none is a needle.)
    call(
        "POST",
        "/decentraal/notificaties",
        json={"dvRef": DVREFS[0], "berichtType": "aanslag", "emailAdres": EMAIL,
              "berichtgegevens": gegevens},
        headers=auth(),
    )  # fmt: skip
    conflict = call(
        "POST",
        "/decentraal/notificaties",
        json={"dvRef": DVREFS[0], "berichtType": "aanslag", "emailAdres": EMAIL_CENTRAAL},
        headers=auth(),
    )
    assert conflict.status_code == 409
    invalid = call(
        "POST",
        "/centraal/notificaties",
        json={"dvRef": DVREFS[1] + "\u0000", "berichtType": "aanslag",
              "identificatieType": "KVK", "identificatieNummer": BSN,
              "emailAdres": EMAIL, "onbekendVeld": NAAM, "berichtgegevens": {KENMERK: NAAM}},
        headers=auth(),
    )  # fmt: skip
    assert invalid.status_code == 400
    call(
        "POST",
        "/decentraal/notificaties",
        json={"dvRef": DVREFS[2], "berichtType": "onbekend", "emailAdres": EMAIL},
        headers=auth(),
    )
    call("POST", "/decentraal/notificaties", content=f'{{"dvRef": "{DVREFS[0]}"'.encode(),
         headers={**auth(), "Content-Type": "application/json"})  # fmt: skip
    call(
        "POST",
        "/decentraal/notificaties",
        json={"dvRef": DVREFS[0], "berichtType": "aanslag", "emailAdres": EMAIL},
        headers=auth("00000009999999999000"),
    )

    # Reads.
    call("GET", f"/notificaties/{notificatie_id}", headers=auth())
    call("GET", f"/notificaties/{notificatie_id}", headers=auth(OIN_B))
    for dvref in DVREFS:
        found = call("GET", "/notificaties", params={"dvRef": dvref}, headers=auth())
        assert len(found.json()["notificaties"]) == 1
    call("GET", "/notificaties", params={"dvRef": DVREFS[0], "cursor": KENMERK}, headers=auth())

    # The callback, with the address in `to`, for a known and an unknown attempt.
    poging_id = conn.execute(
        "SELECT poging_id::text FROM nmc.claim_verzenden('test', 10)"
    ).fetchone()[0]
    for reference in (poging_id, str(uuid.uuid4())):
        call(
            "POST",
            "/notifynl-callback",
            json={"id": str(uuid.uuid4()), "reference": reference, "to": EMAIL,
                  "status": "delivered", "completed_at": "2026-01-05T12:15:33.342838Z",
                  "sent_at": None},
            headers={"Authorization": f"Bearer {CALLBACK_TOKEN}"},
        )  # fmt: skip
    call(
        "POST",
        "/notifynl-callback",
        json={"id": EMAIL, "reference": BSN, "to": EMAIL, "status": NAAM,
              "completed_at": KENMERK},
        headers={"Authorization": f"Bearer {CALLBACK_TOKEN}"},
    )  # fmt: skip
    call("DELETE", f"/notificaties/{notificatie_id}", headers=auth())

    # The feed, the snapshot, the acknowledgement, metrics and health.
    feed = call("GET", "/notificaties/wijzigingen", headers=auth())
    call("GET", "/notificaties/wijzigingen", params={"cursor": KENMERK}, headers=auth())
    call("PUT", "/notificaties/wijzigingen/bevestiging", json={"cursor": feed.json()["cursor"]},
         headers=auth())  # fmt: skip
    call("PUT", "/notificaties/wijzigingen/bevestiging", json={"cursor": EMAIL}, headers=auth())
    call("GET", "/notificaties/_snapshot", headers=auth())
    call("GET", "/notificaties/_snapshot", params={"na": BSN}, headers=auth())
    for path in ("/metrics", "/health/ready", "/.well-known/jwks.json"):
        responses.append(client.get(path))
    ldv = (tmp_path / "ldv.jsonl").read_text() if (tmp_path / "ldv.jsonl").exists() else ""
    assert hits(ldv) == [], "personal data in an LDV record of the feed"

    # The database: every table of schema nmc, every row as text (bytea as hex).
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'nmc' AND c.relkind IN ('r', 'p') AND NOT c.relispartition"
        ).fetchall()
    ]
    assert {"notificatie", "poging", "taak", "event"} <= set(tables)
    scanned = 0
    for table in tables:
        for (text,) in conn.execute(f"SELECT t::text FROM nmc.{table} AS t").fetchall():  # noqa: S608
            scanned += 1
            assert hits(text) == [], f"personal data in nmc.{table}"
    assert scanned > 10

    # The ciphertext columns hold something, just not the plaintext (checked above as hex).
    assert conn.execute(
        "SELECT bool_and(octet_length(ontvanger_versleuteld) > 28 AND sleutel_gewrapt IS NOT NULL)"
        " FROM nmc.notificatie"
    ).fetchone()[0]

    # The logs of everything but the test's own HTTP client (httpx logs the URLs it calls).
    records = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    assert any(r.name == "nmc.api.access" for r in records)
    for record in records:
        assert hits(record.getMessage()) == [], record.name
        assert hits(JsonFormatter().format(record)) == [], record.name

    # The suite-wide scan learnt every value from the requests alone.
    assert {needle.lower() for needle in NEEDLES} <= set(SCAN.needles)

    # Every response: status, headers and body.
    assert len(responses) > 15
    for response in responses:
        head = f"{response.status_code} " + " ".join(
            f"{k}: {v}" for k, v in response.headers.items()
        )
        assert hits(head + "\n" + response.text) == [], (response.request.url.path, response.text)
