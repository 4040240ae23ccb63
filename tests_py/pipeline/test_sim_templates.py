"""The NotifyNL simulator's templates (contract: Templates): reads, versions, the list, the
preview, `Missing personalisation` on a send, rendering the latest version, and the run-time
edits of `/_sim/templates`."""

import httpx
import pytest
from pipelinetest import TEMPLATE_ID, configure_notifynl
from test_pipeline_sims import SEND, SERVICE_ID, TEMPLATE, send, token

from nmc_dev.sim.notifynl_templates import missing, placeholders


@pytest.fixture
def notifynl(sims) -> str:
    httpx.post(f"{sims.notifynl_url}/_sim/reset").raise_for_status()
    configure_notifynl(sims, callback_url=None, templates={})
    return sims.notifynl_url


def get(url, path):
    return httpx.get(url + path, headers={"Authorization": f"Bearer {token()}"})


def edit(url, **template):
    response = httpx.post(f"{url}/_sim/templates", json={"template_id": TEMPLATE, **template})
    response.raise_for_status()
    return response.json()


def test_placeholders_and_matching_follow_notifications_utils():
    assert placeholders("Beste ((Naam))", "((naam)) ((datum_besluit??op die dag)) ((Bedrag))") == [
        "Naam",
        "datum_besluit",
        "Bedrag",
    ]
    assert missing(["Naam", "Datum besluit"], {"NAAM": "x", "datum-besluit": None}) == [
        "Datum besluit"
    ]


def test_a_template_lists_its_placeholders_and_versions(notifynl):
    edit(notifynl, subject="Besluit voor ((naam))", body="Op ((datum)) besloten.")
    edit(notifynl, subject="Besluit voor ((naam))", body="Op ((datum)): ((bedrag)).")
    latest = get(notifynl, f"/v2/template/{TEMPLATE}")
    assert latest.status_code == 200
    data = latest.json()
    assert (data["type"], data["version"], data["body"]) == (
        "email",
        2,
        "Op ((datum)): ((bedrag)).",
    )
    assert data["personalisation"] == {
        "naam": {"required": True},
        "datum": {"required": True},
        "bedrag": {"required": True},
    }
    first = get(notifynl, f"/v2/template/{TEMPLATE}/version/1").json()
    assert (first["version"], list(first["personalisation"])) == (1, ["naam", "datum"])
    assert get(notifynl, f"/v2/template/{TEMPLATE}/version/3").status_code == 404
    listed = get(notifynl, "/v2/templates?type=email").json()["templates"]
    assert [t["id"] for t in listed] == [TEMPLATE]


def test_another_services_template_is_a_404(notifynl):
    edit(notifynl, subject="s", body="b", service_id="00000000-0000-4000-8000-000000000000")
    answer = get(notifynl, f"/v2/template/{TEMPLATE}")
    assert answer.status_code == 404
    assert answer.json()["errors"] == [{"error": "NoResultFound", "message": "No result found"}]


def test_a_send_renders_the_latest_version_or_names_the_missing_personalisation(notifynl):
    edit(notifynl, subject="Besluit ((naam))", body="Beste ((naam)), op ((datum)).")
    refused = send(notifynl, {**SEND, "personalisation": {"Naam": "B.V."}})
    assert refused.status_code == 400
    assert refused.json()["errors"] == [
        {"error": "BadRequestError", "message": "Missing personalisation: datum"}
    ]
    edit(notifynl, subject="Besluit ((naam))", body="Beste ((naam)).")
    accepted = send(notifynl, {**SEND, "personalisation": {"Naam": "B.V.", "extra": "x"}})
    assert accepted.status_code == 201
    body = accepted.json()
    assert body["template"]["version"] == 2
    assert (body["content"]["subject"], body["content"]["body"]) == (
        "Besluit B.V.",
        "Beste B.V..",
    )


def test_the_preview_is_a_dry_run(notifynl):
    edit(notifynl, subject="s", body="((naam))")
    url = f"{notifynl}/v2/template/{TEMPLATE}/preview"
    headers = {"Authorization": f"Bearer {token()}"}
    assert httpx.post(url, json={"personalisation": {}}, headers=headers).status_code == 400
    answer = httpx.post(url, json={"personalisation": {"naam": "x"}}, headers=headers)
    assert (answer.status_code, answer.json()["body"]) == (200, "x")
    assert httpx.get(f"{notifynl}/_sim/sent").json()["count"] == 0


def test_a_removed_template_is_gone(notifynl):
    edit(notifynl, subject="s", body="b")
    assert httpx.delete(f"{notifynl}/_sim/templates/{TEMPLATE}").status_code == 204
    assert get(notifynl, f"/v2/template/{TEMPLATE}").status_code == 404
    refused = send(notifynl)
    assert (refused.status_code, refused.json()["errors"][0]["message"]) == (
        400,
        "Template not found",
    )


def test_a_configured_template_without_edits_has_no_placeholders(notifynl, sims):
    configure_notifynl(sims, templates={SERVICE_ID: [TEMPLATE]})
    data = get(notifynl, f"/v2/template/{TEMPLATE}").json()
    assert (data["version"], data["personalisation"]) == (1, {})
    assert send(notifynl).json()["template"]["version"] == 1
    other = "a0a0a0a0-0000-4000-8000-0000000000ff"
    assert get(notifynl, f"/v2/template/{other}").status_code == 404
    configure_notifynl(sims, templates={})


async def test_the_attempt_keeps_the_version_notifynl_rendered(sim, worker, intake, conn):
    """The 201's template.version, on the attempt, in the delivery proof."""
    for body in ("Beste ((naam)).", "Hallo ((naam))."):
        httpx.post(
            f"{sim.notifynl_url}/_sim/templates",
            json={"template_id": TEMPLATE_ID, "subject": "s", "body": body},
        ).raise_for_status()
    notificatie_id = intake("bezorgd+versie@voorbeeld.nl", gegevens={"naam": "N"})
    assert await worker.drain(["verzenden"]) == 1
    assert conn.execute(
        "SELECT p.template_versie FROM nmc.poging AS p WHERE p.notificatie_id = %s",
        [notificatie_id],
    ).fetchone() == (2,)


def test_the_beheer_report_names_the_unavailable_berichttypen():
    """The DV's beheer report says which berichttypen are unavailable."""
    from datetime import date
    from types import SimpleNamespace

    from nmc.worker.beheerrapport import personalisation, report_data

    rapport = SimpleNamespace(
        oin="00000001234567890000", naam="Gemeente", dag=date(2026, 12, 1), onbevestigd=0,
        afgekapt=False, bevestigingstermijn="7 days", oudste=None, notificatie_ids=[],
        aandeel=None, drempel=0.3, boven_drempel=False, niet_beschikbaar=["aanslag", "besluit"],
        webhook_gat=False, onverwerkbaar=[], onverwerkbaar_dag=None,
    )  # fmt: skip
    data = report_data(rapport)
    assert data["nietBeschikbaar"] == {"berichttypen": ["aanslag", "besluit"]}
    assert personalisation(data)["berichttypen_niet_beschikbaar"] == "aanslag, besluit"
    none = report_data(SimpleNamespace(**{**vars(rapport), "niet_beschikbaar": []}))
    assert personalisation(none)["berichttypen_niet_beschikbaar"] == "(geen)"
