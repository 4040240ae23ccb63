"""`nmc admin dv apply|list`, `nmc admin token`, `nmc admin keys init`: a new user's first steps."""

import json
import os
import shlex
import stat
import uuid

import httpx
import pytest
from apitest import BASE, TEMPLATE_ID, dv_document
from starlette.testclient import TestClient

from nmc.api.app import create_app
from nmc.database import with_overrides

OIN = "00000001006006006000"


@pytest.fixture
def admin_env(db_url, monkeypatch, notify_env):
    """Point the CLI at this test's database (and a NotifyNL simulator for the templates)."""
    monkeypatch.setenv("NMC_DATABASE_URL", db_url)
    return db_url


def sim_template(notify_env, template_id=TEMPLATE_ID, **template):
    httpx.post(
        f"{notify_env.url}/_sim/templates", json={"template_id": template_id, **template}
    ).raise_for_status()


def test_dv_apply_reads_the_templates_and_keeps_their_names(
    nmc, admin_env, notify_env, tmp_path, conn
):
    sim_template(notify_env, subject="Aanslag voor ((Naam))", body="Bedrag: ((bedrag))")
    result = nmc("admin", "dv", "apply", str(write(tmp_path / "dv.json", dv_document(OIN))))
    assert result.exit_code == 0, result.err
    assert conn.execute(
        "SELECT staat, versie, placeholders, sleutels FROM nmc.notifynl_template"
    ).fetchall() == [("beschikbaar", 1, ["Naam", "bedrag"], ["naam", "bedrag"])]
    listed = nmc("admin", "templates", "list")
    assert listed.exit_code == 0
    assert "aanslag" in listed.out and "beschikbaar" in listed.out and "Naam, bedrag" in listed.out

    sim_template(notify_env, subject="Aanslag", body="((datum))")
    again = nmc("admin", "templates", "verversen")
    assert again.exit_code == 0, again.err
    assert conn.execute("SELECT versie, placeholders FROM nmc.notifynl_template").fetchall() == [
        (2, ["datum"])
    ]


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("gone", "NotifyNL kent deze template niet (404)"),
        ("sms", "geen e-mailtemplate"),
        ("other-service", "NotifyNL kent deze template niet (404)"),
    ],
)
def test_dv_apply_refuses_a_template_notifynl_cannot_give(
    nmc, admin_env, notify_env, tmp_path, conn, setup, message
):
    if setup == "gone":
        httpx.delete(f"{notify_env.url}/_sim/templates/{TEMPLATE_ID}")
    elif setup == "sms":
        sim_template(notify_env, subject="s", body="b", type="sms")
    else:
        sim_template(notify_env, subject="s", body="b", service_id=str(uuid.uuid4()))
    result = nmc("admin", "dv", "apply", str(write(tmp_path / "dv.json", dv_document(OIN))))
    assert result.exit_code == 1
    assert "berichttype aanslag" in result.err and TEMPLATE_ID in result.err
    assert message in result.err
    assert conn.execute("SELECT count(*) FROM nmc.dienstverlener").fetchone() == (0,)


def test_dv_apply_refuses_when_the_key_cannot_read_the_template(
    nmc, admin_env, tmp_path, conn, monkeypatch
):
    monkeypatch.setenv("NMC_NOTIFYNL_API_KEY", f"onbekend-{uuid.uuid4()}-{uuid.uuid4()}")
    result = nmc("admin", "dv", "apply", str(write(tmp_path / "dv.json", dv_document(OIN))))
    assert result.exit_code == 1
    assert "de sleutel van Notify service standaard kan deze template niet lezen" in result.err
    assert conn.execute("SELECT count(*) FROM nmc.dienstverlener").fetchone() == (0,)


def write(path, document):
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return path


def test_dv_apply_and_list(nmc, admin_env, tmp_path, conn):
    document = dv_document(OIN, webhook={"url": "https://dv.example/nmc"})
    result = nmc("admin", "dv", "apply", str(write(tmp_path / "dv.json", document)))
    assert result.exit_code == 0, result.err
    assert OIN in result.out
    listed = nmc("admin", "dv", "list")
    assert listed.exit_code == 0
    assert OIN in listed.out and "aanslag, alleen-centraal" in listed.out
    [row] = json.loads(nmc("admin", "dv", "list", "--json").out)
    assert row["oin"] == OIN and row["webhook_url"] == "https://dv.example/nmc"

    # Applying again updates; a berichttype left out is retired.
    document["berichttypen"] = [{"code": "nieuw", "notifynlTemplateId": TEMPLATE_ID}]
    document["quotumPerMinuut"] = 5
    assert nmc("admin", "dv", "apply", str(write(tmp_path / "dv.json", document))).exit_code == 0
    [row] = json.loads(nmc("admin", "dv", "list", "--json").out)
    assert (row["berichttypen"], row["quotum_per_minuut"]) == (["nieuw"], 5)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{niet json", "not valid JSON"),
        ("[1]", "one JSON object"),
        (json.dumps({**dv_document(OIN), "onbekend": 1}), "onbekend"),
        (json.dumps({**dv_document(OIN), "oin": "123"}), "nmc:"),
    ],
)
def test_dv_apply_refuses_bad_documents(nmc, admin_env, tmp_path, content, message):
    result = nmc("admin", "dv", "apply", str(write(tmp_path / "dv.json", content)))
    assert result.exit_code == 1
    assert message in result.err


def test_dv_apply_missing_file(nmc, admin_env, tmp_path):
    result = nmc("admin", "dv", "apply", str(tmp_path / "nergens.json"))
    assert (result.exit_code, "no such file" in result.err) == (1, True)


def test_token_is_refused_without_the_dev_iam_key(nmc, monkeypatch):
    monkeypatch.delenv("NMC_DEV_IAM_KEY_FILE", raising=False)
    result = nmc("admin", "token", "--oin", OIN)
    assert result.exit_code == 1
    assert "NMC_DEV_IAM_KEY_FILE" in result.err
    assert result.out == ""


def test_token_refuses_a_bad_oin(nmc, api_env):
    result = nmc("admin", "token", "--oin", "123")
    assert result.exit_code == 1
    assert "20 digits" in result.err


def test_keys_init_then_onboard_then_call_the_api(
    nmc, admin_env, notify_env, tmp_path, monkeypatch
):
    secrets = tmp_path / "secrets"
    result = nmc("admin", "keys", "init", "--dir", str(secrets))
    assert result.exit_code == 0, result.err
    for name in ("kek.json", "peppers.json", "dev-iam-key.pem", "dev.env"):
        assert stat.S_IMODE((secrets / name).stat().st_mode) == 0o600, name
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o700
    kek_before = (secrets / "kek.json").read_text()

    again = nmc("admin", "keys", "init", "--dir", str(secrets))
    assert again.exit_code == 1 and "--force" in again.err
    assert (secrets / "kek.json").read_text() == kek_before

    # Load dev.env as `set -a; . dev.env` would.
    for line in (secrets / "dev.env").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            monkeypatch.setenv(name, shlex.split(value)[0])
    monkeypatch.delenv("NMC_PEPPERS", raising=False)
    monkeypatch.setenv("NMC_API_DATABASE_URL", with_overrides(admin_env, user="nmc_api"))
    # dev.env names a NotifyNL key per Notify service: the simulator takes them.
    monkeypatch.delenv("NMC_NOTIFYNL_API_KEY")
    dev_keys = json.loads((secrets / "notifynl-keys.json").read_text())
    httpx.post(
        f"{notify_env.url}/_sim/config", json={"api_keys": list(dev_keys.values())}
    ).raise_for_status()
    dv_file = write(tmp_path / "dv.json", dv_document(OIN))
    assert nmc("admin", "dv", "apply", str(dv_file)).exit_code == 0
    bearer = nmc("admin", "token", "--oin", OIN, "--ttl", "60").out.strip()
    callback_token = os.environ["NMC_NOTIFYNL_CALLBACK_TOKEN"]
    with TestClient(create_app()) as client:
        response = client.post(
            f"{BASE}/decentraal/notificaties",
            json={"dvRef": "zaak-ob-1", "berichtType": "aanslag", "emailAdres": "a@voorbeeld.nl"},
            headers={"Authorization": f"Bearer {bearer}"},
        )
        assert response.status_code == 202
        callback = client.post(
            f"{BASE}/notifynl-callback",
            json={"id": "3fa85f64-5717-4562-b3fc-2c963f66afa6", "reference": "x",
                  "status": "delivered"},
            headers={"Authorization": f"Bearer {callback_token}"},
        )  # fmt: skip
        assert callback.status_code == 200

    forced = nmc("admin", "keys", "init", "--dir", str(secrets), "--force")
    assert forced.exit_code == 0
    assert (secrets / "kek.json").read_text() != kek_before
