"""The feed from a real streaming standby (hot standby, WAL replication between two
PostgreSQL clusters of this test's own).

The watermark: the 50-concurrent-writers test of test_feed_watermark.py with the writers on
the primary and the reader on the standby (the call count on the primary, the page on the
standby, as the API does with NMC_API_REPLICA_DATABASE_URL), also while the standby lags:
its replay paused again and again, or every commit applied with a delay. 0 skipped, 0
duplicates.

The API: with the replica setting the pages come from the standby (a paused standby serves
nothing new while the primary has it), the call count and the acknowledgement stay on the
primary; an unreachable replica costs no 503.
"""

import json
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from apitest import BASE, OIN_A, TEMPLATE_ID, auth, dv_document
from feedtest import ACK, FEED, SNAPSHOT, intake, read_until
from starlette.testclient import TestClient

from nmc.api.app import create_app
from nmc.database import with_overrides
from replicatest import Replicated, replicated
from stacktest import free_port, needs_server_binaries
from watermarktest import (
    Reader,
    assert_served_exactly,
    fifty_writers,
    polling,
    read_the_rest,
    run_writers,
)

pytestmark = needs_server_binaries


@pytest.fixture(scope="module")
def pair() -> Iterator[Replicated]:
    with replicated() as replicated_pair:
        yield replicated_pair


def _apply_dv(url: str, oin: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        document = dv_document(oin, feedAanroepenPerMinuut=1_000_000)
        # The watermark test's intake (watermarktest.notificatie) uses berichttype t.
        document["berichttypen"].append({"code": "t", "notifynlTemplateId": TEMPLATE_ID})
        return conn.execute(
            "SELECT nmc.apply_dienstverlener(%s::jsonb)", (json.dumps(document),)
        ).fetchone()[0]


class StandbyReader(Reader):
    """A DV reading as the API does with a replica: the call counted on the primary, the
    page read on the standby."""

    def __init__(self, primary_url: str, standby_url: str, dv_id: int):
        super().__init__(standby_url, dv_id)
        self.primary = psycopg.connect(primary_url, autocommit=True)

    def page(self, limit: int) -> dict[str, Any]:
        epoch, xid, event_id, issued = self.cursor
        self.primary.execute(
            "SELECT nmc.take_feed_aanroep_api(%s, %s, %s::xid8, %s)",
            (self.dv_id, epoch, xid, issued),
        )
        return self.connection.execute(
            "SELECT nmc.read_feed_pagina(%s, %s, %s::xid8, %s, %s, %s)",
            (self.dv_id, epoch, xid, event_id, issued, limit),
        ).fetchone()[0]


class Lag:
    """Makes the standby lag while the writers run, and samples how far behind it was."""

    def __init__(self, pair: Replicated, kind: str):
        self.pair = pair
        self.kind = kind
        self.stop = threading.Event()
        self.max_bytes = 0
        self.max_seconds = 0.0
        self.thread = threading.Thread(target=self._run)

    def __enter__(self) -> "Lag":
        if self.kind == "apply-delay":
            self.pair.standby.set(recovery_min_apply_delay="300ms")
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        with self.pair.standby.connect() as conn:
            if conn.execute("SELECT pg_catalog.pg_is_wal_replay_paused()").fetchone()[0]:
                conn.execute("SELECT pg_catalog.pg_wal_replay_resume()")
        if self.kind == "apply-delay":
            self.pair.standby.set(recovery_min_apply_delay="0")

    def _run(self) -> None:
        primary, standby = self.pair.primary, self.pair.standby
        with primary.connect() as p, standby.connect() as s:
            while not self.stop.is_set():
                if self.kind == "paused-replay":  # paused 0.5 s, then 0.2 s to replay
                    s.execute("SELECT pg_catalog.pg_wal_replay_pause()")
                    self.stop.wait(0.5)
                    self._sample(p, s)
                    s.execute("SELECT pg_catalog.pg_wal_replay_resume()")
                    self.stop.wait(0.2)
                else:
                    self._sample(p, s)
                    self.stop.wait(0.25)

    def _sample(self, p: psycopg.Connection, s: psycopg.Connection) -> None:
        row = p.execute(
            "SELECT coalesce(max(pg_catalog.pg_wal_lsn_diff("
            " pg_catalog.pg_current_wal_lsn(), replay_lsn)), 0)::bigint,"
            " coalesce(max(extract(epoch FROM replay_lag)), 0)::float8"
            " FROM pg_catalog.pg_stat_replication"
        ).fetchone()
        self.max_bytes = max(self.max_bytes, row[0])
        self.max_seconds = max(self.max_seconds, row[1])
        if row[0] > 0:  # behind: how old the newest commit it has applied is
            behind = s.execute(
                "SELECT coalesce(extract(epoch FROM pg_catalog.now()"
                " - pg_catalog.pg_last_xact_replay_timestamp()), 0)::float8"
            ).fetchone()[0]
            self.max_seconds = max(self.max_seconds, behind)


@pytest.mark.parametrize("lag", ["none", "paused-replay", "apply-delay"])
def test_fifty_writers_on_the_primary_and_a_reader_on_the_standby_agree_exactly(pair, lag):
    primary_admin = pair.url(pair.primary)
    dv_id = _apply_dv(primary_admin, f"0000000100{random.randrange(10**9, 10**10)}")  # noqa: S311
    writers = fifty_writers(primary_admin, dv_id)
    reader = StandbyReader(pair.url(pair.primary, "api"), pair.url(pair.standby, "api"), dv_id)

    with Lag(pair, lag) as lagging, polling(reader):
        run_writers(primary_admin, writers)
        # Before the standby catches up: what the primary serves beyond the standby.
        with psycopg.connect(primary_admin, autocommit=True) as check:
            primary_seen = [
                row[0]
                for row in check.execute(
                    "SELECT e.event_id FROM nmc.event AS e WHERE e.dv_id = %s"
                    " AND e.xid < pg_snapshot_xmin(pg_current_snapshot())",
                    (dv_id,),
                )
            ]
        behind = len(primary_seen) - len(reader.seen)
    pair.replicas.wait_caught_up(pair.standby)
    committed, transitions = read_the_rest(reader, primary_admin, dv_id)

    seen = reader.seen
    print(
        f"lag {lag}: {len(seen)} events read on the standby; replication lag seen "
        f"{lagging.max_seconds:.2f} s / {lagging.max_bytes} bytes of WAL; the standby was "
        f"{behind} events behind the primary when the writers ended"
    )
    assert_served_exactly(seen, committed, transitions, writers)
    if lag != "none":
        assert lagging.max_bytes > 0 or lagging.max_seconds > 0, "the standby really lagged"


# ---------------------------------------------------------------------------------------
# The API with NMC_API_REPLICA_DATABASE_URL


@pytest.fixture
def standby_client(api_env, pair, monkeypatch) -> Iterator[tuple[TestClient, int]]:
    """The app on the replicated pair: nmc_api on the primary, the replica on the standby
    (with a lag bound no paused standby of these tests reaches)."""
    dv_id = _apply_dv(pair.url(pair.primary), OIN_A)
    monkeypatch.setenv("NMC_API_DATABASE_URL", pair.url(pair.primary, "api"))
    monkeypatch.setenv("NMC_API_REPLICA_DATABASE_URL", pair.url(pair.standby, "api"))
    monkeypatch.setenv("NMC_API_REPLICA_MAX_LAG_SECONDS", "3600")
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        yield client, dv_id


@contextmanager
def _app(monkeypatch: pytest.MonkeyPatch, **env: str | None) -> Iterator[TestClient]:
    """Another app on the same pair (and the same keys), with `env` changed (None: unset)."""
    with monkeypatch.context() as patch:
        for name, value in env.items():
            if value is None:
                patch.delenv(name, raising=False)
            else:
                patch.setenv(name, value)
        with TestClient(create_app(), raise_server_exceptions=False) as client:
            yield client


@contextmanager
def _replay_paused(pair: Replicated) -> Iterator[None]:
    with pair.standby.connect() as standby:
        standby.execute("SELECT pg_catalog.pg_wal_replay_pause()")
        try:
            yield
        finally:
            standby.execute("SELECT pg_catalog.pg_wal_replay_resume()")
    pair.replicas.wait_caught_up(pair.standby)


def _received(pair: Replicated) -> None:
    """Until the standby has received (not replayed) all the primary's WAL up to now."""
    with psycopg.connect(pair.url(pair.primary), autocommit=True) as primary:
        target = primary.execute("SELECT pg_catalog.pg_current_wal_lsn()").fetchone()[0]
    with pair.standby.connect() as standby:
        deadline = time.monotonic() + 20
        while standby.execute(
            "SELECT pg_catalog.pg_wal_lsn_diff(%s::pg_lsn, pg_catalog.pg_last_wal_receive_lsn())"
            " > 0",
            (target,),
        ).fetchone()[0]:
            assert time.monotonic() < deadline, "the standby never received the WAL"
            time.sleep(0.02)


def _watermark_past(pair: Replicated, dv_id: int, notificatie_id: str) -> None:
    """Until the primary's watermark is past the newest event of the notification."""
    with psycopg.connect(pair.url(pair.primary), autocommit=True) as primary:
        deadline = time.monotonic() + 20
        while not primary.execute(
            "SELECT max(e.xid) < pg_snapshot_xmin(pg_current_snapshot()) FROM nmc.event AS e"
            " WHERE e.dv_id = %s AND e.notificatie_id = %s::uuid",
            (dv_id, notificatie_id),
        ).fetchone()[0]:
            assert time.monotonic() < deadline, "the watermark never passed the event"
            time.sleep(0.02)


def _calls(pair: Replicated, dv_id: int) -> int:
    return pair.primary.scalar(
        "SELECT coalesce(sum(aantal), 0)::integer FROM nmc.feedaanroep WHERE dv_id = %s",
        (dv_id,),
        database="nmc",
    )


def test_with_a_replica_the_pages_come_from_the_standby(pair, standby_client):
    client, dv_id = standby_client
    first = intake(client, 3)
    pair.replicas.wait_caught_up(pair.standby)
    events, cursor = read_until(client, 3)
    assert {e["subject"] for e in events} >= set(first)
    calls = _calls(pair, dv_id)
    assert calls >= 1, "the call count is on the primary"

    with pair.standby.connect() as standby:
        standby.execute("SELECT pg_catalog.pg_wal_replay_pause()")
        try:
            later = intake(client, 2)
            with psycopg.connect(pair.url(pair.primary), autocommit=True) as primary:
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:  # the primary serves them
                    page = primary.execute(
                        "SELECT nmc.read_feed_pagina(%s, NULL, NULL, NULL, NULL, 1000)",
                        (dv_id,),
                    ).fetchone()[0]
                    if set(later) <= {e["notificatieId"] for e in page["events"]}:
                        break
                    time.sleep(0.05)
                else:
                    pytest.fail("the primary never served the new events")
            response = client.get(FEED, params={"cursor": cursor}, headers=auth(OIN_A))
            assert response.status_code == 200, response.text
            assert response.json()["events"] == [], "the paused standby has nothing new"
            assert _calls(pair, dv_id) == calls + 1, "and the call was counted on the primary"
            snapshot = client.get(SNAPSHOT, headers=auth(OIN_A))
            assert snapshot.status_code == 200, snapshot.text
            assert not set(later) & {n["notificatieId"] for n in snapshot.json()["notificaties"]}
            assert _calls(pair, dv_id) == calls + 2, "a snapshot page is a counted call too"
        finally:
            standby.execute("SELECT pg_catalog.pg_wal_replay_resume()")
    pair.replicas.wait_caught_up(pair.standby)
    events, cursor = read_until(client, 2, cursor)
    assert {e["subject"] for e in events} == set(later), "resumed: exactly the two new ones"
    response = client.put(ACK, json={"cursor": cursor}, headers=auth(OIN_A))
    assert response.status_code == 204, "the acknowledgement is written on the primary"
    assert response.headers["Nmc-Bevestiging"] == "bevestigd"
    metrics = client.get("/metrics")
    assert metrics.status_code == 200 and "nmc_notificaties" in metrics.text


def test_an_unreachable_replica_costs_no_503(api_env, dvs, monkeypatch, caplog):
    dead = f"postgresql://nmc_api@127.0.0.1:{free_port()}/nmc?connect_timeout=1"
    monkeypatch.setenv("NMC_API_REPLICA_DATABASE_URL", dead)
    with TestClient(create_app(), raise_server_exceptions=False) as client:
        ids = intake(client, 2)
        events, _ = read_until(client, 2)
        assert {e["subject"] for e in events} == set(ids), "read on the primary instead"
        snapshot = client.get(SNAPSHOT, headers=auth(OIN_A))
        assert snapshot.status_code == 200
        assert len(snapshot.json()["notificaties"]) == 2
        assert client.get("/metrics").status_code == 200
    assert "replica unavailable" in caplog.text
    assert with_overrides(dead, user="nmc_api") not in caplog.text


def test_a_snapshot_page_is_never_older_than_the_first_page(pair, standby_client, monkeypatch):
    """Page 1 read on the primary (or a standby further ahead), page 2 on a standby that has
    not replayed a status change below page 1's watermark: the feed resumes from page 1's
    position, past that change, so page 2 must show it: it is read on the primary."""
    client, dv_id = standby_client
    intake(client, 3)
    with psycopg.connect(pair.url(pair.primary), autocommit=True) as primary:
        ids = [
            str(row[0])
            for row in primary.execute(
                "SELECT id FROM nmc.notificatie WHERE dv_id = %s ORDER BY id", (dv_id,)
            )
        ]
    size = len(ids) - 1  # the last page holds the last notification only
    pair.replicas.wait_caught_up(pair.standby)
    with _replay_paused(pair):
        response = client.delete(f"{BASE}/notificaties/{ids[-1]}", headers=auth(OIN_A))
        assert response.status_code == 204, response.text
        _watermark_past(pair, dv_id, ids[-1])
        with _app(monkeypatch, NMC_API_REPLICA_DATABASE_URL=None) as on_primary:
            first = on_primary.get(SNAPSHOT, params={"limiet": size}, headers=auth(OIN_A))
        assert first.status_code == 200, first.text
        assert first.json()["volgende"], "a second page"
        second = client.get(
            SNAPSHOT, params={"limiet": size, "na": first.json()["volgende"]}, headers=auth(OIN_A)
        )
        assert second.status_code == 200, second.text
        [last] = second.json()["notificaties"]
        assert last["notificatieId"] == ids[-1]
        assert last["status"] == "geannuleerd", "page 2 is at least as new as page 1"
        assert second.json()["cursor"] == first.json()["cursor"]


def test_past_the_lag_bound_pages_and_metrics_come_from_the_primary(
    pair, standby_client, monkeypatch
):
    """A standby with replay paused and WAL waiting is behind; with a bound of 0 the pages and
    /metrics come from the primary, and /metrics exports the standby's replay lag."""
    client, _ = standby_client
    intake(client, 2)
    pair.replicas.wait_caught_up(pair.standby)
    _, cursor = read_until(client, 2)
    with _app(monkeypatch, NMC_API_REPLICA_MAX_LAG_SECONDS="0") as bounded, _replay_paused(pair):
        later = intake(client, 2)
        _received(pair)
        events, _ = read_until(bounded, 2, cursor)
        assert {e["subject"] for e in events} == set(later), "read on the primary"
        response = client.get(FEED, params={"cursor": cursor}, headers=auth(OIN_A))
        assert response.json()["events"] == [], "within a wide bound: the paused standby"
        metrics = bounded.get("/metrics").text
    [lag] = [
        float(line.split()[-1])
        for line in metrics.splitlines()
        if line.startswith("nmc_replica_achterstand_seconden ")
    ]
    assert lag > 0, "the replay lag of the paused standby is exported"
    with psycopg.connect(pair.url(pair.primary), autocommit=True) as primary:
        total = primary.execute("SELECT count(*) FROM nmc.notificatie").fetchone()[0]
    counted = sum(
        float(line.split()[-1])
        for line in metrics.splitlines()
        if line.startswith("nmc_notificaties{")
    )
    assert counted == total, "and the counts are the primary's"
