"""What must hold across transactions: concurrent claimers as nmc_worker on real connections."""

import threading
from collections import Counter

import psycopg
import pytest
from pipelinetest import advance

from nmc.database import with_overrides

CLAIMERS = 4


def claim_all(worker_url: str, query: str, barrier: threading.Barrier, results: list, idle=3):
    """Claim in a loop until `idle` empty claims in a row; append every claimed task id."""
    with psycopg.connect(worker_url, autocommit=True) as conn:
        barrier.wait()
        empty = 0
        while empty < idle:
            ids = [row[0] for row in conn.execute(query).fetchall()]
            results.extend(ids)
            empty = 0 if ids else empty + 1


def run_claimers(worker_url: str, query: str, count: int = CLAIMERS) -> list[int]:
    barrier = threading.Barrier(count)
    per_claimer: list[list[int]] = [[] for _ in range(count)]
    threads = [
        threading.Thread(target=claim_all, args=(worker_url, query, barrier, per_claimer[n]))
        for n in range(count)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return [taak_id for ids in per_claimer for taak_id in ids]


@pytest.fixture
def worker_url(db_url: str) -> str:
    return with_overrides(db_url, user="nmc_worker")


BULK_INTAKE = """
SELECT count(*) FROM nmc.intake_notificaties_v3(
    %(dv)s, 'decentraal', 1::smallint, 0::smallint, 'kek-1', NULL,
    (SELECT array_agg(gen_random_uuid()) FROM generate_series(1, %(n)s)),
    array_fill('aanslag'::text, ARRAY[%(n)s]),
    (SELECT array_agg(sha256(gen_random_uuid()::text::bytea)) FROM generate_series(1, %(n)s)),
    array_fill(sha256('p'::bytea), ARRAY[%(n)s]),
    array_fill('\\x01'::bytea, ARRAY[%(n)s]),
    array_fill('\\x02'::bytea, ARRAY[%(n)s]),
    array_fill('\\x03'::bytea, ARRAY[%(n)s]),
    array_fill(NULL::timestamptz, ARRAY[%(n)s]),
    array_fill('0123456789abcdef0123456789abcdef'::text, ARRAY[%(n)s]),
    array_fill(NULL::text, ARRAY[%(n)s]),
    NULL
)
"""


def bulk_intake(conn: psycopg.Connection, dv_id: int, count: int) -> None:
    """`count` decentraal notificaties through the real intake, 1000 per call (dummy
    ciphertext: these tests only claim)."""
    for start in range(0, count, 1000):
        conn.execute(BULK_INTAKE, {"dv": dv_id, "n": min(1000, count - start)})


def test_concurrent_send_claims_never_share_a_task(conn, dv_id, worker_url):
    # A pace far above what four claimers take at one instant: only the tasks are shared.
    conn.execute("SELECT nmc.set_notify_service('standaard', 1000000, 0.1, 1000)")
    bulk_intake(conn, dv_id, 400)
    claimed = run_claimers(
        worker_url, "SELECT taak_id FROM nmc.claim_verzenden('w-' || pg_backend_pid(), 9)"
    )
    assert len(claimed) == 400
    assert not [t for t, n in Counter(claimed).items() if n > 1]


def test_concurrent_task_claims_never_share_a_task(conn, worker_url):
    conn.execute(
        "INSERT INTO nmc.taak (soort, due, aangemaakt_op) "
        "SELECT 'wissen', nmc.now(), nmc.now() FROM generate_series(1, 600)"
    )
    claimed = run_claimers(
        worker_url, "SELECT taak_id FROM nmc.claim_taken('wissen', 'w-' || pg_backend_pid(), 13)"
    )
    assert sorted(claimed) == sorted(set(claimed))
    assert len(claimed) == 600


def test_send_budget_holds_with_four_concurrent_claimers(conn, dv_id, worker_url):
    # 50 a minute less 10% for reconciliation: 45 for sends, at most 30 at once.
    conn.execute("SELECT nmc.set_notify_service('standaard', 50, 0.1, 30)")
    bulk_intake(conn, dv_id, 200)
    query = "SELECT taak_id FROM nmc.claim_verzenden('w-' || pg_backend_pid(), 7)"

    first_burst = run_claimers(worker_url, query)
    assert len(first_burst) == 30  # the burst, however many claim at once
    advance(conn, "1 minute")
    a_minute_later = run_claimers(worker_url, query)
    assert len(a_minute_later) == 15  # the even pace: 45 - 30 a minute
    assert not set(first_burst) & set(a_minute_later)
