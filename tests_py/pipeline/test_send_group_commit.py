"""The worker's group commits against a real database (nmc.worker.verzenden, .context):
send outcomes that arrive together share one transaction, each task is finished only by
that commit, a stale item fails alone, a batch the database refuses as a whole is committed
item by item, and lease extensions are group-committed with the same fencing."""

import asyncio
import uuid

import psycopg
import pytest

from nmc.worker import verzenden
from nmc.worker.db import StaleClaim


async def claimed(worker, count: int) -> list:
    rows = await verzenden.claim(worker.ctx, count)
    assert len(rows) == count
    return rows


def done_transactions(conn, rows) -> tuple[int, int]:
    """(done tasks, distinct transactions that closed them) among `rows`' tasks."""
    return conn.execute(
        "SELECT count(*), count(DISTINCT xmin::text) FROM nmc.taak "
        "WHERE id = ANY(%s) AND staat = 'done'",
        [[r.taak_id for r in rows]],
    ).fetchone()


async def test_outcomes_that_arrive_together_share_one_commit(worker, intake, conn):
    for n in range(6):
        intake(f"bezorgd+groep{n}@voorbeeld.nl")
    rows = await claimed(worker, 6)
    outcomes = [verzenden._finish(worker.ctx, row, "verzonden", uuid.uuid4()) for row in rows]
    assert await asyncio.gather(*outcomes) == ["verzonden"] * 6
    # Handed in in one go (before the flush could start): one transaction for all six.
    assert done_transactions(conn, rows) == (6, 1)
    statuses = conn.execute(
        "SELECT DISTINCT status::text FROM nmc.notificatie WHERE id = ANY(%s)",
        [[r.notificatie_id for r in rows]],
    ).fetchall()
    assert statuses == [("verzonden",)]


async def test_a_stale_item_fails_alone(worker, intake, conn):
    for n in range(3):
        intake(f"bezorgd+oud{n}@voorbeeld.nl")
    rows = await claimed(worker, 3)
    # Another claim took the middle task over after its lease ran out.
    conn.execute(
        "UPDATE nmc.taak SET claim_epoch = claim_epoch + 1 WHERE id = %s", [rows[1].taak_id]
    )
    results = await asyncio.gather(
        *(verzenden._finish(worker.ctx, row, "verzonden", uuid.uuid4()) for row in rows),
        return_exceptions=True,
    )
    assert results[0] == results[2] == "verzonden"
    assert isinstance(results[1], StaleClaim)
    assert done_transactions(conn, [rows[0], rows[2]])[0] == 2
    assert conn.execute(
        "SELECT staat::text FROM nmc.taak WHERE id = %s", [rows[1].taak_id]
    ).fetchone() == ("claimed",)


async def test_a_batch_refused_as_a_whole_is_committed_item_by_item(worker, intake, conn):
    for n in range(3):
        intake(f"bezorgd+dubbel{n}@voorbeeld.nl")
    rows = await claimed(worker, 3)
    shared = uuid.uuid4()  # two attempts cannot hold one NotifyNL id (a unique index)
    results = await asyncio.gather(
        verzenden._finish(worker.ctx, rows[0], "verzonden", uuid.uuid4()),
        verzenden._finish(worker.ctx, rows[1], "verzonden", shared),
        verzenden._finish(worker.ctx, rows[2], "verzonden", shared),
        return_exceptions=True,
    )
    # The batch of three failed as a whole; then one by one, only the third fails.
    assert results[:2] == ["verzonden", "verzonden"]
    assert isinstance(results[2], psycopg.errors.UniqueViolation)
    assert done_transactions(conn, rows)[0] == 2


async def test_lease_extensions_are_group_committed_and_fenced(worker, intake, conn):
    for n in range(4):
        intake(f"bezorgd+lease{n}@voorbeeld.nl")
    rows = await claimed(worker, 4)
    conn.execute("SELECT nmc.advance_clock('1 minute')")
    conn.execute(
        "UPDATE nmc.taak SET claim_epoch = claim_epoch + 1 WHERE id = %s", [rows[3].taak_id]
    )
    results = await asyncio.gather(
        *(worker.ctx.extend_lease(r.taak_id, r.claim_epoch) for r in rows), return_exceptions=True
    )
    assert results[:3] == [None, None, None]
    assert isinstance(results[3], StaleClaim)
    leases = conn.execute(
        "SELECT count(*) FILTER (WHERE lease_tot > nmc.now() + interval '90 seconds'), "
        "count(DISTINCT xmin::text) FROM nmc.taak WHERE id = ANY(%s)",
        [[r.taak_id for r in rows[:3]]],
    ).fetchone()
    assert leases == (3, 1), "three extended, in one transaction"


@pytest.mark.parametrize("fout", ["NM014", "22023"])
def test_a_refused_outcome_is_an_internal_failure(fout):
    row = type("Row", (), {"fout": fout, "status": "in-verzending"})()
    result = verzenden._result(row)
    assert result.fout == f"verzenden-{fout}"
