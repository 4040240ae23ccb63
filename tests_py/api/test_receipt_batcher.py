"""Group commit of NotifyNL callbacks (nmc.api.receipt_batcher) against a real database:
receipts that arrive together share one transaction, each gets its own answer, and a failed
store fails every receipt of its batch; refusals (401) that arrive together share one count."""

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from apitest import BASE, auth, decentraal
from psycopg_pool import AsyncConnectionPool

from nmc import sql_calls
from nmc.api.receipt_batcher import ReceiptBatcher
from nmc.database import with_overrides

RECEIPTS = 60


@pytest.fixture
def pogingen(client, conn) -> list[str]:
    """Attempts of notifications a worker claimed for sending (their ids are references)."""
    for n in range(4):
        body = decentraal(dvRef=f"batch-{n}", emailAdres=f"groep.{n}@voorbeeld-bezorging.nl")
        response = client.post(f"{BASE}/decentraal/notificaties", json=body, headers=auth())
        assert response.status_code == 202
    rows = conn.execute("SELECT poging_id::text FROM nmc.claim_verzenden('test', 10)").fetchall()
    return [row[0] for row in rows]


def receipt(reference: str | None, status: str, completed_at: datetime | None) -> dict:
    return {
        "reference": reference,
        "notifynl_id": uuid.uuid4(),
        "status": status,
        "completed_at": completed_at,
        "sent_at": None,
    }


async def store_all(db_url: str, receipts: list[dict], **options) -> list:
    async with AsyncConnectionPool(
        with_overrides(db_url, user="nmc_api"), min_size=1, max_size=4, kwargs={"autocommit": True}
    ) as pool:
        batcher = ReceiptBatcher(pool, **options)
        return await asyncio.gather(*(batcher.store(r) for r in receipts), return_exceptions=True)


def test_receipts_that_arrive_together_share_a_transaction(api_env, pogingen, conn):
    start = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    receipts = [
        receipt(pogingen[n % len(pogingen)], "sending", start + timedelta(seconds=n))
        for n in range(RECEIPTS)
    ]
    receipts.append(dict(receipts[0], notifynl_id=uuid.uuid4()))  # the same callback again
    receipts.append(receipt(str(uuid.uuid4()), "delivered", start))  # not ours
    receipts.append(receipt("not-a-reference", "delivered", None))

    results = asyncio.run(store_all(api_env.db_url, receipts))

    assert results == ["opgeslagen"] * RECEIPTS + ["dubbel"] + ["onbekende-reference"] * 2
    stored, transactions = conn.execute(
        "SELECT count(*), count(DISTINCT xmin::text) FROM nmc.taak WHERE soort = 'receipt'"
    ).fetchone()
    assert stored == RECEIPTS
    # Every store waits on the database, so the receipts behind the first ones go together.
    assert transactions < RECEIPTS / 4


class Hints:
    def __init__(self) -> None:
        self.melds = 0

    def meld(self) -> None:
        self.melds += 1


def test_each_stored_batch_hints_the_workers_and_a_failed_one_does_not(api_env, pogingen, conn):
    start = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    receipts = [receipt(pogingen[0], "sending", start + timedelta(seconds=n)) for n in range(8)]
    hints = Hints()
    results = asyncio.run(
        store_all(api_env.db_url, receipts, max_batch=4, max_in_flight=1, werk=hints)
    )
    assert results == ["opgeslagen"] * 8
    batches = conn.execute(
        "SELECT count(DISTINCT xmin::text) FROM nmc.taak WHERE soort = 'receipt'"
    ).fetchone()[0]
    assert hints.melds == batches
    conn.execute(
        "REVOKE EXECUTE ON FUNCTION nmc.store_receipts_v2("
        "text[], uuid[], text[], timestamptz[], timestamptz[], uuid[], integer[]) FROM nmc_api"
    )
    asyncio.run(store_all(api_env.db_url, receipts[:1], werk=hints))
    assert hints.melds == batches, "nothing stored, nothing hinted"


def test_a_batch_never_exceeds_its_maximum(api_env, pogingen, conn):
    start = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    receipts = [receipt(pogingen[0], "sending", start + timedelta(seconds=n)) for n in range(25)]
    results = asyncio.run(store_all(api_env.db_url, receipts, max_batch=4, max_in_flight=1))
    assert results == ["opgeslagen"] * 25
    sizes = conn.execute(
        "SELECT count(*) FROM nmc.taak WHERE soort = 'receipt' GROUP BY xmin::text"
    ).fetchall()
    assert max(size for (size,) in sizes) <= 4
    assert sum(size for (size,) in sizes) == 25


def test_a_failed_store_fails_every_receipt_of_its_batch(api_env, pogingen, conn):
    conn.execute(
        "REVOKE EXECUTE ON FUNCTION nmc.store_receipts_v2("
        "text[], uuid[], text[], timestamptz[], timestamptz[], uuid[], integer[]) FROM nmc_api"
    )
    receipts = [receipt(pogingen[0], "sending", None), receipt(pogingen[1], "sending", None)]
    results = asyncio.run(store_all(api_env.db_url, receipts))
    assert all(isinstance(result, psycopg.errors.InsufficientPrivilege) for result in results)
    assert conn.execute("SELECT count(*) FROM nmc.taak WHERE soort = 'receipt'").fetchone()[0] == 0


def test_refusals_that_arrive_together_are_counted_in_one_statement(api_env, conn, monkeypatch):
    calls: list[dict] = []
    fetch_one = sql_calls.fetch_one

    async def recording(pool, name, params):
        calls.append(params)
        return await fetch_one(pool, name, params)

    monkeypatch.setattr(sql_calls, "fetch_one", recording)

    async def flood() -> None:
        async with AsyncConnectionPool(
            with_overrides(api_env.db_url, user="nmc_api"),
            min_size=1,
            max_size=4,
            kwargs={"autocommit": True},
        ) as pool:
            batcher = ReceiptBatcher(pool)
            await asyncio.gather(*(batcher.count_refused() for _ in range(200)))

    asyncio.run(flood())
    [(aantal,)] = conn.execute(
        "SELECT aantal FROM nmc.teller WHERE naam = 'receipt_ongeautoriseerd'"
    ).fetchall()
    assert aantal == 200
    # One count under way at a time: the first alone, everything behind it in the next.
    assert len(calls) <= 3 and sum(call["aantal"] for call in calls) == 200


def test_limits_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        ReceiptBatcher(None, max_batch=0)  # type: ignore[arg-type]
