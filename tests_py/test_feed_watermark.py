"""The feed's visibility watermark, proven with real concurrent transactions.

A cursor must never skip an event that an older transaction commits late. The feed reads
strictly below pg_snapshot_xmin(pg_current_snapshot()), so an event becomes visible only
once every transaction that could still commit an event below it has ended.
"""

import hashlib
import json
import random
import threading
import time
import uuid

import psycopg
import pytest
from psycopg import sql

DV_OIN = "00000001234567890000"


def _b32(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


@pytest.fixture
def feed_dv(conn) -> int:
    """A DV with a generous feed call rate, so a polling reader is never throttled."""
    dv_id = conn.execute(
        "SELECT nmc.apply_dienstverlener(%s::jsonb)",
        (
            json.dumps(
                {
                    "oin": DV_OIN,
                    "naam": "Watermerk",
                    "quotumPerMinuut": 1000000,
                    "quotumPerDag": 10000000,
                    "feedAanroepenPerMinuut": 1000000,
                    "berichttypen": [
                        {"code": "t", "notifynlTemplateId": "a0a0a0a0-0000-4000-8000-000000000001"}
                    ],
                }
            ),
        ),
    ).fetchone()[0]
    return dv_id


def _notificatie(url: str, dv_id: int) -> uuid.UUID:
    """A committed notification (its intake event is read away before each test step)."""
    notificatie_id = uuid.uuid4()
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            "SELECT nmc.intake_notificatie(%s, %s, 't', 'decentraal', %s, 1::smallint, %s,"
            " '\\x01', NULL, '\\x02', 'kek-1', NULL, NULL, %s, NULL)",
            (notificatie_id, dv_id, _b32(str(notificatie_id)), _b32("p"), uuid.uuid4().hex),
        )
    return notificatie_id


def _write_event(connection: psycopg.Connection, notificatie_id: uuid.UUID) -> None:
    """One transition (one event) in the connection's open transaction.

    Intake would serialise concurrent writers of one DV on its quota counter; transitions
    of different notifications share no lock, so transactions really overlap.
    """
    connection.execute(
        "SELECT nmc.transition_notificatie(%s, CASE (SELECT status FROM nmc.notificatie"
        " WHERE id = %s) WHEN 'aangenomen' THEN 'in-verzending' ELSE 'verzonden'"
        " END::nmc.notificatie_status)",
        (notificatie_id, notificatie_id),
    )


class Reader:
    """A DV reading the feed with its cursor, as the API will."""

    def __init__(self, url: str, dv_id: int):
        self.connection = psycopg.connect(url, autocommit=True)
        self.dv_id = dv_id
        self.cursor: tuple[int | None, str | None, int | None, object] = (None, None, None, None)
        self.seen: list[int] = []

    def read(self, limit: int = 1000) -> list[int]:
        epoch, xid, event_id, issued = self.cursor
        page = self.connection.execute(
            "SELECT nmc.page_events(%s, %s, %s::xid8, %s, %s, %s)",
            (self.dv_id, epoch, xid, event_id, issued, limit),
        ).fetchone()[0]
        self.cursor = (page["epoch"], page["xid"], page["eventId"], page["uitgegevenOp"])
        ids = [event["eventId"] for event in page["events"]]
        self.seen.extend(ids)
        return ids

    def read_until(self, count: int, within: float = 20.0) -> list[int]:
        """Reads until `count` events came. The watermark is cluster-wide: any other open
        writer on the server (another test, autovacuum) holds it back for a moment."""
        served: list[int] = []
        deadline = time.monotonic() + within
        while len(served) < count and time.monotonic() < deadline:
            served += self.read()
            if len(served) < count:
                time.sleep(0.02)
        return served


def _begin_with_xid(url: str) -> psycopg.Connection:
    connection = psycopg.connect(url)
    connection.execute("SELECT pg_current_xact_id()")  # takes an xid now: the older one
    return connection


def test_a_late_commit_of_an_older_transaction_is_not_skipped(db_url, feed_dv):
    n1, n2 = _notificatie(db_url, feed_dv), _notificatie(db_url, feed_dv)
    reader = Reader(db_url, feed_dv)
    assert len(reader.read_until(2)) == 2, "the two intake events first"
    t1 = _begin_with_xid(db_url)
    with psycopg.connect(db_url) as t2:
        _write_event(t2, n2)
        t2.commit()
    assert reader.read() == [], "T2 committed, but T1 (lower xid) is open: nothing is served"

    _write_event(t1, n1)
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
    n1, n2 = _notificatie(db_url, feed_dv), _notificatie(db_url, feed_dv)
    reader = Reader(db_url, feed_dv)
    assert len(reader.read_until(2)) == 2, "the two intake events first"
    t1 = _begin_with_xid(db_url)
    _write_event(t1, n1)
    with psycopg.connect(db_url) as t2:
        _write_event(t2, n2)
        t2.commit()
    assert reader.read() == []
    t1.rollback()
    t1.close()
    assert len(reader.read_until(1)) == 1, "only T2's event exists"
    assert reader.read() == []


def test_a_writer_in_another_database_holds_the_watermark(db_url, admin_url, feed_dv):
    n2 = _notificatie(db_url, feed_dv)
    reader = Reader(db_url, feed_dv)
    assert len(reader.read_until(1)) == 1, "the intake event first"
    other_db = f"nmc_other_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(other_db)))
    try:
        other_url = psycopg.conninfo.make_conninfo(admin_url, dbname=other_db)
        elsewhere = _begin_with_xid(other_url)
        with psycopg.connect(db_url) as t2:
            _write_event(t2, n2)
            t2.commit()
        assert reader.read() == [], "xids are cluster-wide: the other database's writer counts"
        elsewhere.rollback()
        elsewhere.close()
        assert len(reader.read_until(1)) == 1
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(other_db)))


def test_a_read_only_transaction_does_not_hold_the_watermark(db_url, feed_dv):
    n2 = _notificatie(db_url, feed_dv)
    reader = Reader(db_url, feed_dv)
    assert len(reader.read_until(1)) == 1, "the intake event first"
    with psycopg.connect(db_url) as read_only:
        read_only.execute("SELECT count(*) FROM nmc.event")  # a snapshot, but no xid
        with psycopg.connect(db_url) as t2:
            _write_event(t2, n2)
            t2.commit()
        assert len(reader.read_until(1)) == 1, "served while the read-only one is still open"


def test_fifty_concurrent_writers_and_a_polling_reader_agree_exactly(db_url, feed_dv):
    """Random long transactions, some rolled back; the reader polls throughout."""
    rng = random.Random(20261130)  # noqa: S311 - reproducible interleavings, not secrets
    plans = [
        (
            _notificatie(db_url, feed_dv),
            rng.randint(1, 4),
            rng.uniform(0.0, 0.15),
            rng.random() < 0.2,
        )
        for _ in range(50)
    ]
    stop = threading.Event()
    reader = Reader(db_url, feed_dv)

    def write(notificatie_id: uuid.UUID, events: int, hold: float, roll_back: bool) -> None:
        with psycopg.connect(db_url) as connection:
            for _ in range(events):
                _write_event(connection, notificatie_id)
                time.sleep(hold / events)  # interleave, not a timer: no rule waits on it
            if roll_back:
                connection.rollback()
            else:
                connection.commit()

    def poll() -> None:
        while not stop.is_set():
            reader.read(limit=7)

    poller = threading.Thread(target=poll)
    poller.start()
    writers = [threading.Thread(target=write, args=plan) for plan in plans]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join(timeout=60)
    stop.set()
    poller.join(timeout=60)
    with psycopg.connect(db_url) as check:
        all_events = [
            row[0]
            for row in check.execute(
                "SELECT event_id FROM nmc.event WHERE dv_id = %s ORDER BY xid, event_id",
                (feed_dv,),
            )
        ]
        transitions = check.execute(
            "SELECT count(*) FROM nmc.event WHERE dv_id = %s AND sequence > 1", (feed_dv,)
        ).fetchone()[0]
    reader.read_until(len(all_events) - len(reader.seen))

    seen = reader.seen
    assert transitions, "some writers committed"
    assert len(seen) == len(set(seen)), "no event served twice"
    assert seen == all_events, "no gap: exactly the committed events, in cursor order"
    assert sum(events for _, events, _, rolled in plans if not rolled) == transitions
