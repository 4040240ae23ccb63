"""Maintenance as tasks: a worker with the default kinds plans and runs every maintenance job
(one task per job, re-planned by its own run), retention included, and re-wraps the data
keys to the newest active KEK by itself once a worker of the new ring runs."""

import dataclasses
import secrets
import uuid

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
        assert await new.run_once("onderhoud") == len(JOBS)
        rows = admin_ops.kek_status(settings, both)
        status = {row["kek_id"]: (row["sleutels"], row["doel"]) for row in rows}
        assert status == {kek_a: (0, False), KEK_B: (len(ids), True)}, (
            "the worker of the new ring made B the target and re-wrapped every key to it"
        )
        assert admin_ops.rewrap_to_do(admin_ops.kek_status(settings, both)) == (KEK_B, 0)

    # A worker of the old ring (a rolling deploy) reports A again: nothing is wrapped back.
    conn.execute("SELECT nmc.advance_clock('5 minutes')")
    assert await worker.run_once("onderhoud") == len(JOBS)
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


async def test_a_worker_whose_ring_lacks_a_kek_with_live_keys_does_not_start(
    worker_config, intake, conn
):
    """Issue 23 item 14: a send of a key under a KEK the ring lacks fails for good, so a
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
    """Issue 23 item 14: the re-wrap target moves to a newer KEK only once every live worker
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
