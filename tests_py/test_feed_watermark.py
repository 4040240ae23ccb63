"""The feed's visibility watermark, proven with real concurrent transactions.

A cursor must never skip an event that an older transaction commits late. The feed reads
strictly below pg_snapshot_xmin(pg_current_snapshot()), so an event becomes visible only
once every transaction that could still commit an event below it has ended.
"""

import uuid

import psycopg
import pytest
from psycopg import sql

from watermarktest import (
    Reader,
    assert_served_exactly,
    begin_with_xid,
    fifty_writers,
    notificatie,
    polling,
    read_the_rest,
    run_writers,
    watermark_dv,
    write_event,
)

DV_OIN = "00000001234567890000"


@pytest.fixture
def feed_dv(conn) -> int:
    return watermark_dv(conn, DV_OIN)


def test_a_late_commit_of_an_older_transaction_is_not_skipped(db_url, feed_dv):
    n1, n2 = notificatie(db_url, feed_dv), notificatie(db_url, feed_dv)
    reader = Reader(db_url, feed_dv)
    assert len(reader.read_until(2)) == 2, "the two intake events first"
    t1 = begin_with_xid(db_url)
    with psycopg.connect(db_url) as t2:
        write_event(t2, n2)
        t2.commit()
    assert reader.read() == [], "T2 committed, but T1 (lower xid) is open: nothing is served"

    write_event(t1, n1)
    t1.commit()
    t1.close()
    served = reader.read_until(2)
    assert len(served) == 2, "after T1 commits, both events are served"
    with psycopg.connect(db_url) as check:
        expected = [
            row[0]
            for row in check.execute(
                "SELECT event_id FROM nmc.event WHERE dv_id = %s AND sequence = 2"
                " ORDER BY xid, event_id",
                (feed_dv,),
            )
        ]
    assert served == expected, "in (xid, event_id) order: T1's event first"


def test_a_rolled_back_older_transaction_releases_the_newer_event(db_url, feed_dv):
    n1, n2 = notificatie(db_url, feed_dv), notificatie(db_url, feed_dv)
    reader = Reader(db_url, feed_dv)
    assert len(reader.read_until(2)) == 2, "the two intake events first"
    t1 = begin_with_xid(db_url)
    write_event(t1, n1)
    with psycopg.connect(db_url) as t2:
        write_event(t2, n2)
        t2.commit()
    assert reader.read() == []
    t1.rollback()
    t1.close()
    assert len(reader.read_until(1)) == 1, "only T2's event exists"
    assert reader.read() == []


def test_a_writer_in_another_database_holds_the_watermark(db_url, admin_url, feed_dv):
    n2 = notificatie(db_url, feed_dv)
    reader = Reader(db_url, feed_dv)
    assert len(reader.read_until(1)) == 1, "the intake event first"
    other_db = f"nmc_other_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(other_db)))
    try:
        other_url = psycopg.conninfo.make_conninfo(admin_url, dbname=other_db)
        elsewhere = begin_with_xid(other_url)
        with psycopg.connect(db_url) as t2:
            write_event(t2, n2)
            t2.commit()
        assert reader.read() == [], "xids are cluster-wide: the other database's writer counts"
        elsewhere.rollback()
        elsewhere.close()
        assert len(reader.read_until(1)) == 1
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(other_db)))


def test_a_read_only_transaction_does_not_hold_the_watermark(db_url, feed_dv):
    n2 = notificatie(db_url, feed_dv)
    reader = Reader(db_url, feed_dv)
    assert len(reader.read_until(1)) == 1, "the intake event first"
    with psycopg.connect(db_url) as read_only:
        read_only.execute("SELECT count(*) FROM nmc.event")  # a snapshot, but no xid
        with psycopg.connect(db_url) as t2:
            write_event(t2, n2)
            t2.commit()
        assert len(reader.read_until(1)) == 1, "served while the read-only one is still open"


def test_fifty_concurrent_writers_and_a_polling_reader_agree_exactly(db_url, feed_dv):
    """Random long transactions, some rolled back; the reader polls throughout."""
    writers = fifty_writers(db_url, feed_dv)
    reader = Reader(db_url, feed_dv)
    with polling(reader):
        run_writers(db_url, writers)
    committed, transitions = read_the_rest(reader, db_url, feed_dv)
    assert_served_exactly(reader.seen, committed, transitions, writers)
