"""NotifyNL's send refusals end to end (notifynl-contract.md, Errors): the worker against the
simulator's refusals (/_sim/weigering, NotifyNL's exact bodies) and a real database. Only the
address is the recipient's; a request NotifyNL cannot render ends technisch-mislukt; every
other refusal is our configuration: deferred, recorded, and sent once fixed."""

from datetime import UTC, timedelta

import httpx
from pipelinetest import TEMPLATE_ID, advance, sim_get, status_of
from test_pipeline_worker import poging, seed_party, sent, verzendtaak


def refuse(sim, soort, **filters):
    response = httpx.post(f"{sim.notifynl_url}/_sim/weigering", json={"soort": soort, **filters})
    response.raise_for_status()


def stop_refusing(sim):
    httpx.delete(f"{sim.notifynl_url}/_sim/weigering").raise_for_status()


def weigeringen(conn):
    return conn.execute(
        "SELECT berichttype, soort, aantal FROM nmc.verzendweigering ORDER BY berichttype"
    ).fetchall()


async def test_a_team_only_key_defers_then_sends_once_fixed(sim, worker, intake, conn):
    ids = [intake(f"bezorgd+team{n}@voorbeeld.nl") for n in range(2)]
    refuse(sim, "team-only")
    await worker.drain(["verzenden"])
    for notificatie_id in ids:
        assert status_of(conn, notificatie_id) == ("in-verzending", None)
        assert verzendtaak(conn, notificatie_id) == ("open", 0, 1, "notifynl-geweigerd-sleutel")
        assert [p[2] for p in poging(conn, notificatie_id)] == ["gepland"]
    assert weigeringen(conn) == [("aanslag", "sleutel", 2)]
    metrics = conn.execute(
        "SELECT labels ->> 'berichttype', labels ->> 'soort', waarde FROM nmc.metrics() "
        "WHERE naam = 'nmc_verzendweigering'"
    ).fetchall()
    assert metrics == [("aanslag", "sleutel", 2.0)]
    assert sent(sim)["count"] == 0

    # Still refused at the next try: deferred again, still no attempt counted.
    advance(conn, "15 minutes")
    await worker.drain(["verzenden"])
    assert verzendtaak(conn, ids[0])[1:3] == (0, 2)
    assert weigeringen(conn) == [("aanslag", "sleutel", 4)]

    stop_refusing(sim)  # the live key is back
    advance(conn, "15 minutes")
    await worker.drain(["verzenden"])
    for notificatie_id in ids:
        assert status_of(conn, notificatie_id) == ("verzonden", None)
        assert verzendtaak(conn, notificatie_id)[:2] == ("done", 0)
    assert sent(sim)["count"] == 2
    assert weigeringen(conn) == []


async def test_missing_personalisation_is_technisch_mislukt_at_once(sim, worker, intake, conn):
    """The template was edited after the intake (a new placeholder): NotifyNL renders its
    latest version and refuses the request; it never will send, so no retry."""
    notificatie_id = intake("bezorgd+edit@voorbeeld.nl", gegevens={"naam": "N"})
    refuse(sim, "missing-personalisation", template_ids=[TEMPLATE_ID], velden=["datum"])
    await worker.drain(["verzenden"])
    assert status_of(conn, notificatie_id) == ("technisch-mislukt", "technisch")
    assert [p[2] for p in poging(conn, notificatie_id)] == ["technisch-mislukt"]
    assert verzendtaak(conn, notificatie_id)[:2] == ("done", 0)
    [(aantal,)] = conn.execute(
        "SELECT aantal FROM nmc.onverwerkbaar WHERE berichttype = 'aanslag'"
    ).fetchall()
    assert aantal == 1
    assert weigeringen(conn) == []  # not our configuration
    stop_refusing(sim)
    advance(conn, "1 hour")
    await worker.drain(["verzenden"])
    assert sent(sim)["count"] == 0  # never retried


async def test_an_invalid_address_under_centraal_is_reported(sim, worker, intake, conn):
    party = seed_party(sim, "44443333", [{"waarde": "bezorgd+adres@bedrijf.nl", "isDefault": True}])
    refuse(sim, "ongeldig-adres")
    notificatie_id = intake("KVK:44443333", regie="centraal")
    await worker.drain(["verzenden"])
    assert status_of(conn, notificatie_id) == ("niet-bezorgbaar", "onbereikbaar")
    await worker.drain(["ongeldig-melden"])
    [report] = sim_get(sim.profiel_url, "/_sim/ongeldig")
    assert report["report"]["contactgegevenId"] == party["contactgegevens"][0]["id"]


async def test_a_refused_send_past_geldig_tot_ends_verlopen(sim, worker, intake, conn):
    now = conn.execute("SELECT nmc.now()").fetchone()[0]
    notificatie_id = intake(
        "bezorgd+laat@voorbeeld.nl", geldig_tot=now.astimezone(UTC) + timedelta(minutes=20)
    )
    refuse(sim, "template-verwijderd")
    await worker.drain(["verzenden"])
    assert status_of(conn, notificatie_id) == ("in-verzending", None)
    advance(conn, "19 minutes")
    for _ in range(6):  # each try is refused; the one whose next try passes geldig_tot ends it
        await worker.drain(["verzenden"])
        advance(conn, "1 minute")
    assert status_of(conn, notificatie_id) == ("verlopen", "verlopen")
    assert weigeringen(conn)[0][1] == "template"
