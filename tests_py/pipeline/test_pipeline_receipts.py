"""Receipts, reconciliation, settlement and resend end to end: the simulator's
callbacks are stored through nmc.store_receipt, the worker judges them in SQL."""

import httpx
import pytest
from pipelinetest import (
    advance,
    callbacks_settled,
    drain_until,
    set_faults,
    sim_get,
    status_of,
)
from test_pipeline_worker import poging, seed_party, sent

# NotifyNL's callbacks go to the real API's callback endpoint.
pytestmark = pytest.mark.usefixtures("callbacks")


def taken(conn, soort, staat="open"):
    return conn.execute(
        "SELECT count(*) FROM nmc.taak "
        "WHERE soort = %s::nmc.taak_soort AND staat = %s::nmc.taak_staat",
        [soort, staat],
    ).fetchone()[0]


async def test_receipts_make_notificaties_bezorgd_and_settle_after_seven_days(
    sim, worker, intake, conn
):
    ids = [intake(f"bezorgd+{n}@voorbeeld.nl") for n in range(3)]
    await worker.drain(["verzenden"])
    callbacks_settled(sim, 3)
    assert await worker.drain(["receipt"]) == 3
    assert {status_of(conn, i) for i in ids} == {("bezorgd", None)}
    assert taken(conn, "reconciliëren") == 0  # a processed receipt ends reconciliation

    advance(conn, "6 days")
    await worker.drain(["vaststellen"])
    assert {status_of(conn, i)[0] for i in ids} == {"bezorgd"}
    advance(conn, "1 day 1 hour")
    await worker.drain(["vaststellen"])
    assert {status_of(conn, i) for i in ids} == {("definitief-bezorgd", None)}


async def test_lost_callbacks_are_found_by_reconciliation(sim, worker, intake, conn):
    set_faults(sim, lose_rate=1.0)
    notificatie_id = intake("bezorgd+verloren@voorbeeld.nl")
    await worker.drain(["verzenden"])
    callbacks_settled(sim, 1)
    assert await worker.drain(["receipt", "reconciliëren"]) == 0  # not due before 1 h
    advance(conn, "1 hour 1 minute")
    assert await worker.drain(["receipt", "reconciliëren"]) == 1
    assert status_of(conn, notificatie_id) == ("bezorgd", None)
    [(_, _, status, notifynl_id, _)] = poging(conn, notificatie_id)
    assert status == "bezorgd"
    # The reconciliation answer's history row holds what NotifyNL answered: its id and the
    # template (id, version) of GET /v2/notifications/{id}.
    [stored] = sent(sim)["notifications"]
    assert conn.execute(
        "SELECT bron, notifynl_id::text, template_id::text, template_versie"
        " FROM nmc.receiptgeschiedenis WHERE notificatie_id = %s",
        [notificatie_id],
    ).fetchall() == [("navraag", str(notifynl_id), stored["template_id"], 1)]


async def test_duplicate_and_reordered_callbacks_give_one_outcome(sim, worker, intake, conn):
    set_faults(sim, duplicate_rate=1.0, reorder=True)
    ids = [intake(f"bezorgd+dubbel{n}@voorbeeld.nl") for n in range(4)]
    ids.append(intake("permanent+dubbel@voorbeeld.nl"))
    await worker.drain(["verzenden"])
    callbacks = callbacks_settled(sim, 10)
    assert {c["result"] for c in callbacks} == {"delivered"}
    stored = conn.execute("SELECT count(*) FROM nmc.taak WHERE soort = 'receipt'").fetchone()[0]
    assert stored == 5  # the duplicates were no-ops
    await worker.drain(["receipt"])
    assert [status_of(conn, i)[0] for i in ids] == ["bezorgd"] * 4 + ["niet-bezorgbaar"]
    versies = conn.execute("SELECT array_agg(versie ORDER BY aangenomen_op) FROM nmc.notificatie")
    assert versies.fetchone()[0] == [4, 4, 4, 4, 4]  # aangenomen, in-verzending, verzonden, …


async def test_temporary_failure_resends_then_delivered(sim, worker, intake, conn):
    notificatie_id = intake("tijdelijk-dan-bezorgd+x@voorbeeld.nl")
    await worker.drain(["verzenden"])
    callbacks_settled(sim, 1)
    await worker.drain(["receipt"])
    await worker.drain(["verzenden"])  # the resend: attempt 2
    assert status_of(conn, notificatie_id) == ("verzonden", None)
    callbacks_settled(sim, 2)
    await worker.drain(["receipt"])
    assert status_of(conn, notificatie_id) == ("bezorgd", None)
    attempts = poging(conn, notificatie_id)
    assert [(p[1], p[2]) for p in attempts] == [(1, "tijdelijk-mislukt"), (2, "bezorgd")]
    assert sorted(sent(sim)["per_reference"].values()) == [1, 1]


async def test_permanent_failure_under_centraal_is_reported_once(sim, worker, intake, conn):
    party = seed_party(sim, "55556666", [{"waarde": "permanent+p@bedrijf.nl", "isDefault": True}])
    set_faults(sim, duplicate_rate=1.0)
    notificatie_id = intake("KVK:55556666", regie="centraal")
    await worker.drain(["verzenden"])
    callbacks_settled(sim, 2)
    await worker.drain(["receipt", "ongeldig-melden"])
    assert status_of(conn, notificatie_id) == ("niet-bezorgbaar", "onbereikbaar")
    reports = sim_get(sim.profiel_url, "/_sim/ongeldig")
    assert len(reports) == 1
    [report] = reports
    assert report["count"] == 1
    assert report["report"]["contactgegevenId"] == party["contactgegevens"][0]["id"]
    assert report["report"]["identificatieNummer"] == "55556666"
    assert taken(conn, "ongeldig-melden", "done") == 1


async def test_invalid_report_defers_during_an_outage(sim, worker, intake, conn):
    seed_party(sim, "77778888", [{"waarde": "permanent+q@bedrijf.nl"}])
    intake("KVK:77778888", regie="centraal")
    await worker.drain(["verzenden"])
    callbacks_settled(sim, 1)
    await worker.drain(["receipt"])
    httpx.post(f"{sim.profiel_url}/_sim/outage", json={"status": 503}).raise_for_status()
    await worker.drain(["ongeldig-melden"])
    row = conn.execute(
        "SELECT staat::text, pogingen, laatste_fout FROM nmc.taak WHERE soort = 'ongeldig-melden'"
    ).fetchone()
    assert row == ("open", 0, "profielservice-http-503")
    httpx.post(f"{sim.profiel_url}/_sim/outage", json={}).raise_for_status()
    advance(conn, "1 minute")
    await worker.drain(["ongeldig-melden"])
    assert len(sim_get(sim.profiel_url, "/_sim/ongeldig")) == 1


async def test_silence_ends_in_bezorgstatus_onbekend(sim, worker, intake, conn):
    notificatie_id = intake("stil+niets@voorbeeld.nl")
    await worker.drain(["verzenden"])
    for step in ("1 hour", "5 hours", "18 hours", *["1 day"] * 6):
        advance(conn, step)
        await worker.drain(["reconciliëren"])
    assert status_of(conn, notificatie_id) == ("bezorgstatus-onbekend", None)
    asked = [r for r in sim_get(sim.notifynl_url, "/_sim/requests") if r["method"] == "GET"]
    # +1 h, +6 h, +24 h, daily up to day 6, and last when the 7-day retention ends
    assert len(asked) == 9


async def test_reconciliation_404_ends_in_bezorgstatus_onbekend(sim, worker, intake, conn):
    set_faults(sim, lose_rate=1.0)
    notificatie_id = intake("bezorgd+vergeten@voorbeeld.nl")
    await worker.drain(["verzenden"])
    httpx.post(f"{sim.notifynl_url}/_sim/clock", json={"advance_s": 8 * 86400}).raise_for_status()
    advance(conn, "1 hour 1 minute")
    await drain_until(
        worker,
        lambda: status_of(conn, notificatie_id)[0] == "bezorgstatus-onbekend",
        ["reconciliëren"],
    )
