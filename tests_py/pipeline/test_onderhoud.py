"""Maintenance as tasks: a worker with the default kinds plans and runs every maintenance job
(one task per job, re-planned by its own run), retention included, and re-wraps the data
keys to the newest active KEK by itself once a worker of the new ring runs."""

import dataclasses
import secrets
import uuid
from datetime import timedelta

import httpx
from pipelinetest import TEMPLATE_ID, sim_get

from nmc.admin import operations as admin_ops
from nmc.config import Settings
from nmc.kek_ring import new_kek_ring, parse_kek_ring
from nmc.sealing import Sealed, open_sealed
from nmc.worker.config import DEFAULT_KINDS, KINDS
from nmc.worker.loop import Worker
from nmc.worker.onderhoud import JOBS

KEK_B = "kek-b"


def onderhoud_taken(conn) -> list[tuple]:
    return conn.execute(
        "SELECT payload ->> 'werk', staat::text, due > nmc.now() FROM nmc.taak"
        " WHERE soort = 'onderhoud' ORDER BY 1"
    ).fetchall()


async def test_a_default_worker_plans_and_runs_every_maintenance_job(worker, intake, conn):
    assert DEFAULT_KINDS == KINDS and "onderhoud" in worker.kinds
    cancelled = [intake(f"bezorgd+onderhoud-{n}@voorbeeld.nl") for n in range(3)]
    for notificatie_id in cancelled:
        conn.execute(
            "SELECT nmc.cancel_notificatie(dv_id, id) FROM nmc.notificatie WHERE id = %s",
            [notificatie_id],
        )
    assert await worker.run_once("onderhoud") == len(JOBS), "its first round runs every job"
    assert onderhoud_taken(conn) == [(job, "open", True) for job in sorted(JOBS)], (
        "each job's run planned its own next run"
    )
    assert await worker.run_once("onderhoud") == 0, "nothing is due until the jobs' pause passed"

    conn.execute("SELECT nmc.advance_clock('366 days')")
    assert await worker.run_once("onderhoud") == len(JOBS)
    assert conn.execute(
        "SELECT count(*) FROM nmc.notificatie WHERE id = ANY(%s)", [cancelled]
    ).fetchone() == (0,), "the retention job deleted the notifications past the retention"
    assert conn.execute(
        "SELECT count(*) FROM nmc.taak WHERE notificatie_id = ANY(%s) OR staat = 'done'",
        [cancelled],
    ).fetchone() == (0,), "with their tasks, and the old done tasks"


async def test_maintenance_rewraps_every_key_to_the_newest_active_kek(
    worker, worker_config, ring, ring_document, intake, conn, db_url
):
    ids = [intake(f"bezorgd+herwrap-{n}@voorbeeld.nl") for n in range(7)]
    kek_a = ring.active_id
    assert await worker.run_once("onderhoud") == len(JOBS), "a worker of ring A: A is the target"
    both = parse_kek_ring(
        {
            "active": KEK_B,
            "keys": {**ring_document["keys"], KEK_B: new_kek_ring(KEK_B)["keys"][KEK_B]},
        }
    )
    settings = dataclasses.replace(Settings.from_env(), database_url=db_url)
    config = dataclasses.replace(worker_config, kinds=("onderhoud",))
    async with Worker.started(config, ring=both, pseudonym_key=secrets.token_bytes(32)) as new:
        conn.execute("SELECT nmc.advance_clock('5 minutes')")
        assert await new.run_once("onderhoud") == len(JOBS) - 1, "templates waits 15 minutes"
        rows = admin_ops.kek_status(settings, both)
        status = {row["kek_id"]: (row["sleutels"], row["doel"]) for row in rows}
        assert status == {kek_a: (0, False), KEK_B: (len(ids), True)}, (
            "the worker of the new ring made B the target and re-wrapped every key to it"
        )
        assert admin_ops.rewrap_to_do(admin_ops.kek_status(settings, both)) == (KEK_B, 0)

    # A worker of the old ring (a rolling deploy) reports A again: nothing is wrapped back.
    conn.execute("SELECT nmc.advance_clock('5 minutes')")
    assert await worker.run_once("onderhoud") == len(JOBS) - 1
    assert conn.execute(
        "SELECT kek_id, count(*) FROM nmc.notificatie GROUP BY kek_id"
    ).fetchall() == [(KEK_B, len(ids))]
    for notificatie_id in ids:
        row = conn.execute(
            "SELECT dv_id, ontvanger_versleuteld, gegevens_versleuteld, sleutel_gewrapt, kek_id"
            " FROM nmc.notificatie WHERE id = %s",
            [notificatie_id],
        ).fetchone()
        opened = open_sealed(uuid.UUID(str(notificatie_id)), row[0], Sealed(*row[1:]), ring=both)
        assert opened.recipient.startswith("bezorgd+herwrap-"), "the data opens under B"


def template_row(conn) -> tuple:
    return conn.execute(
        "SELECT staat, versie, placeholders, sleutels, verversen_na - nmc.now()"
        " FROM nmc.notifynl_template WHERE template_id = %s",
        [TEMPLATE_ID],
    ).fetchone()


async def test_the_templates_job_reads_each_berichttypes_template_and_keeps_it_current(
    worker, sim, dv_id, conn
):
    """Issue 24: the worker reads the template with the service's key; SQL records it. An
    edit is read at the next run (at once after nmc.markeer_template_verouderd), a template
    that disappears makes its berichttype unavailable."""
    edit = {"template_id": TEMPLATE_ID, "subject": "Aanslag ((Naam))", "body": "((datum-besluit))"}
    httpx.post(f"{sim.notifynl_url}/_sim/templates", json=edit).raise_for_status()
    assert await worker.run_once("onderhoud") == len(JOBS)
    assert template_row(conn)[:4] == (
        "beschikbaar", 1, ["Naam", "datum-besluit"], ["naam", "datumbesluit"]
    )  # fmt: skip
    assert timedelta(minutes=14) < template_row(conn)[4] <= timedelta(minutes=15)
    reads = [
        r
        for r in sim_get(sim.notifynl_url, "/_sim/requests")
        if r["path"].startswith("/v2/template/")
    ]
    assert [r["status"] for r in reads] == [200]

    httpx.post(
        f"{sim.notifynl_url}/_sim/templates", json={**edit, "body": "((bedrag))"}
    ).raise_for_status()
    assert await worker.run_once("onderhoud") == 0, "not due before its interval"
    assert conn.execute("SELECT nmc.markeer_template_verouderd(%s, 'aanslag')", [dv_id]).fetchone()
    assert await worker.run_once("onderhoud") == 1, "marked stale: read at the next round"
    assert template_row(conn)[:3] == ("beschikbaar", 2, ["Naam", "bedrag"])

    httpx.delete(f"{sim.notifynl_url}/_sim/templates/{TEMPLATE_ID}").raise_for_status()
    conn.execute("SELECT nmc.advance_clock('15 minutes')")
    await worker.run_once("onderhoud")
    assert template_row(conn)[0] == "verdwenen"
