"""One NotifyNL API key per Notify service (ADR 0024: "tokens uit een verzendbudget per
Notify-service"; "Het NMC gebruikt eigen NotifyNL-services").

A NotifyNL key belongs to one service (its id is inside the key: `{name}-{service id}-{secret}`,
../shared/notifynl-contract.md), and a service only knows its own templates and its own
notifications. So every call for a task, the send, the look-up by reference and the
reconciliation, goes out with the key of the task's berichttype's `notifyService`, read from
a keys file (NMC_NOTIFYNL_KEYS_FILE) once at start-up; NMC_NOTIFYNL_API_KEY stays the one key
of a single-service setup.
"""

import dataclasses
import json
import secrets
import uuid

import httpx
import pytest
from pipelinetest import API_KEY, DV_NAAM, DV_OIN, TEMPLATE_ID, advance, sim_get, status_of
from test_pipeline_worker import sent, verzendtaak

from deploytest import parse_nmc
from nmc.adapters import Deferral
from nmc.adapters.notifynl import (
    ApiKey,
    NotifyKeys,
    NotifyNL,
    bearer_token,
    load_notify_keys,
    parse_notify_keys,
)
from nmc.admin import onboarding as admin
from nmc.config import Settings
from nmc.errors import NmcError
from nmc.worker.config import WorkerConfig
from nmc.worker.loop import Worker
from nmc_dev.demo import scenario
from nmc_dev.sim.cli import _services

KEY_B = f"nmc_besluiten-{uuid.uuid4()}-{uuid.uuid4()}"
SERVICE_A, SERVICE_B = API_KEY[-73:-37], KEY_B[-73:-37]
TEMPLATE_B = "b1b1b1b1-0000-4000-8000-00000000000b"


def service_key(name: str = "x") -> str:
    return f"nmc_{name}-{uuid.uuid4()}-{uuid.uuid4()}"


# ---------------------------------------------------------------------------- the keys file


def test_the_keys_file_maps_each_notify_service_to_its_key(tmp_path):
    path = tmp_path / "notifynl-keys.json"
    path.write_text(json.dumps({"standaard": API_KEY, "besluiten": KEY_B}))
    keys = load_notify_keys({"NMC_NOTIFYNL_KEYS_FILE": str(path)})
    assert keys.for_service("standaard").service_id == SERVICE_A
    assert keys.for_service("besluiten").service_id == SERVICE_B
    assert keys.services == ("besluiten", "standaard")
    with pytest.raises(Deferral) as missing:
        keys.for_service("onbekend")
    assert missing.value.fout == "notifynl-geen-sleutel"
    assert API_KEY[-36:] not in repr(keys)


def test_a_single_key_serves_every_service():
    keys = load_notify_keys({"NMC_NOTIFYNL_API_KEY": API_KEY})
    assert keys.for_service("standaard").service_id == SERVICE_A
    assert keys.for_service("besluiten").service_id == SERVICE_A
    assert keys.services == ()


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({}, "at least one"),
        ([API_KEY], "JSON object"),
        ({"standaard": 3}, "'standaard'"),
        ({"standaard": "geen-sleutel"}, "'standaard'"),
        ({"": service_key()}, "1 to 100 characters"),
        ({"a": API_KEY, "b": API_KEY}, "same NotifyNL service"),
    ],
)
def test_a_bad_keys_file_is_refused_without_key_material(document, message):
    with pytest.raises(NmcError, match=message) as refused:
        parse_notify_keys(document)
    assert API_KEY[-36:] not in str(refused.value)


def test_keys_file_and_single_key_are_not_both_set(tmp_path):
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"standaard": API_KEY}))
    with pytest.raises(NmcError, match="not both"):
        load_notify_keys({"NMC_NOTIFYNL_KEYS_FILE": str(path), "NMC_NOTIFYNL_API_KEY": API_KEY})
    with pytest.raises(NmcError, match="NMC_NOTIFYNL_KEYS_FILE"):
        load_notify_keys({})
    with pytest.raises(NmcError, match="not found"):
        load_notify_keys({"NMC_NOTIFYNL_KEYS_FILE": str(tmp_path / "weg.json")})


def test_the_worker_reads_the_keys_file_setting(tmp_path):
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"standaard": API_KEY}))
    config = WorkerConfig.from_env(Settings.from_env({}), {"NMC_NOTIFYNL_KEYS_FILE": str(path)})
    assert config.notifynl_keys_file == path and config.notifynl_api_key is None
    assert config.notify_keys().for_service("standaard").service_id == SERVICE_A


# ---------------------------------------------------------------------------- the simulator


@pytest.fixture
def two_services(sim):
    """The simulator with services A (API_KEY: TEMPLATE_ID) and B (KEY_B: TEMPLATE_B)."""
    config = {"api_keys": [API_KEY, KEY_B], "templates": {SERVICE_A: [TEMPLATE_ID],
                                                           SERVICE_B: [TEMPLATE_B]}}  # fmt: skip
    httpx.post(f"{sim.notifynl_url}/_sim/config", json=config).raise_for_status()
    yield sim
    restore = {"api_keys": [API_KEY], "templates": {}}
    httpx.post(f"{sim.notifynl_url}/_sim/config", json=restore).raise_for_status()


async def test_the_simulator_refuses_a_template_of_another_service(two_services):
    """As NotifyNL does (notifications-api, check_template_exists_by_id_and_service): 400
    BadRequestError "Template not found"; and a service sees only its own notifications."""
    url = two_services.notifynl_url
    body = {"email_address": "bezorgd+t@voorbeeld.nl", "template_id": TEMPLATE_B, "reference": "r"}
    async with httpx.AsyncClient() as client:
        keys = NotifyKeys(by_service={"a": ApiKey.parse(API_KEY), "b": ApiKey.parse(KEY_B)})
        notifynl = NotifyNL(client, url, keys)
        headers = {"Authorization": f"Bearer {bearer_token(ApiKey.parse(API_KEY))}"}
        refused = await client.post(f"{url}/v2/notifications/email", json=body, headers=headers)
        assert refused.status_code == 400
        assert refused.json()["errors"] == [
            {"error": "BadRequestError", "message": "Template not found"}
        ]
        accepted = await notifynl.send_email(
            "bezorgd+t@voorbeeld.nl", TEMPLATE_B, {}, "r-b", service="b"
        )
        assert await notifynl.get_notification(accepted.notifynl_id, service="a") is None
        assert (await notifynl.get_notification(accepted.notifynl_id, service="b")) is not None
        assert await notifynl.find_by_reference("r-b", service="a") == []
        assert len(await notifynl.find_by_reference("r-b", service="b")) == 1
    [stored] = sim_get(url, "/_sim/sent")["notifications"]
    assert stored["service_id"] == SERVICE_B


# ---------------------------------------------------------------------------- the worker


@pytest.fixture
def two_berichttypen(conn, dv_id):
    """The DV's berichttypen: `aanslag` on service `standaard` (template A), `besluit` on
    service `besluiten` (template B)."""
    document = {
        "oin": DV_OIN,
        "naam": DV_NAAM,
        "quotumPerMinuut": 100000,
        "berichttypen": [
            {"code": "aanslag", "notifynlTemplateId": TEMPLATE_ID},
            {"code": "herinnering", "notifynlTemplateId": TEMPLATE_ID, "geldigheidMax": "60 days"},
            {"code": "besluit", "notifynlTemplateId": TEMPLATE_B, "notifyService": "besluiten"},
        ],
    }
    conn.execute("SELECT nmc.apply_dienstverlener(%s::jsonb)", [json.dumps(document)])


@pytest.fixture
async def keyed_worker(worker_config, ring, tmp_path):
    path = tmp_path / "notifynl-keys.json"
    path.write_text(json.dumps({"standaard": API_KEY, "besluiten": KEY_B}))
    config = dataclasses.replace(worker_config, notifynl_api_key=None, notifynl_keys_file=path)
    async with Worker.started(config, ring=ring, pseudonym_key=secrets.token_bytes(32)) as worker:
        yield worker


async def test_each_send_goes_out_under_its_own_service(
    two_services, two_berichttypen, keyed_worker, intake, conn
):
    """Two berichttypen on two services: each send arrives at NotifyNL under its own service
    (the key of the other would be refused: "Template not found"), and reconciliation asks
    each service for its own notification (with the other's key it would find nothing and
    the notification would end bezorgstatus-onbekend)."""
    a = intake("bezorgd+a@voorbeeld.nl", berichttype="aanslag")
    b = intake("bezorgd+b@voorbeeld.nl", berichttype="besluit")
    assert await keyed_worker.drain(["verzenden"]) == 2
    assert status_of(conn, a) == status_of(conn, b) == ("verzonden", None)
    services = {n["template_id"]: n["service_id"] for n in sent(two_services)["notifications"]}
    assert services == {TEMPLATE_ID: SERVICE_A, TEMPLATE_B: SERVICE_B}
    advance(conn, "61 minutes")
    assert await keyed_worker.drain(["reconciliëren"]) == 2
    assert status_of(conn, a) == status_of(conn, b) == ("bezorgd", None)


async def test_a_service_without_a_key_defers_its_sends(
    two_services, two_berichttypen, worker_config, ring, tmp_path, intake, conn
):
    path = tmp_path / "alleen-standaard.json"
    path.write_text(json.dumps({"standaard": API_KEY}))
    config = dataclasses.replace(worker_config, notifynl_api_key=None, notifynl_keys_file=path)
    b = intake("bezorgd+zonder@voorbeeld.nl", berichttype="besluit")
    async with Worker.started(config, ring=ring, pseudonym_key=secrets.token_bytes(32)) as worker:
        await worker.drain(["verzenden"])
    assert verzendtaak(conn, b) == ("open", 0, 1, "notifynl-geen-sleutel")
    assert sent(two_services)["count"] == 0
    assert sim_get(two_services.ldv_url, "") == []  # no LDV record for a call never made


def test_the_simulator_cli_takes_the_keys_file_and_the_templates_per_service(tmp_path):
    path = tmp_path / "notifynl-keys.json"
    path.write_text(json.dumps({"standaard": API_KEY, "besluiten": KEY_B}))
    args = parse_nmc(
        ["sim", "notifynl", "--keys-file", str(path), "--template", f"besluiten={TEMPLATE_B}",
         "--template", f"{SERVICE_A}={TEMPLATE_ID}"]
    )  # fmt: skip
    keys, templates = _services(args)
    assert sorted(keys) == sorted([API_KEY, KEY_B])
    assert templates == {SERVICE_B: [TEMPLATE_B], SERVICE_A: [TEMPLATE_ID]}
    bad = parse_nmc(["sim", "notifynl", "--keys-file", str(path), "--template", "onbekend=x"])
    with pytest.raises(NmcError, match="SERVICE=TEMPLATE_ID"):
        _services(bad)


def test_dev_secrets_hold_a_key_per_dev_service_and_the_stack_passes_the_templates(tmp_path):
    env_file = admin.init_secrets(tmp_path / "secrets")
    keys = load_notify_keys(
        {"NMC_NOTIFYNL_KEYS_FILE": str(tmp_path / "secrets/notifynl-keys.json")}
    )
    assert keys.services == tuple(sorted(admin.DEV_NOTIFY_SERVICES))
    assert "NMC_NOTIFYNL_KEYS_FILE=" in env_file.read_text()
    templates = admin.notify_templates(scenario.dv_document())
    assert set(templates) == {"standaard", "besluiten"}
    assert set(templates) <= set(admin.DEV_NOTIFY_SERVICES)
