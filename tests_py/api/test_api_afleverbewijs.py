"""The delivery proof and the history over HTTP (SPEC §7): GET …/afleverbewijs (a JWS the
published JWKS verifies) and GET …/geschiedenis, against the real app on a real database.

A notification is taken through intake over the API, the send claim and commit (as the
worker's SQL does it), NotifyNL's callback over the API (with its template), the receipt
processing and the settlement, with the clock moved by the database's own clock.
"""

import base64
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import jwt
import psycopg
import pytest
from apitest import BASE, CALLBACK_TOKEN, OIN_A, OIN_B, TEMPLATE_ID, auth, decentraal
from starlette.testclient import TestClient

from nmc.api.app import create_app
from nmc.cli import main as nmc_main
from nmc.feed.cloudevents import event_source
from nmc.signing.afleverbewijs_signing import TYP, parse_afleverbewijs_ring, read_ring_document
from nmc.signing.webhook_signing import load_signing_ring
from nmc.status import ALLOWED_TRANSITIONS, TERMINAL_STATUSES
from nmc_client import BewijsOngeldig, StaticJwks, verify_afleverbewijs
from nmc_client.bewijs import ALLOWED_TRANSITIONS as CLIENT_TRANSITIONS
from nmc_client.bewijs import TERMINAL_STATUSES as CLIENT_TERMINAL
from nmc_client.bewijs import main as verify_main

JWKS = "/.well-known/jwks.json"


def proof_url(notificatie_id: str) -> str:
    return f"{BASE}/notificaties/{notificatie_id}/afleverbewijs"


def history_url(notificatie_id: str) -> str:
    return f"{BASE}/notificaties/{notificatie_id}/geschiedenis"


def issuer() -> str:
    return event_source()


def payload_of(jws: str) -> dict[str, Any]:
    """The claims without checking anything (for assertions on what the NMC sent)."""
    part = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def submit(client: TestClient, body: dict[str, Any] | None = None, oin: str = OIN_A) -> str:
    response = client.post(
        f"{BASE}/decentraal/notificaties", json=body or decentraal(), headers=auth(oin)
    )
    assert response.status_code == 202, response.text
    return response.json()["notificatieId"]


def send(conn: psycopg.Connection, notificatie_id: str) -> None:
    """The send claim and the commit of NotifyNL's 201, as the worker's SQL makes them."""
    taak_id, epoch = conn.execute(
        "SELECT c.taak_id, c.claim_epoch FROM nmc.claim_verzenden('test', 1000) AS c"
        " WHERE c.notificatie_id = %s",
        (notificatie_id,),
    ).fetchone()
    conn.execute(
        "SELECT nmc.finish_verzenden(%s, %s, 'verzonden', %s)", (taak_id, epoch, uuid.uuid4())
    )


def callback(
    client: TestClient,
    conn: psycopg.Connection,
    notificatie_id: str,
    status: str,
    *,
    completed_at: str | None = None,
    template_version: Any = 4,
) -> None:
    """NotifyNL's callback for the latest attempt over the API, then the receipt worker."""
    poging_id, notifynl_id, now = conn.execute(
        "SELECT p.id, p.notifynl_id, nmc.now() FROM nmc.poging AS p"
        " WHERE p.notificatie_id = %s ORDER BY p.nummer DESC LIMIT 1",
        (notificatie_id,),
    ).fetchone()
    moment = completed_at or now.isoformat()
    response = client.post(
        f"{BASE}/notifynl-callback",
        json={
            "id": str(notifynl_id),
            "reference": str(poging_id),
            "to": "ontvanger.bewijs@voorbeeld.nl",
            "status": status,
            "created_at": moment,
            "completed_at": moment,
            "sent_at": moment,
            "notification_type": "email",
            "template_id": TEMPLATE_ID,
            "template_version": template_version,
        },
        headers={"Authorization": f"Bearer {CALLBACK_TOKEN}"},
    )
    assert response.status_code == 200, response.text
    conn.execute("SELECT nmc.process_receipts(1000)")


def settle(conn: psycopg.Connection) -> None:
    conn.execute("SELECT nmc.advance_clock('8 days')")
    conn.execute("SELECT nmc.process_vaststellingen(1000)")


def delivered(client: TestClient, conn: psycopg.Connection, body=None) -> str:
    """A notification delivered and settled: definitief-bezorgd."""
    notificatie_id = submit(client, body)
    send(conn, notificatie_id)
    callback(client, conn, notificatie_id, "delivered")
    settle(conn)
    return notificatie_id


def get_proof(client: TestClient, notificatie_id: str, oin: str = OIN_A) -> str:
    response = client.get(proof_url(notificatie_id), headers=auth(oin))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/jose"
    return response.text


def jwks(client: TestClient) -> StaticJwks:
    return StaticJwks(client.get(JWKS).json())


# --------------------------------------------------------------------------------------------


def test_the_proof_verifies_with_the_published_jwks(client, conn):
    notificatie_id = delivered(client, conn)
    jws = get_proof(client, notificatie_id)

    # A standard JOSE library and nothing of the NMC but its JWKS.
    header = jwt.get_unverified_header(jws)
    assert header["alg"] == "ES256" and header["typ"] == TYP
    published = {k["kid"]: k for k in client.get(JWKS).json()["keys"]}
    key = jwt.PyJWK(published[header["kid"]], algorithm=header["alg"]).key
    claims = jwt.decode(jws, key, algorithms=[header["alg"]], issuer=issuer())
    assert claims["sub"] == notificatie_id
    assert claims["uitgegevenDoor"] == issuer()
    assert claims["definitief"] is True
    assert claims["notificatie"]["status"] == "definitief-bezorgd"
    assert claims["notificatie"]["templateVersie"] == 4
    assert claims["notificatie"]["dienstverlener"]["oin"] == OIN_A
    [poging] = claims["pogingen"]
    [receipt] = poging["receipts"]
    assert (receipt["status"], receipt["bron"], receipt["toegepast"]) == (
        "delivered",
        "callback",
        True,
    )
    assert receipt["templateId"] == TEMPLATE_ID
    assert claims["vaststelling"]["termijn"] == "P7D"
    assert [e["naar"] for e in claims["events"]] == [
        "aangenomen",
        "in-verzending",
        "verzonden",
        "bezorgd",
        "definitief-bezorgd",
    ]

    # And the client's full verification: signature, issuer, id, the chain.
    bewijs = verify_afleverbewijs(jws, jwks(client), issuer=issuer(), notificatie_id=notificatie_id)
    assert (bewijs.status, bewijs.versie, bewijs.definitief) == ("definitief-bezorgd", 5, True)


def test_a_tampered_proof_fails(client, conn, api_env):
    notificatie_id = delivered(client, conn)
    jws = get_proof(client, notificatie_id)
    head, body, signature = jws.split(".")
    claims = payload_of(jws)
    claims["notificatie"]["status"] = "niet-bezorgbaar"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    with pytest.raises(BewijsOngeldig, match="signature"):
        verify_afleverbewijs(f"{head}.{forged}.{signature}", jwks(client), issuer=issuer())
    flipped = signature[:10] + ("A" if signature[10] != "A" else "B") + signature[11:]
    with pytest.raises(BewijsOngeldig, match="signature"):
        verify_afleverbewijs(f"{head}.{body}.{flipped}", jwks(client), issuer=issuer())
    with pytest.raises(BewijsOngeldig, match="iss"):
        verify_afleverbewijs(jws, jwks(client), issuer="urn:nld:oin:00000009999999999000:nmc")
    with pytest.raises(BewijsOngeldig, match="another notification"):
        verify_afleverbewijs(jws, jwks(client), issuer=issuer(), notificatie_id=str(uuid.uuid4()))
    # A webhook token is signed by the NMC too, and verifies with the same JWKS: it is no proof.
    ring = load_signing_ring(api_env.secrets / "webhook-signing.json")
    token = ring.sign("https://dv.example/hook", issuer=issuer(), claims={"sub": notificatie_id})
    with pytest.raises(BewijsOngeldig, match="typ"):
        verify_afleverbewijs(token, jwks(client), issuer=issuer())


def test_the_client_checks_the_chain_it_was_signed_with():
    """A proof whose chain is wrong fails even with a good signature (crafted claims)."""
    good = {
        "iss": "x",
        "sub": "n",
        "definitief": True,
        "notificatie": {"notificatieId": "n", "status": "geannuleerd", "reden": "geannuleerd",
                        "versie": 2},
        "eindstatus": {"status": "geannuleerd", "reden": "geannuleerd", "sequence": 2},
        "events": [
            {"sequence": 1, "van": None, "naar": "aangenomen"},
            {"sequence": 2, "van": "aangenomen", "naar": "geannuleerd"},
        ],
    }  # fmt: skip
    from nmc_client.bewijs import check_inhoud

    check_inhoud(good)
    cases = {
        "gap": lambda c: c["events"].__setitem__(1, {**c["events"][1], "sequence": 3}),
        "not allowed": lambda c: c["events"].__setitem__(
            1, {"sequence": 2, "van": "aangenomen", "naar": "bezorgd"}
        ),
        "last event": lambda c: c["notificatie"].__setitem__("status", "verlopen"),
        "version": lambda c: c["notificatie"].__setitem__("versie", 3),
        "definitief": lambda c: c.__setitem__("definitief", False),
        "eindstatus": lambda c: c["eindstatus"].__setitem__("sequence", 1),
    }
    for name, spoil in cases.items():
        claims = json.loads(json.dumps(good))
        spoil(claims)
        with pytest.raises(BewijsOngeldig):
            check_inhoud(claims)
        assert name  # each case fails on its own


def test_the_clients_copy_of_the_rules_is_the_nmcs():
    assert CLIENT_TRANSITIONS == ALLOWED_TRANSITIONS  # which test_status checks against SQL
    assert CLIENT_TERMINAL == TERMINAL_STATUSES


def test_another_dv_gets_404(client, conn):
    notificatie_id = delivered(client, conn)
    for url in (proof_url(notificatie_id), history_url(notificatie_id)):
        response = client.get(url, headers=auth(OIN_B))
        assert response.status_code == 404, response.text
        assert response.headers["content-type"] == "application/problem+json"
        unknown = client.get(url.replace(notificatie_id, str(uuid.uuid4())), headers=auth())
        assert unknown.status_code == 404
    bad = client.get(proof_url("geen-uuid"), headers=auth())
    assert bad.status_code == 400


def test_the_final_proof_is_the_same_at_every_later_request(client, conn):
    notificatie_id = delivered(client, conn)
    first = payload_of(get_proof(client, notificatie_id))
    # A late bounce after the settlement, a day later, and the data key erased after that.
    conn.execute("SELECT nmc.advance_clock('1 day')")
    callback(client, conn, notificatie_id, "permanent-failure")
    conn.execute("SELECT nmc.advance_clock('8 days')")
    assert conn.execute("SELECT nmc.process_wissen(1000)").fetchone()[0] >= 1
    assert conn.execute(
        "SELECT gewist_op IS NOT NULL FROM nmc.notificatie WHERE id = %s", (notificatie_id,)
    ).fetchone()[0]
    later = payload_of(get_proof(client, notificatie_id))
    assert later["uitgegevenOp"] != first["uitgegevenOp"]
    for issue_time in ("uitgegevenOp", "iat"):  # the NMC's clock and the signer's
        first.pop(issue_time)
        later.pop(issue_time)
    assert later == first
    # The history shows the late receipt, marked as after the final status.
    history = client.get(history_url(notificatie_id), headers=auth()).json()
    assert [(r["status"], r["naEindstatus"], r["toegepast"]) for r in history["receipts"]] == [
        ("delivered", False, True),
        ("permanent-failure", True, False),
    ]


def test_a_proof_before_the_final_status_says_so(client, conn):
    notificatie_id = submit(client)
    send(conn, notificatie_id)
    claims = payload_of(get_proof(client, notificatie_id))
    assert claims["definitief"] is False
    assert claims["eindstatus"] is None
    assert claims["notificatie"]["status"] == "verzonden"
    verify_afleverbewijs(get_proof(client, notificatie_id), jwks(client), issuer=issuer())


def test_a_key_rotation_keeps_old_proofs_valid(api_env, dvs, conn, capsys, monkeypatch):
    ring_file = api_env.secrets / "afleverbewijs-signing.json"
    monkeypatch.setenv("NMC_DATABASE_URL", api_env.db_url)  # activate reads the clock there
    with TestClient(create_app()) as client:
        notificatie_id = delivered(client, conn)
        old = get_proof(client, notificatie_id)
    assert jwt.get_unverified_header(old)["kid"] == "nmc-bewijs-test-1"

    # Step 1: a new key, published before it signs.
    assert nmc_main(["admin", "keys", "afleverbewijs", "add", "--kid", "nmc-bewijs-test-2",
                     "--file", str(ring_file)]) == 0  # fmt: skip
    with TestClient(create_app()) as client:
        kids = [k["kid"] for k in client.get(JWKS).json()["keys"]]
        assert {"nmc-bewijs-test-1", "nmc-bewijs-test-2"} <= set(kids)
        assert jwt.get_unverified_header(get_proof(client, notificatie_id))["kid"] == (
            "nmc-bewijs-test-1"
        )

    # Step 2: the new key signs; the old one is retired, only its public half kept.
    assert nmc_main(["admin", "keys", "afleverbewijs", "activate", "--kid", "nmc-bewijs-test-2",
                     "--file", str(ring_file)]) == 0  # fmt: skip
    document = read_ring_document(ring_file)
    assert list(document["keys"]) == ["nmc-bewijs-test-2"]
    assert "PRIVATE" not in document["retired"]["nmc-bewijs-test-1"]["publicKey"]
    with TestClient(create_app()) as client:
        published = jwks(client)
        bewijs = verify_afleverbewijs(old, published, issuer=issuer())
        assert bewijs.kid == "nmc-bewijs-test-1"
        new = get_proof(client, notificatie_id)
        assert jwt.get_unverified_header(new)["kid"] == "nmc-bewijs-test-2"
        verify_afleverbewijs(new, published, issuer=issuer())
    capsys.readouterr()
    assert nmc_main(["admin", "keys", "afleverbewijs", "list", "--file", str(ring_file)]) == 0
    listing = capsys.readouterr().out
    assert "nmc-bewijs-test-2  ES256  actief" in listing
    assert "nmc-bewijs-test-1  ES256  ingetrokken" in listing

    # A retired key stays published for the retention, then goes at the next activation.
    from datetime import UTC, datetime, timedelta

    from nmc.signing.afleverbewijs_signing import activate_key, add_key

    later = add_key(read_ring_document(ring_file), "nmc-bewijs-test-3")
    kept = activate_key(later, "nmc-bewijs-test-3", now=datetime.now(UTC) + timedelta(days=300))
    assert set(kept["retired"]) == {"nmc-bewijs-test-1", "nmc-bewijs-test-2"}
    dropped = activate_key(later, "nmc-bewijs-test-3", now=datetime.now(UTC) + timedelta(days=400))
    assert set(dropped["retired"]) == {"nmc-bewijs-test-2"}
    assert parse_afleverbewijs_ring(dropped).active_id == "nmc-bewijs-test-3"


def test_no_personal_data_in_the_proof_or_the_history(client, conn):
    body = decentraal(
        emailAdres="persoonlijk.bewijs@voorbeeld.nl",
        berichtgegevens={"naam": "Bewijs Persoonlijk B.V."},
    )
    notificatie_id = delivered(client, conn, body)
    texts = [
        json.dumps(payload_of(get_proof(client, notificatie_id))),
        client.get(history_url(notificatie_id), headers=auth()).text,
    ]
    for text in texts:
        for value in (body["emailAdres"], body["dvRef"], "Bewijs Persoonlijk",
                      "ontvanger.bewijs@voorbeeld.nl"):  # fmt: skip
            assert value.lower() not in text.lower()
        assert "emailAdres" not in text and "dvRef" not in text


def test_the_history_in_pages(client, conn):
    notificatie_id = submit(client)
    send(conn, notificatie_id)
    callback(client, conn, notificatie_id, "temporary-failure")  # a resend
    send(conn, notificatie_id)
    callback(client, conn, notificatie_id, "bounced-maybe")  # a status the NMC does not know
    callback(client, conn, notificatie_id, "delivered", template_version="geen getal")
    events: list = []
    receipts: list = []
    cursor = None
    pages = 0
    while True:
        params = {"limiet": "2", **({"cursor": cursor} if cursor else {})}
        response = client.get(history_url(notificatie_id), params=params, headers=auth())
        assert response.status_code == 200, response.text
        page = response.json()
        pages += 1
        assert len(page["events"]) <= 2 and len(page["receipts"]) <= 2
        assert len(page["pogingen"]) == 2
        events += page["events"]
        receipts += page["receipts"]
        cursor = page["volgende"]
        if cursor is None:
            break
    assert pages == 3
    assert [e["sequence"] for e in events] == [1, 2, 3, 4, 5]
    assert [(r["poging"], r["status"], r["toegepast"]) for r in receipts] == [
        (1, "temporary-failure", True),
        (2, "bounced-maybe", False),
        (2, "delivered", True),
    ]
    assert receipts[-1]["templateVersie"] is None  # malformed: left out, the receipt kept
    for refused in ({"limiet": "0"}, {"cursor": "x"}, {"onbekend": "1"}):
        response = client.get(history_url(notificatie_id), params=refused, headers=auth())
        assert response.status_code == 400, refused


def test_every_proof_and_history_page_is_an_ldv_record(client, conn, api_env):
    notificatie_id = delivered(client, conn)
    get_proof(client, notificatie_id)
    assert client.get(history_url(notificatie_id), headers=auth()).status_code == 200
    ldv_file = Path(os.environ["NMC_LDV_FILE"])
    records = [json.loads(line) for line in ldv_file.read_text().splitlines()]
    mine = [r for r in records if r["name"] in ("bewijs.afleverbewijs", "bewijs.geschiedenis")]
    assert [r["name"] for r in mine] == ["bewijs.afleverbewijs", "bewijs.geschiedenis"]
    for record in mine:
        attributes = record["attributes"]
        assert attributes["dpl.core.processing_activity_id"] == "nmc-status-verstrekken"
        assert attributes["nmc.notificatie_ids"] == [notificatie_id]


def test_without_a_signing_ring_the_proof_answers_503(api_env, dvs, conn, monkeypatch):
    monkeypatch.delenv("NMC_AFLEVERBEWIJS_SIGNING_KEYS_FILE")
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        notificatie_id = submit(client)
        response = client.get(proof_url(notificatie_id), headers=auth())
        assert response.status_code == 503
        assert int(response.headers["retry-after"]) >= 1
        assert client.get(history_url(notificatie_id), headers=auth()).status_code == 200
        assert [k["kid"] for k in client.get(JWKS).json()["keys"]] == ["nmc-test-1"]


def test_a_saved_proof_verifies_with_the_client_command(client, conn, tmp_path, capsys):
    notificatie_id = delivered(client, conn)
    saved = tmp_path / "bewijs.jws"
    saved.write_text(get_proof(client, notificatie_id))
    keys = tmp_path / "jwks.json"
    keys.write_text(client.get(JWKS).text)
    arguments = [str(saved), "--jwks", str(keys), "--issuer", issuer()]
    assert verify_main([*arguments, "--notificatie", notificatie_id]) == 0
    assert "geldig: afleverbewijs van notificatie" in capsys.readouterr().out
    # The command as a DV runs it, in a process of its own.
    run = subprocess.run(
        [sys.executable, "-m", "nmc_client", *arguments],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"geldig: afleverbewijs van notificatie {notificatie_id}")
    assert run.stderr == ""
    head, body, signature = saved.read_text().split(".")
    flipped = signature[:20] + ("A" if signature[20] != "A" else "B") + signature[21:]
    saved.write_text(f"{head}.{body}.{flipped}")
    assert verify_main(arguments) == 1
    assert capsys.readouterr().out.startswith("ONGELDIG: the signature does not verify")


def test_not_ready_without_the_proof_functions(client, conn):
    assert client.get("/health/ready").status_code == 200
    conn.execute("DROP FUNCTION nmc.get_afleverbewijs(integer, uuid)")
    response = client.get("/health/ready")
    assert (response.status_code, response.json()["reden"]) == (503, "migratie")
