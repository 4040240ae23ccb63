"""Maintenance as tasks: a worker with the default kinds plans and runs every maintenance job
(one task per job, re-planned by its own run), retention included, and re-wraps the data
keys to the newest active KEK by itself once a worker of the new ring runs."""

import asyncio
import dataclasses
import secrets
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import httpx
import psycopg
from pipelinetest import TEMPLATE_ID, sim_get

from nmc.admin import operations as admin_ops
from nmc.config import Settings
from nmc.crypto.kek_ring import new_kek_ring, parse_kek_ring
from nmc.crypto.sealing import Sealed, open_sealed
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


# ---------------------------------------------------------------------------------------
# The partities job behind a slow reader of the event log

# A bound, not a benchmark: the job waits at most its lock_timeout (100 ms) for the log, and
# an intake queued behind it no longer than that; without the timeout both wait for the
# reader, which lets go after READER_HOLDS_S.
BOUND_S = 1.0
READER_HOLDS_S = 4.0


def _partities_claimed(conn) -> tuple[int, int]:
    """The log's one range made nearly used up, so the partities job has DDL to do; its
    task claimed. Returns (taak_id, claim_epoch)."""
    while conn.execute("SELECT pg_current_xact_id()::text::bigint").fetchone()[0] < 1000:
        pass  # a young cluster: each call hands out an xid
    [(eind,)] = conn.execute("SELECT pg_current_xact_id()::text::bigint + 200").fetchall()
    conn.execute("DROP TABLE nmc.event_x000000000000")
    conn.execute(
        f"CREATE TABLE nmc.event_x000000000000 PARTITION OF nmc.event"
        f" FOR VALUES FROM ('0') TO ('{eind}')"
    )
    conn.execute("ALTER TABLE nmc.event_x000000000000 OWNER TO nmc_owner")
    conn.execute("UPDATE nmc.event_partitie SET xid_tot = %s::text::xid8", [str(eind)])
    conn.execute("SELECT nmc.ensure_onderhoud_v2('kek-1', 'w-kek-1')")
    [(taak_id, epoch)] = conn.execute(
        "SELECT c.taak_id, c.claim_epoch FROM nmc.claim_taken('onderhoud', 'w1', 10) AS c"
        " WHERE c.payload ->> 'werk' = 'partities'"
    ).fetchall()
    return taak_id, epoch


LAST_ANALYZE = (
    "SELECT last_analyze FROM pg_catalog.pg_stat_user_tables WHERE relid = 'nmc.event'::regclass"
)


def _waiting_for_a_lock(conn, pid: int) -> bool:
    return conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_locks WHERE pid = %s AND NOT granted)", [pid]
    ).fetchone()[0]


def _run_partities(conn) -> dict:
    """The partities job due now, claimed and run."""
    conn.execute("UPDATE nmc.taak SET due = nmc.now() WHERE payload ->> 'werk' = 'partities'")
    [(taak_id, epoch)] = conn.execute(
        "SELECT c.taak_id, c.claim_epoch FROM nmc.claim_taken('onderhoud', 'w1', 10) AS c"
        " WHERE c.payload ->> 'werk' = 'partities'"
    ).fetchall()
    return conn.execute("SELECT nmc.run_onderhoud(%s, %s)", [taak_id, epoch]).fetchone()[0]


def test_the_partition_job_defers_behind_a_slow_reader_and_intake_goes_on(intake, conn, db_url):
    taak_id, epoch = _partities_claimed(conn)
    with (
        psycopg.connect(db_url) as reader,
        psycopg.connect(db_url, autocommit=True) as job,
        ThreadPoolExecutor(max_workers=1) as pool,
    ):
        reader.execute("SELECT count(*) FROM nmc.event")  # open: ACCESS SHARE on the log held
        release = threading.Timer(READER_HOLDS_S, reader.rollback)
        release.start()
        try:
            job_pid = job.info.backend_pid
            started = time.monotonic()
            running = pool.submit(
                lambda: job.execute(
                    "SELECT nmc.run_onderhoud(%s, %s)", [taak_id, epoch]
                ).fetchone()[0]
            )
            while not running.done() and not _waiting_for_a_lock(conn, job_pid):
                time.sleep(0.005)  # until the job queues for its lock (or is done)
            intake_started = time.monotonic()
            intake("bezorgd+achter-de-ddl@voorbeeld.nl")
            intake_s = time.monotonic() - intake_started
            uitkomst = running.result(timeout=READER_HOLDS_S * 2)
            job_s = time.monotonic() - started
        finally:
            release.cancel()
        print(f"behind a slow reader: the job {job_s:.3f} s (deferred), an intake {intake_s:.3f} s")
        assert intake_s < BOUND_S, f"an intake waited {intake_s:.2f} s behind the partition DDL"
        assert job_s < BOUND_S, f"the job waited {job_s:.2f} s for the event log"
        assert uitkomst["uitgesteld"] is True and uitkomst["aangemaakt"] is None
        [task] = conn.execute(
            "SELECT staat::text, pogingen, uitstellen, due > nmc.now(),"
            " due <= nmc.now() + interval '5 minutes' FROM nmc.taak WHERE id = %s",
            [taak_id],
        ).fetchall()
        assert task == ("open", 0, 1, True, True), "deferred shortly, no failure counted"

    # The reader gone, the next run makes the range; the one after analyzes the log.
    uitkomst = _run_partities(conn)
    assert uitkomst["aangemaakt"] and not uitkomst["uitgesteld"]
    assert conn.execute(LAST_ANALYZE).fetchone() == (None,)
    assert _run_partities(conn)["geanalyseerd"] is True
    [(analyzed,)] = conn.execute(LAST_ANALYZE).fetchall()
    assert analyzed is not None, "the partitioned parent was analyzed (autovacuum never does)"


async def test_a_worker_whose_ring_lacks_a_kek_with_live_keys_does_not_start(
    worker_config, intake, conn
):
    """A send of a key under a KEK the ring lacks fails for good, so a
    worker of such a ring refuses to start, naming the KEK (an id), rather than run."""
    import pytest

    from nmc.worker.loop import KekRingIncomplete

    intake("bezorgd+kek-weg@voorbeeld.nl")  # a live key under the fixture ring's KEK
    other = parse_kek_ring(new_kek_ring("kek-ander"))
    with pytest.raises(KekRingIncomplete, match="kek-test"):
        async with Worker.started(worker_config, ring=other, pseudonym_key=secrets.token_bytes(32)):
            pass


async def test_one_workers_new_kek_does_not_move_the_target_for_the_rest(
    worker, worker_config, ring, ring_document, intake, conn
):
    """The re-wrap target moves to a newer KEK only once every live worker
    reports it active; one worker with a new ring among others of the old does not move it."""
    intake("bezorgd+doel@voorbeeld.nl")
    kek_a = ring.active_id
    assert await worker.run_once("onderhoud") == len(JOBS)
    both = parse_kek_ring(
        {
            "active": KEK_B,
            "keys": {**ring_document["keys"], KEK_B: new_kek_ring(KEK_B)["keys"][KEK_B]},
        }
    )
    config = dataclasses.replace(worker_config, kinds=("onderhoud",))
    async with Worker.started(config, ring=both, pseudonym_key=secrets.token_bytes(32)) as new:
        conn.execute("SELECT nmc.advance_clock('1 minute')")
        await new.run_once("onderhoud")
        assert conn.execute("SELECT nmc.herwrap_doel()").fetchone() == (kek_a,), (
            "the old ring's worker is live: the target stays"
        )
    # The old worker stops reporting (it was rolled): once its report is stale, it moves.
    conn.execute("SELECT nmc.advance_clock('5 minutes')")
    async with Worker.started(config, ring=both, pseudonym_key=secrets.token_bytes(32)) as new:
        await new.run_once("onderhoud")
        assert conn.execute("SELECT nmc.herwrap_doel()").fetchone() == (KEK_B,)


async def test_a_stopping_worker_withdraws_its_kek_report(worker_config, ring, conn):
    """A rolling deploy moves the target once the last worker of the old ring stops, not
    three minutes later: a clean stop withdraws the worker's report."""
    config = dataclasses.replace(worker_config, kinds=("onderhoud",))
    async with Worker.started(config, ring=ring, pseudonym_key=secrets.token_bytes(32)) as w:
        running = asyncio.create_task(w.run())
        query = "SELECT count(*) FROM nmc.kek_melding WHERE eigenaar = %s"
        for _ in range(200):  # the worker's first round reports (a background task)
            if conn.execute(query, [w.ctx.eigenaar]).fetchone()[0]:
                break
            await asyncio.sleep(0.02)
        assert conn.execute(query, [w.ctx.eigenaar]).fetchone()[0] == 1
        w.stop()
        await asyncio.wait_for(running, 30)
        assert conn.execute(query, [w.ctx.eigenaar]).fetchone()[0] == 0


def template_row(conn) -> tuple:
    return conn.execute(
        "SELECT staat, versie, placeholders, sleutels, verversen_na - nmc.now()"
        " FROM nmc.notifynl_template WHERE template_id = %s",
        [TEMPLATE_ID],
    ).fetchone()


async def test_the_templates_job_reads_each_berichttypes_template_and_keeps_it_current(
    worker, sim, dv_id, conn
):
    """The worker reads the template with the service's key; SQL records it. An
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
