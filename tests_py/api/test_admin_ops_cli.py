"""`nmc admin epoch|report|tasks|notificatie|kek|notify-service`: the operator's commands,
tables and --json."""

import base64
import json
import secrets
import uuid

import pytest
from apitest import auth, centraal
from feedtest import intake, transition

from nmc.crypto.kek_ring import load_kek_ring
from nmc.crypto.sealing import Sealed, open_sealed


def with_second_kek(ring: dict) -> dict:
    second = base64.b64encode(secrets.token_bytes(32)).decode("ascii")
    return {**ring, "keys": {**ring["keys"], "kek-test-2": second}}


@pytest.fixture
def admin_env(api_env, monkeypatch):
    """The CLI on this test's database (the API fixtures' secrets stay in the environment)."""
    monkeypatch.setenv("NMC_DATABASE_URL", api_env.db_url)
    return api_env


def test_epoch_raise(nmc, admin_env, conn, dvs):
    conn.execute(
        "UPDATE nmc.dienstverlener SET webhook_url = 'https://dv.example/hook' WHERE dv_id = %s",
        [dvs["A"]],
    )
    conn.execute("SELECT nmc.ensure_terugkoppelen()")
    result = nmc("admin", "epoch", "raise")
    assert result.exit_code == 0, result.err
    assert "raised to 2" in result.out
    assert conn.execute("SELECT epoch FROM nmc.cluster_epoch").fetchone()[0] == 2
    # Committed with the raise: no webhook call after it carries a cursor of epoch 1; the
    # position restarts at the oldest available event.
    position = conn.execute("SELECT epoch, xid::text, event_id FROM nmc.webhookpositie").fetchall()
    assert position == [(2, "0", 0)]


def test_report_onbevestigd(nmc, admin_env, client, conn, dvs):
    [notificatie_id] = intake(client)
    transition(conn, notificatie_id, "geannuleerd", "geannuleerd")
    assert nmc("admin", "report", "onbevestigd").out.strip() == "(geen)"
    conn.execute("SELECT nmc.advance_clock('8 days')")
    table = nmc("admin", "report", "onbevestigd")
    assert table.exit_code == 0 and "beheerkanaal" in table.out
    [row] = json.loads(nmc("admin", "report", "onbevestigd", "--json").out)
    assert (row["dv_id"], row["aantal"]) == (dvs["A"], 1)


def test_report_geen_contactgegevens_flags_above_the_threshold(nmc, admin_env, client, conn, dvs):
    response = client.post("/api/nmc/v1/centraal/notificaties", json=centraal(), headers=auth())
    notificatie_id = response.json()["notificatieId"]
    transition(conn, notificatie_id, "in-verzending")
    transition(conn, notificatie_id, "niet-bezorgbaar", "geen-contactgegevens")
    report = json.loads(nmc("admin", "report", "geen-contactgegevens", "--json").out)
    assert report["drempel"] == 0.3
    assert report["dienstverleners"] == [
        {"dv_id": dvs["A"], "naam": "Test DV 001000", "aandeel": 1.0, "boven_drempel": True}
    ]
    lenient = nmc("admin", "report", "geen-contactgegevens", "--drempel", "1")
    assert "drempel 1.0" in lenient.out and "nee" in lenient.out


def test_tasks_list_and_reopen(nmc, admin_env, client, conn):
    [notificatie_id] = intake(client)
    [(taak_id,)] = conn.execute(
        "UPDATE nmc.taak SET staat = 'mislukt', laatste_fout = 'notifynl-http-500'"
        " WHERE notificatie_id = %s RETURNING id",
        (notificatie_id,),
    ).fetchall()
    table = nmc("admin", "tasks", "list")
    assert table.exit_code == 0 and "notifynl-http-500" in table.out and "laatste_fout" in table.out
    [row] = json.loads(nmc("admin", "tasks", "list", "--json", "--kind", "verzenden").out)
    assert (row["id"], row["soort"], row["staat"]) == (taak_id, "verzenden", "mislukt")
    assert json.loads(nmc("admin", "tasks", "list", "--json", "--kind", "wissen").out) == []

    with pytest.raises(SystemExit):
        nmc("admin", "tasks", "reopen", str(taak_id))  # the toelichting is required
    done = nmc("admin", "tasks", "reopen", str(taak_id), "--toelichting", "NotifyNL hersteld",
               "--door", "beheerder-1")  # fmt: skip
    assert done.exit_code == 0, done.err
    assert conn.execute("SELECT staat FROM nmc.taak WHERE id = %s", (taak_id,)).fetchone() == (
        "open",
    )
    assert conn.execute(
        "SELECT soort, toelichting, door FROM nmc.beheeractie WHERE taak_id = %s", (taak_id,)
    ).fetchone() == ("heropen-taak", "NotifyNL hersteld", "beheerder-1")
    again = nmc("admin", "tasks", "reopen", str(taak_id), "--toelichting", "nog eens")
    assert again.exit_code == 1 and "NM020" in again.err


def test_notificatie_force(nmc, admin_env, client, conn):
    [notificatie_id] = intake(client)
    force = ("admin", "notificatie", "force", notificatie_id)
    refused = nmc(*force, "verzonden", "--toelichting", "x")
    assert refused.exit_code == 1 and "NM001" in refused.err
    # Only a delivered receipt and the settlement reach these (the delivery proof rests on them).
    for naar in ("bezorgd", "definitief-bezorgd"):
        refused = nmc(*force, naar, "--toelichting", "x")
        assert refused.exit_code == 1 and "NM021" in refused.err
    forced = nmc(
        "admin", "notificatie", "force", notificatie_id, "verlopen", "--reden", "verlopen",
        "--toelichting", "geldigheid handmatig beëindigd",
    )  # fmt: skip
    assert forced.exit_code == 0, forced.err
    assert "versie 2" in forced.out
    assert conn.execute(
        "SELECT status::text, reden::text FROM nmc.notificatie WHERE id = %s", (notificatie_id,)
    ).fetchone() == ("verlopen", "verlopen")
    with pytest.raises(SystemExit):
        nmc("admin", "notificatie", "force", "geen-uuid", "verlopen", "--toelichting", "x")


def test_kek_status_and_rotate(nmc, admin_env, client, conn, monkeypatch):
    ids = intake(client, 5)
    ring = with_second_kek(admin_env.kek)
    ring_file = admin_env.secrets / "kek-2.json"
    ring_file.write_text(json.dumps(ring))
    monkeypatch.setenv("NMC_KEK_FILE", str(ring_file))

    status = json.loads(nmc("admin", "kek", "status", "--json").out)
    # No worker has reported an active KEK yet: no re-wrap target.
    assert status == [
        {"kek_id": "kek-test-1", "sleutels": 5, "doel": False, "actief_gemeld_op": None,
         "in_ring": True, "actief": True},
        {"kek_id": "kek-test-2", "sleutels": 0, "doel": False, "actief_gemeld_op": None,
         "in_ring": True, "actief": False},
    ]  # fmt: skip
    unknown = nmc("admin", "kek", "rotate", "--to", "kek-onbekend")
    assert unknown.exit_code == 1 and "not in the KEK ring" in unknown.err

    rotated = nmc("admin", "kek", "rotate", "--to", "kek-test-2", "--batch", "2")
    assert rotated.exit_code == 0, rotated.err
    assert rotated.out.count("re-wrapped") == 4  # 2 + 2 + 1, then the closing line
    assert "done: 5 data key(s)" in rotated.out
    table = nmc("admin", "kek", "status").out
    assert "kek-test-2" in table and "kek-test-1" in table

    # The data still opens, under the new KEK, without the ciphertext having changed.
    new_ring = load_kek_ring(ring_file)
    for notificatie_id in ids:
        row = conn.execute(
            "SELECT dv_id, ontvanger_versleuteld, gegevens_versleuteld, sleutel_gewrapt, kek_id"
            " FROM nmc.notificatie WHERE id = %s",
            (notificatie_id,),
        ).fetchone()
        assert row[4] == "kek-test-2"
        opened = open_sealed(
            uuid.UUID(notificatie_id), row[0], Sealed(row[1], row[2], row[3], row[4]),
            ring=new_ring,
        )  # fmt: skip
        assert opened.recipient == "info@voorbeeld.nl"
    assert nmc("admin", "kek", "rotate", "--to", "kek-test-2").out.strip() == (
        "done: 0 data key(s) re-wrapped under kek-test-2"
    )


def test_kek_rotate_stops_on_a_key_that_does_not_unwrap(nmc, admin_env, client, conn):
    [broken, *_] = intake(client, 3)
    conn.execute(
        "UPDATE nmc.notificatie SET sleutel_gewrapt = %s WHERE id = %s",
        (b"\x01" + secrets.token_bytes(60), broken),
    )
    ring = with_second_kek(admin_env.kek)
    (admin_env.secrets / "kek.json").write_text(json.dumps(ring))
    result = nmc("admin", "kek", "rotate", "--to", "kek-test-2")
    assert result.exit_code == 1
    assert broken in result.err and "do not unwrap" in result.err
    assert conn.execute(
        "SELECT count(*) FROM nmc.notificatie WHERE kek_id = 'kek-test-2'"
    ).fetchone() == (2,)


def test_keys_init_writes_a_signing_ring_and_a_cursor_pepper(nmc, tmp_path):
    secrets_dir = tmp_path / "secrets"
    assert nmc("admin", "keys", "init", "--dir", str(secrets_dir)).exit_code == 0
    ring = json.loads((secrets_dir / "webhook-signing.json").read_text())
    assert ring["active"] == "dev-webhook-1" and "PRIVATE KEY" in ring["keys"]["dev-webhook-1"]
    assert set(json.loads((secrets_dir / "peppers.json").read_text())) == {
        "dvref",
        "payload",
        "cursor",
    }
    assert "NMC_WEBHOOK_SIGNING_KEYS_FILE=" in (secrets_dir / "dev.env").read_text()


def test_notify_service_set_and_list(nmc, admin_env, conn):
    result = nmc("admin", "notify-service", "set", "besluiten", "--per-minuut", "1200",
                 "--dag-limiet", "400000", "--burst", "100")  # fmt: skip
    assert result.exit_code == 0, result.err
    assert "besluiten" in result.out and "400000" in result.out
    assert conn.execute(
        "SELECT budget_per_minuut, burst, dag_limiet FROM nmc.notify_service"
        " WHERE code = 'besluiten'"
    ).fetchone() == (1200, 100, 400000)
    assert nmc("admin", "notify-service", "set", "besluiten", "--burst", "afgeleid").exit_code == 0
    listed = json.loads(nmc("admin", "notify-service", "list", "--json").out)
    besluiten = next(row for row in listed if row["code"] == "besluiten")
    assert (besluiten["burst"], besluiten["burst_ingesteld"]) == (18, False)
    assert besluiten["dag_limiet"] == 400000
    refused = nmc("admin", "notify-service", "set", "besluiten", "--burst", "5000")
    assert refused.exit_code != 0
    assert "notify service besluiten: refused" in refused.err


def test_the_deployments_notify_services_file_is_applied_by_apply_and_by_migrate(
    nmc, admin_env, conn, tmp_path, monkeypatch
):
    path = tmp_path / "notify-services.json"
    path.write_text(json.dumps({
        "standaard": {"perMinuut": 6000, "dagLimiet": 500000, "burst": 200},
        "besluiten": {"navraagAandeel": 0.2},
    }))  # fmt: skip
    result = nmc("admin", "notify-service", "apply", str(path))
    assert result.exit_code == 0, result.err
    rows = dict(conn.execute(
        "SELECT code, (budget_per_minuut, navraag_aandeel::float, burst, dag_limiet)::text"
        " FROM nmc.notify_service"
    ).fetchall())  # fmt: skip
    assert rows == {"standaard": "(6000,0.1,200,500000)", "besluiten": "(3000,0.2,,250000)"}

    path.write_text(json.dumps({"standaard": {"burst": None}}))
    monkeypatch.setenv("NMC_NOTIFY_SERVICES_FILE", str(path))
    migrated = nmc("migrate")
    assert migrated.exit_code == 0, migrated.err
    assert "notify-services.json" in migrated.out and "NotifyNL service(s) known" in migrated.out
    assert conn.execute(
        "SELECT budget_per_minuut, burst FROM nmc.notify_service WHERE code = 'standaard'"
    ).fetchone() == (6000, None)  # null: the burst is derived again, the rate kept


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "a JSON object of services"),
        ({"standaard": 5}, "an object of limits"),
        ({"standaard": {"tempo": 5}}, "unknown member(s) ['tempo']"),
        ({"standaard": {"perMinuut": "veel"}}, "perMinuut must be a number"),
        ({"standaard": {"dagLimiet": 1.5}}, "dagLimiet must be a number"),
    ],
)
def test_a_notify_services_file_of_the_wrong_shape_is_refused(
    nmc, admin_env, tmp_path, document, message
):
    path = tmp_path / "notify-services.json"
    path.write_text(json.dumps(document))
    result = nmc("admin", "notify-service", "apply", str(path))
    assert result.exit_code == 1
    assert message in result.err
