"""The watermark metrics, with real concurrent transactions (the alert "feed watermark held
back"): an open write transaction holds back every DV's feed, and /metrics says for how long.

* `nmc_feed_watermerk_achterstand_seconden`: how long the oldest committed event the feed
  cannot serve yet has waited (NMC clock);
* `nmc_oudste_schrijftransactie_seconden`: the age of the oldest open transaction with an xid
  (server time; pg_read_all_stats, which the bootstrap grants the owner here).
"""

import time

import psycopg
import pytest

from nmc.database import with_overrides
from watermarktest import begin_with_xid, notificatie, watermark_dv

DV_OIN = "00000001234567890023"
HELD = "nmc_feed_watermerk_achterstand_seconden"


@pytest.fixture
def dv_id(conn: psycopg.Connection) -> int:
    return watermark_dv(conn, DV_OIN)


def _metric(url: str, naam: str) -> float | None:
    """One scrape's value of an unlabelled family, as the API's role reads it."""
    with psycopg.connect(with_overrides(url, user="nmc_api"), autocommit=True) as connection:
        row = connection.execute(
            "SELECT waarde FROM nmc.metrics() WHERE naam = %s AND labels = '{}'", (naam,)
        ).fetchone()
    return None if row is None else row[0]


def test_a_committed_event_behind_an_open_write_transaction_is_reported(db_url, conn, dv_id):
    holder = begin_with_xid(db_url)
    try:
        notificatie(db_url, dv_id)  # committed, but above the holder's xid
        conn.execute("SELECT nmc.advance_clock('40 seconds')")
        held = _metric(db_url, HELD)
        assert held is not None and held >= 40
    finally:
        holder.rollback()
        holder.close()
    # The watermark is the cluster's: another session on this server may hold it a moment.
    deadline = time.monotonic() + 20
    while _metric(db_url, HELD) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _metric(db_url, HELD) == 0


def test_the_oldest_open_write_transaction_is_reported_with_its_age(db_url, conn):
    holder = begin_with_xid(db_url)
    try:
        pid = holder.info.backend_pid
        own_age = conn.execute(
            "SELECT EXTRACT(EPOCH FROM clock_timestamp() - xact_start)::float8"
            " FROM pg_stat_activity WHERE pid = %s",
            (pid,),
        ).fetchone()[0]
        oldest = _metric(db_url, "nmc_oudste_schrijftransactie_seconden")
        assert oldest is not None, "not reported: the owner lacks pg_read_all_stats"
        assert oldest >= own_age
    finally:
        holder.rollback()
        holder.close()
