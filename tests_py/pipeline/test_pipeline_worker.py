"""The worker's send tasks against the simulators and a real database."""

import asyncio
from datetime import timedelta

import httpx
import psycopg
import pytest
from pipelinetest import (
    DIENST,
    DV_NAAM,
    advance,
    set_faults,
    sim_get,
    status_of,
)

from nmc.crypto.kek_ring import new_kek_ring, parse_kek_ring
from nmc.crypto.sealing import Sealed, open_sealed
from nmc.worker import verzenden
from nmc.worker.loop import Worker


def poging(conn, notificatie_id):
    return conn.execute(
        "SELECT id, nummer, status::text, notifynl_id, contactgegeven_id FROM nmc.poging "
        "WHERE notificatie_id = %s ORDER BY nummer",
        [notificatie_id],
    ).fetchall()


def verzendtaak(conn, notificatie_id):
    return conn.execute(
        "SELECT staat::text, pogingen, uitstellen, laatste_fout FROM nmc.taak "
        "WHERE notificatie_id = %s AND soort = 'verzenden' ORDER BY id DESC LIMIT 1",
        [notificatie_id],
    ).fetchone()


def sent(sim):
    return sim_get(sim.notifynl_url, "/_sim/sent")


def seed_party(sim, nummer, contactgegevens, soort="KVK"):
    party = {
        "identificatieType": soort,
        "identificatieNummer": nummer,
        "contactgegevens": contactgegevens,
    }
    response = httpx.post(f"{sim.profiel_url}/_sim/parties", json=party)
    response.raise_for_status()
    return response.json()[0]


async def test_decentraal_reaches_verzonden(sim, worker, intake, conn):
    ids = [intake(f"bezorgd+{n}@voorbeeld.nl", gegevens={"naam": f"N{n}"}) for n in range(3)]
    assert await worker.drain(["verzenden"]) == 3
    for notificatie_id in ids:
        assert status_of(conn, notificatie_id) == ("verzonden", None)
        [(poging_id, nummer, status, _, _)] = poging(conn, notificatie_id)
        assert (nummer, status) == (1, "verzonden")
        assert sent(sim)["per_reference"][str(poging_id)] == 1
    accepted = {n["reference"]: n for n in sent(sim)["notifications"]}
    assert {n["personalisation"]["naam"] for n in accepted.values()} == {"N0", "N1", "N2"}
    # The reconcile task is planned an hour ahead.
    planned = conn.execute(
        "SELECT count(*) FROM nmc.taak WHERE soort = 'reconciliëren' AND staat = 'open' "
        "AND due > nmc.now() + interval '59 minutes'"
    ).fetchone()[0]
    assert planned == 3


async def test_centraal_reaches_verzonden_with_the_scoped_address(sim, worker, intake, conn):
    party = seed_party(
        sim,
        "12345678",
        [
            {"waarde": "algemeen@bedrijf.nl", "isDefault": True},
            {
                "waarde": "bezorgd+btw@bedrijf.nl",
                "scopes": [{"dienstverlenerNaam": DV_NAAM, "dienstNaam": DIENST}],
            },
            {"type": "Telefoonnummer", "waarde": "0612345678"},
        ],
    )
    notificatie_id = intake("KVK:12345678", regie="centraal")
    await worker.drain(["verzenden"])
    assert status_of(conn, notificatie_id) == ("verzonden", None)
    [(_, _, _, _, contactgegeven_id)] = poging(conn, notificatie_id)
    assert str(contactgegeven_id) == party["contactgegevens"][1]["id"]
    [accepted] = sent(sim)["notifications"]
    assert accepted["email_address"] == "bezorgd+btw@bedrijf.nl"
    # The address is never stored: not on the attempt, not in the task's error, not in events.
    rows = conn.execute(
        "SELECT p::text FROM nmc.poging AS p UNION ALL SELECT t::text FROM nmc.taak AS t "
        "UNION ALL SELECT e::text FROM nmc.event AS e"
    ).fetchall()
    assert not [row for row in rows if "bedrijf.nl" in row[0]]


async def test_notifynl_outage_defers_without_attempts_then_sends(sim, worker, intake, conn):
    notificatie_id = intake("bezorgd+storing@voorbeeld.nl")
    set_faults(sim, error_rate={"503": 1.0})
    await worker.drain(["verzenden"])
    assert status_of(conn, notificatie_id) == ("in-verzending", None)
    staat, pogingen, uitstellen, fout = verzendtaak(conn, notificatie_id)
    assert (staat, pogingen, uitstellen, fout) == ("open", 0, 1, "notifynl-http-503")
    for code in ("500", "429", "401"):  # every outage class defers; none counts
        set_faults(sim, error_rate={code: 1.0})
        advance(conn, "15 minutes")
        await worker.drain(["verzenden"])
    assert verzendtaak(conn, notificatie_id)[1:3] == (0, 4)
    assert sent(sim)["count"] == 0

    set_faults(sim)
    advance(conn, "15 minutes")
    await worker.drain(["verzenden"])
    assert status_of(conn, notificatie_id) == ("verzonden", None)
    [(poging_id, *_)] = poging(conn, notificatie_id)
    assert sent(sim)["per_reference"] == {str(poging_id): 1}
    assert verzendtaak(conn, notificatie_id)[:2] == ("done", 0)


async def test_notifynl_400_is_niet_bezorgbaar(sim, worker, intake, conn, monkeypatch):
    # Without the worker's own check of NotifyNL's rule the call goes out, and NotifyNL's
    # 400 on email_address takes the same path.
    monkeypatch.setattr(verzenden, "refused_by_notifynl", lambda address: False)
    notificatie_id = intake("geen-geldig-adres@")
    await worker.drain(["verzenden"])
    assert status_of(conn, notificatie_id) == ("niet-bezorgbaar", "onbereikbaar")
    assert [p[2] for p in poging(conn, notificatie_id)] == ["permanent-mislukt"]
    assert sent(sim)["count"] == 0  # refused by NotifyNL: nothing accepted


async def test_an_address_notifynl_would_refuse_is_not_sent(sim, worker, intake, conn):
    # Accepted before the intake checked NotifyNL's rule: three hyphens in a row.
    notificatie_id = intake("jan@voor---beeld.nl")
    await worker.drain(["verzenden"])
    assert status_of(conn, notificatie_id) == ("niet-bezorgbaar", "onbereikbaar")
    assert [p[2] for p in poging(conn, notificatie_id)] == ["permanent-mislukt"]
    assert sent(sim)["count"] == 0
    assert (
        conn.execute("SELECT count(*) FROM nmc.taak WHERE soort = 'ongeldig-melden'").fetchone()[0]
        == 0
    )  # decentraal: the address is the DV's, nothing to report


async def test_a_profielservice_address_notifynl_would_refuse_is_reported(
    sim, worker, intake, conn
):
    party = seed_party(sim, "24682468", [{"waarde": "jan@xn---voorbeeld.nl", "isDefault": True}])
    contactgegeven_id = party["contactgegevens"][0]["id"]
    notificatie_id = intake("KVK:24682468", regie="centraal")
    await worker.drain(["verzenden"])
    assert status_of(conn, notificatie_id) == ("niet-bezorgbaar", "onbereikbaar")
    [(_, _, status, _, op_poging)] = poging(conn, notificatie_id)
    assert (status, str(op_poging)) == ("permanent-mislukt", contactgegeven_id)
    assert sent(sim)["count"] == 0  # no call to NotifyNL
    await worker.drain(["ongeldig-melden"])  # reported invalid, as after a permanent failure
    [report] = sim_get(sim.profiel_url, "/_sim/ongeldig")
    assert report["report"]["contactgegevenId"] == contactgegeven_id


@pytest.mark.parametrize("party", [None, [{"type": "Telefoonnummer", "waarde": "0612345678"}]])
async def test_no_party_or_no_email_is_geen_contactgegevens(sim, worker, intake, conn, party):
    if party is not None:
        seed_party(sim, "87654321", party)
    notificatie_id = intake("KVK:87654321", regie="centraal")
    await worker.drain(["verzenden"])
    assert status_of(conn, notificatie_id) == ("niet-bezorgbaar", "geen-contactgegevens")
    assert poging(conn, notificatie_id) == []
    assert sent(sim)["count"] == 0


async def test_outage_outlasting_geldig_tot_is_verlopen(sim, worker, intake, conn):
    now = conn.execute("SELECT nmc.now()").fetchone()[0]
    notificatie_id = intake("bezorgd+kort@voorbeeld.nl", geldig_tot=now + timedelta(minutes=10))
    set_faults(sim, error_rate={"502": 1.0})
    for _ in range(20):
        await worker.drain(["verzenden"])
        if status_of(conn, notificatie_id)[0] != "in-verzending":
            break
        advance(conn, "2 minutes")
    assert status_of(conn, notificatie_id) == ("verlopen", "verlopen")
    assert verzendtaak(conn, notificatie_id)[1] == 0
    assert sent(sim)["count"] == 0


async def test_profielservice_and_ldv_outages_defer(sim, worker, intake, conn):
    seed_party(sim, "11112222", [{"waarde": "bezorgd+p@bedrijf.nl"}])
    centraal = intake("KVK:11112222", regie="centraal")
    httpx.post(f"{sim.profiel_url}/_sim/outage", json={"status": 503}).raise_for_status()
    await worker.drain(["verzenden"])
    assert verzendtaak(conn, centraal)[1:] == (0, 1, "profielservice-http-503")

    decentraal = intake("bezorgd+l@voorbeeld.nl")
    ldv_base = sim.ldv_url.rsplit("/ldv/", 1)[0]
    httpx.post(f"{ldv_base}/_sim/outage", json={"status": 500}).raise_for_status()
    await worker.drain(["verzenden"])
    assert verzendtaak(conn, decentraal)[1:] == (0, 1, "ldv-http-500")
    assert sent(sim)["count"] == 0  # no LDV record, no call

    httpx.post(f"{sim.profiel_url}/_sim/outage", json={}).raise_for_status()
    httpx.post(f"{ldv_base}/_sim/outage", json={}).raise_for_status()
    advance(conn, "1 minute")
    await worker.drain(["verzenden"])
    assert status_of(conn, centraal)[0] == status_of(conn, decentraal)[0] == "verzonden"


async def test_an_ldv_record_precedes_every_external_call(sim, worker, intake, conn):
    seed_party(sim, "33334444", [{"waarde": "bezorgd+c@bedrijf.nl"}], soort="RSIN")
    intake("bezorgd+d@voorbeeld.nl")
    intake("RSIN:33334444", regie="centraal")
    set_faults(sim, error_rate={"500": 1.0})
    await worker.drain(["verzenden"])  # deferred: the re-claim looks up by reference first
    set_faults(sim)
    advance(conn, "1 minute")
    await worker.drain(["verzenden"])

    records = {r["span_id"]: r for r in sim_get(sim.ldv_url, "")}
    calls = sim_get(sim.notifynl_url, "/_sim/requests") + sim_get(sim.profiel_url, "/_sim/requests")
    assert len(calls) == 2 + 1 + 2 + 1 + 2  # sends (failed), partij, lookups, partij, sends
    for call in calls:
        _, trace_id, span_id, _ = call["traceparent"].split("-")
        record = records[span_id]
        assert record["trace_id"] == trace_id
        assert record["_ontvangen"] <= call["ts"]
        attributes = record["attributes"]
        assert attributes["dpl.core.data_subject_id_type"] in ("email", "RSIN")
        assert len(attributes["dpl.core.data_subject_id"]) == 64
    text = str(records)
    assert "voorbeeld.nl" not in text and "33334444" not in text and "bedrijf.nl" not in text
    traces = conn.execute("SELECT array_agg(trace_id) FROM nmc.notificatie").fetchone()[0]
    assert {r["trace_id"] for r in records.values()} == set(traces)


async def test_a_decryption_failure_counts_as_an_internal_failure(sim, worker_config, intake, conn):
    notificatie_id = intake("bezorgd+x@voorbeeld.nl")
    other_ring = parse_kek_ring(new_kek_ring("kek-test"))
    async with Worker.started(worker_config, ring=other_ring, pseudonym_key=b"k" * 32) as worker:
        await worker.drain(["verzenden"])
    assert verzendtaak(conn, notificatie_id)[:2] == ("open", 1)
    assert verzendtaak(conn, notificatie_id)[3] == "decrypt"


async def test_killed_after_201_the_reclaim_finds_the_message(
    sim, worker, worker_config, intake, conn, ring
):
    from nmc.adapters.notifynl import NotifyNL

    notificatie_id = intake("bezorgd+dood@voorbeeld.nl")
    async with await psycopg.AsyncConnection.connect(
        worker_config.database_url, autocommit=True
    ) as wconn:
        cursor = await wconn.execute(
            "SELECT taak_id, poging_id, dv_id, ontvanger_versleuteld, gegevens_versleuteld, "
            "sleutel_gewrapt, kek_id FROM nmc.claim_verzenden('gestorven-worker', 1)"
        )
        _, poging_id, dv_id, ontvanger, gegevens, sleutel, kek_id = await cursor.fetchone()
    opened = open_sealed(
        notificatie_id, dv_id, Sealed(ontvanger, gegevens, sleutel, kek_id), ring=ring
    )
    async with httpx.AsyncClient() as client:
        notifynl = NotifyNL(client, sim.notifynl_url, worker_config.notifynl_api_key)
        accepted = await notifynl.send_email(
            opened.recipient, "a0a0a0a0-0000-4000-8000-00000000000a", {}, str(poging_id)
        )
    # The worker dies here: no finish. Nothing happens until its lease has run out.
    assert await worker.drain(["verzenden"]) == 0
    advance(conn, "3 minutes")
    assert await worker.drain(["verzenden"]) == 1
    assert status_of(conn, notificatie_id) == ("verzonden", None)
    [(_, _, status, notifynl_id, _)] = poging(conn, notificatie_id)
    assert (status, notifynl_id) == ("verzonden", accepted.notifynl_id)
    assert sent(sim)["per_reference"] == {str(poging_id): 1}
    lookups = [r for r in sim_get(sim.notifynl_url, "/_sim/requests") if r["method"] == "GET"]
    assert [r["reference"] for r in lookups] == [str(poging_id)]


async def test_reclaim_past_geldig_tot_without_a_message_is_verlopen(
    sim, worker, worker_config, intake, conn
):
    now = conn.execute("SELECT nmc.now()").fetchone()[0]
    notificatie_id = intake("bezorgd+laat@voorbeeld.nl", geldig_tot=now + timedelta(minutes=1))
    async with await psycopg.AsyncConnection.connect(
        worker_config.database_url, autocommit=True
    ) as wconn:
        await wconn.execute("SELECT * FROM nmc.claim_verzenden('gestorven-worker', 1)")
    advance(conn, "3 minutes")
    await worker.drain(["verzenden"])
    assert status_of(conn, notificatie_id) == ("verlopen", "verlopen")
    assert sent(sim)["count"] == 0


async def test_the_loop_runs_every_kind_until_stopped(sim, callbacks, worker, intake, conn):
    ids = [intake(f"bezorgd+loop{n}@voorbeeld.nl") for n in range(25)]
    running = asyncio.create_task(worker.run())
    for _ in range(500):  # sends, callbacks, receipts: all in the background
        if all(status_of(conn, i)[0] == "bezorgd" for i in ids):
            break
        await asyncio.sleep(0.02)
    worker.stop()
    await asyncio.wait_for(running, timeout=10)
    assert {status_of(conn, i)[0] for i in ids} == {"bezorgd"}
    assert sent(sim)["count"] == 25


async def test_watchdog_replans_a_lost_send_task(sim, worker, intake, conn):
    notificatie_id = intake("bezorgd+waakhond@voorbeeld.nl")
    conn.execute("DELETE FROM nmc.taak WHERE notificatie_id = %s", [notificatie_id])
    assert await worker.drain(["verzenden"]) == 0
    assert await worker.run_once("controle") == 1
    await worker.drain(["verzenden"])
    assert status_of(conn, notificatie_id) == ("verzonden", None)


def test_notifynl_api_key_is_required(tmp_path):
    from nmc.config import Settings
    from nmc.errors import NmcError
    from nmc.worker.config import WorkerConfig, parse_kinds

    with pytest.raises(NmcError, match="NMC_NOTIFYNL_API_KEY"):
        WorkerConfig.from_env(Settings.from_env({}), {})
    assert parse_kinds("verzenden,navraag") == ("verzenden", "reconciliëren")
    with pytest.raises(NmcError, match="unknown task kind"):
        parse_kinds("verzenden,feed")


async def test_wissen_erases_the_key_after_the_term_and_keeps_the_proof(worker, intake, conn):
    notificatie_id = intake("bezorgd+wissen@voorbeeld.nl")
    conn.execute(
        "SELECT nmc.cancel_notificatie(dv_id, id) FROM nmc.notificatie WHERE id = %s",
        [notificatie_id],
    )
    assert await worker.run_once("wissen") == 0, "nothing before the erase term"
    conn.execute("SELECT nmc.advance_clock('7 days')")
    assert await worker.run_once("wissen") == 1
    sleutel, ontvanger, status = conn.execute(
        "SELECT sleutel_gewrapt, ontvanger_versleuteld, status::text FROM nmc.notificatie"
        " WHERE id = %s",
        [notificatie_id],
    ).fetchone()
    assert (sleutel, bytes(ontvanger), status) == (None, b"", "geannuleerd")
