"""Helpers of the watermark tests (test_feed_watermark.py, api/test_feed_standby.py,
test_metrics_watermerk.py): committed notifications, a transaction holding the watermark,
one-event transactions, a DV reading the feed with its cursor, and fifty
concurrent writers of random long transactions (some rolled back) with a reader polling
throughout, which must end up served exactly the committed events, in cursor order."""

import hashlib
import json
import random
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg

TEMPLATE_ID = "a0a0a0a0-0000-4000-8000-000000000001"


def watermark_dv(conn: psycopg.Connection, oin: str) -> int:
    """A DV with berichttype t (the intake below) and a generous quota and feed call rate, so
    neither the writers nor a polling reader is ever throttled."""
    document = {
        "oin": oin,
        "naam": "Watermerk",
        "quotumPerMinuut": 1000000,
        "quotumPerDag": 10000000,
        "feedAanroepenPerMinuut": 1000000,
        "berichttypen": [{"code": "t", "notifynlTemplateId": TEMPLATE_ID}],
    }
    return conn.execute(
        "SELECT nmc.apply_dienstverlener(%s::jsonb)", (json.dumps(document),)
    ).fetchone()[0]


def notificatie(url: str, dv_id: int) -> uuid.UUID:
    """A committed notification of berichttype t (its intake event is read away before each
    test step)."""
    notificatie_id = uuid.uuid4()
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            "SELECT nmc.intake_notificatie_v3(%s, %s, 't', 'decentraal', %s, 1::smallint, %s,"
            " 0::smallint, '\\x01', NULL, '\\x02', 'kek-1', NULL, NULL, %s, NULL, NULL)",
            (notificatie_id, dv_id, _b32(str(notificatie_id)), _b32("p"), uuid.uuid4().hex),
        )
    return notificatie_id


def begin_with_xid(url: str) -> psycopg.Connection:
    """An open transaction that has taken an xid: it holds the watermark until it ends."""
    connection = psycopg.connect(url)
    connection.execute("SELECT pg_current_xact_id()")  # takes an xid now: the older one
    return connection


def write_event(connection: psycopg.Connection, notificatie_id: uuid.UUID) -> None:
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
    """A DV reading the feed with its cursor, as the API does."""

    def __init__(self, url: str, dv_id: int):
        self.connection = psycopg.connect(url, autocommit=True)
        self.dv_id = dv_id
        self.cursor: tuple[int | None, str | None, int | None, object] = (None, None, None, None)
        self.seen: list[int] = []

    def read(self, limit: int = 1000) -> list[int]:
        page = self.page(limit)
        self.cursor = (page["epoch"], page["xid"], page["eventId"], page["uitgegevenOp"])
        ids = [event["eventId"] for event in page["events"]]
        self.seen.extend(ids)
        return ids

    def page(self, limit: int) -> dict[str, Any]:
        """The page after the cursor."""
        epoch, xid, event_id, issued = self.cursor
        return self.connection.execute(
            "SELECT nmc.page_events(%s, %s, %s::xid8, %s, %s, %s)",
            (self.dv_id, epoch, xid, event_id, issued, limit),
        ).fetchone()[0]

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


@dataclass(frozen=True)
class Writer:
    """One transaction: `events` transitions of a notification over `hold` seconds, then a
    commit or a rollback."""

    notificatie_id: uuid.UUID
    events: int
    hold: float
    roll_back: bool


def fifty_writers(url: str, dv_id: int) -> list[Writer]:
    """Fifty writers, each of a notification of its own, at reproducible random."""
    rng = random.Random(20261130)  # noqa: S311 - reproducible interleavings, not secrets
    return [
        Writer(
            notificatie(url, dv_id), rng.randint(1, 4), rng.uniform(0.0, 0.15), rng.random() < 0.2
        )
        for _ in range(50)
    ]


def run_writers(url: str, writers: list[Writer]) -> None:
    """All writers at once, until each has ended."""
    threads = [threading.Thread(target=_write, args=(url, writer)) for writer in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)


@contextmanager
def polling(reader: Reader) -> Iterator[None]:
    """The reader reads small pages throughout the block."""
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            reader.read(limit=7)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        yield
    finally:
        stop.set()
        poller.join(timeout=60)


def read_the_rest(reader: Reader, url: str, dv_id: int) -> tuple[list[int], int]:
    """Reads until the reader has had every committed event of the DV: (those events in
    cursor order, how many transitions committed)."""
    with psycopg.connect(url) as check:
        committed = [
            row[0]
            for row in check.execute(
                "SELECT event_id FROM nmc.event WHERE dv_id = %s ORDER BY xid, event_id",
                (dv_id,),
            )
        ]
        transitions = check.execute(
            "SELECT count(*) FROM nmc.event WHERE dv_id = %s AND sequence > 1", (dv_id,)
        ).fetchone()[0]
    reader.read_until(len(committed) - len(reader.seen))
    return committed, transitions


def assert_served_exactly(
    seen: list[int], committed: list[int], transitions: int, writers: list[Writer]
) -> None:
    assert transitions, "some writers committed"
    assert len(seen) == len(set(seen)), "no event served twice"
    assert seen == committed, "no gap: exactly the committed events, in cursor order"
    assert sum(w.events for w in writers if not w.roll_back) == transitions


def _write(url: str, writer: Writer) -> None:
    with psycopg.connect(url) as connection:
        for _ in range(writer.events):
            write_event(connection, writer.notificatie_id)
            time.sleep(writer.hold / writer.events)  # interleave, not a timer: no rule waits on it
        if writer.roll_back:
            connection.rollback()
        else:
            connection.commit()


def _b32(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()
