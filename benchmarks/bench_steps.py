"""The steps of a notification's life after its intake, send and receipt callback, each alone
at its best (large batches, no polling, nothing else running): CPU ms per item.

    .venv/bin/python benchmarks/bench_steps.py --count 300    # on a cluster of its own

bench_lifecycle runs these on its own cluster (the stack stopped) beside bench_intake,
bench_send's drain and bench_callback, and weighs them by how often the life took them.

One database carries N notifications through the life, each step timed alone once the work
for it is in place (made through the real SQL functions, not timed):

receipts     N sent attempts (intake -> claim_verzenden -> finish_verzenden) with a stored
             receipt each (store_receipts as nmc_api; 90% delivered, 10% permanent-failure);
             timed: nmc.process_receipts_v2(50) as nmc_worker until it handles none.
settlement   the clock past the settlement term; timed: nmc.process_vaststellingen_v2(100).
feed         timed: `nmc api` serving the DV's feed over HTTP, pages of 1,000 read and each
             acknowledged (nmc_dev.demo.dv.FeedReader, the life's reader; its CPU is the DV's,
             not counted): the API process and PostgreSQL per event read.
webhook      timed: the worker's terugkoppelen kind (in this process, as `nmc worker` runs
             it) delivering every event of the log in batches of 500 to the year run's
             receiver (nmc_dev.soak.yeardv.receiver_app, in a process of its own, not
             counted); the webhook's validation and its position at the oldest event are set
             up before, untimed.
erasure      the clock past the erase term; timed: nmc.process_wissen(500) as nmc_worker.
deletion     the clock past the proof's retention; timed: nmc.delete_expired(1000) as
             nmc_worker (the retentie job's work; the job's own task bookkeeping, one per
             batch, and the event partitions' drop are not in it).

Reconciliation on a database of its own: N notifications sent through the NotifyNL
simulator by the worker's verzenden kind (no callbacks come back), the clock past the first
reconciliation moment; timed: the worker's reconciliëren kind (claim_navraag_v2, the lookup
at the simulator, finish_navraag_v2; batch 100, 200 at once) until it claims none, the
budget's reconciliation share far above the load. The simulator's CPU is not counted.

CPU is from /proc: PostgreSQL's is the cluster's (bench_intake.process_cpu with its
postmaster set: backends, background processes, and exited ones); this process's (the
worker's Python, or the SQL-only steps' client, a few µs per batch) where the step runs
here; the API process's for the feed. Every step checks that it did all its work.
"""

import argparse
import asyncio
import datetime
import json
import multiprocessing
import os
import secrets
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import bench_intake
import httpx
import psycopg
from bench_callback import sent_attempts
from bench_intake import (
    BASE,
    drop_database,
    free_port,
    oin,
    process_cpu,
    start_api,
    write_secrets,
)
from bench_send import (
    fresh_database,
    intake_sealed,
    notifynl_simulator,
    onboard,
    set_budget,
    worker_config,
)

from nmc.admin.dev_iam import issue_dev_token
from nmc.admin.migrate import migrate
from nmc.crypto.kek_ring import new_kek_ring, parse_kek_ring
from nmc.crypto.peppers import new_peppers, parse_peppers
from nmc.database import with_overrides
from nmc.queries import QUERIES
from nmc.runtime import aio
from nmc.signing.webhook_signing import new_signing_ring, parse_signing_ring
from nmc.worker import receipt as receipt_worker
from nmc.worker import vaststellen as vaststellen_worker
from nmc.worker import wissen as wissen_worker
from nmc.worker.loop import Worker
from nmc_dev.demo.dv import FeedReader
from nmc_dev.sim.server import start_in_thread
from nmc_dev.soak.year import LOOPBACK_NETWORK
from nmc_dev.soak.yeardv import HOOK_PATH, receiver_app

ROOT = Path(__file__).resolve().parent.parent
# Each SQL-only step at the worker's own batch for it, as the life runs it (Kind.batch).
RECEIPT_BATCH = receipt_worker.BATCH
SETTLEMENT_BATCH = vaststellen_worker.BATCH
WISSEN_BATCH = wissen_worker.BATCH
RETENTIE_BATCH = 1000  # nmc.delete_expired's default
FAILED_SHARE = 10  # one receipt in this many is a permanent failure (bounces)
SETTLEMENT_JUMP = datetime.timedelta(days=8)
ERASURE_JUMP = datetime.timedelta(days=8)
DELETION_JUMP = datetime.timedelta(days=366)
RECONCILIATION_JUMP = datetime.timedelta(hours=1, minutes=5)
WEBHOOK_MAX_BATCH = 500  # as bench_lifecycle onboards its DV


CLIENT_BACKENDS = """
SELECT pid FROM pg_stat_activity
WHERE datname = current_database() AND backend_type = 'client backend'
  AND pid <> pg_backend_pid()
"""


class Cpu:
    """CPU seconds over a block: PostgreSQL's client backends on the step's database (the
    probe's own not; autovacuum, the WAL writer and the checkpointer not either: on a fresh
    database after bulk set-up they come and go by the second and would swamp a step of
    milliseconds), this process, and optionally the API process."""

    def __init__(self, probe: psycopg.Connection, api_pid: int | None = None) -> None:
        self.probe, self.api_pid = probe, api_pid
        self.seconds: dict[str, float] = {}

    def _now(self) -> dict[str, float]:
        backends = [pid for (pid,) in self.probe.execute(CLIENT_BACKENDS)]
        now = {
            "postgres": sum(process_cpu(pid) for pid in backends),
            "here": time.process_time(),
        }
        if self.api_pid is not None:
            now["api"] = process_cpu(self.api_pid)
        return now

    def __enter__(self) -> "Cpu":
        self._start = self._now()
        return self

    def __exit__(self, *exc) -> None:
        end = self._now()
        self.seconds = {part: end[part] - self._start[part] for part in end}


def per_item(cpu: Cpu, items: int, parts: tuple[str, ...], what: str) -> dict:
    """ms per item of the parts counted, and of each."""
    if items <= 0:
        raise SystemExit(f"the {what} ceiling did no work")
    ms = {part: 1000 * cpu.seconds[part] / items for part in parts}
    return {"items": items, "ms_per_item": round(sum(ms.values()), 4)} | {
        f"{part}_ms": round(v, 4) for part, v in ms.items()
    }


def expect(what: str, got, wanted) -> None:
    if got != wanted:
        raise SystemExit(f"the {what} ceiling did not do all its work: {got}, expected {wanted}")


def drain_sql(conn: psycopg.Connection, query: str, batch: int, counted=len) -> int:
    """Call a worker's processing query until it handles nothing; returns the total.
    `counted`: how many a call's rows say it handled (a row each, by default). The
    connection is opened before the timing: its backend's start is not the step's, and a
    backend closed inside the window would leave its CPU to the postmaster late."""
    total = 0
    while handled := counted(conn.execute(query, {"batch": batch}).fetchall()):
        total += handled
    return total


def advance(admin: psycopg.Connection, jump: datetime.timedelta) -> None:
    admin.execute("SELECT nmc.advance_clock(%s)", [jump])


# ------------------------------------------------------------------------------------ set-up


def create_database(admin_url: str, hook_url: str) -> tuple[str, str, int]:
    """A fresh migrated database with one DV (bench_intake's, with a webhook as the life's);
    returns (name, url, dv id)."""
    name = f"nmc_steps_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = with_overrides(admin_url, database=name)
    migrate(url, ROOT)
    template = str(uuid.uuid4())
    document = {
        "oin": oin(0),
        "naam": "Benchmark DV 0",
        "quotumPerMinuut": 2_000_000_000,
        "quotumPerDag": 2_000_000_000,
        "berichttypen": [{"code": "bench", "notifynlTemplateId": template}],
        "webhook": {"url": hook_url, "maxMislukt": 3, "maxBatch": WEBHOOK_MAX_BATCH},
    }
    with psycopg.connect(url, autocommit=True) as conn:
        [dv_id] = conn.execute(
            QUERIES["apply_dienstverlener"], {"config": json.dumps(document)}
        ).fetchone()
        conn.execute(
            QUERIES["record_template"],
            {"notify_service": "standaard", "template_id": template, "uitkomst": "gelezen",
             "versie": 1, "placeholders": ["naam"], "sleutels": ["naam"], "fout": None},
        )  # fmt: skip
    return name, url, dv_id


def store_receipts(url: str, sent: list[tuple[str, str]]) -> None:
    """A stored receipt per attempt, as the API stores them (nmc_api, 100 per call)."""
    now = datetime.datetime.now(datetime.UTC)
    with psycopg.connect(with_overrides(url, user="nmc_api"), autocommit=True) as conn:
        for start in range(0, len(sent), 100):
            chunk = list(enumerate(sent[start : start + 100], start))
            params = {
                "reference": [reference for _, (reference, _) in chunk],
                "notifynl_id": [uuid.UUID(notifynl_id) for _, (_, notifynl_id) in chunk],
                "status": [
                    "permanent-failure" if n % FAILED_SHARE == 0 else "delivered" for n, _ in chunk
                ],
                "completed_at": [now] * len(chunk),
                "sent_at": [now] * len(chunk),
                "template_id": [uuid.uuid4() for _ in chunk],
                "template_versie": [1] * len(chunk),
            }
            rows = conn.execute(QUERIES["store_receipts"], params).fetchall()
            expect("receipt set-up", sum(1 for _, r in rows if r == "opgeslagen"), len(chunk))


def scalar(conn: psycopg.Connection, query: str, *params) -> int:
    return conn.execute(query, params).fetchone()[0]


# ------------------------------------------------------------------------------------ webhook


def _receiver(hook_oin: str, received, urls, stop) -> None:
    """The DV's webhook receiver, in a process of its own (its CPU is the DV's)."""

    class Hook:
        def receive(self, events: list[dict], cursor: str) -> int:
            with received.get_lock():
                received.value += len(events)
            return 204

    server = start_in_thread(receiver_app({hook_oin: Hook()}))
    urls.put(server.url)
    stop.wait()
    server.stop()


@contextmanager
def webhook_receiver(hook_oin: str):
    """(hook URL, the shared count of events received)."""
    context = multiprocessing.get_context("spawn")
    received, urls, stop = context.Value("q", 0), context.Queue(), context.Event()
    process = context.Process(target=_receiver, args=(hook_oin, received, urls, stop))
    process.start()
    try:
        yield urls.get(timeout=60) + HOOK_PATH.format(oin=hook_oin), received
    finally:
        stop.set()
        process.join(timeout=20)


# The delivery position at or past the DV's newest event.
WEBHOOK_POSITION = """
SELECT (w.xid, w.event_id) >= (
    SELECT e.xid, e.event_id FROM nmc.event AS e WHERE e.dv_id = w.dv_id
    ORDER BY e.xid DESC, e.event_id DESC LIMIT 1
)
FROM nmc.webhookpositie AS w WHERE w.dv_id = %s
"""


async def deliver_webhook(url: str, dv_id: int, tmp: Path, received) -> dict:
    """The worker's terugkoppelen kind from the oldest event to the newest."""
    config = replace(
        worker_config(
            url, "http://127.0.0.1:9", f"unused-{uuid.uuid4()}-{uuid.uuid4()}", tmp, 100, 20
        ),
        kinds=("terugkoppelen",),
        webhook_toegestane_netwerken=LOOPBACK_NETWORK,
    )
    # The ring must hold the KEK of the live keys (bench_intake's id); it opens none here.
    ring = parse_kek_ring(new_kek_ring("bench-kek"))
    signing = parse_signing_ring(new_signing_ring())
    peppers = parse_peppers(new_peppers())
    api = with_overrides(url, user="nmc_api")
    async with Worker.started(
        config, ring=ring, pseudonym_key=secrets.token_bytes(32), signing=signing, peppers=peppers
    ) as worker:
        # Untimed: the first round plans the task and validates the URL (the handshake);
        # then the position goes to the oldest event, as PUT /webhook/positie sets it.
        with psycopg.connect(url, autocommit=True) as admin:
            for _ in range(20):
                await worker.run_once("terugkoppelen")
                validated = scalar(
                    admin, "SELECT count(*) FROM nmc.webhookvalidatie WHERE dv_id = %s "
                    "AND uitkomst = 'geldig'", dv_id,
                )  # fmt: skip
                if validated:
                    break
                advance(admin, datetime.timedelta(minutes=5))  # past the deferral
            expect("webhook validation", validated, 1)
            events = scalar(admin, "SELECT count(*) FROM nmc.event WHERE dv_id = %s", dv_id)
            with psycopg.connect(api, autocommit=True) as conn:
                conn.execute(
                    QUERIES["set_webhook_positie"],
                    {"dv_id": dv_id, "epoch": None, "xid": None, "event_id": None,
                     "uitgegeven_op": None},
                )  # fmt: skip
            received.value = 0
            with Cpu(admin) as cpu:
                while await worker.run_once("terugkoppelen"):
                    pass
            expect("webhook", received.value, events)
            expect("webhook position", admin.execute(WEBHOOK_POSITION, [dv_id]).fetchone()[0], True)
    return per_item(cpu, events, ("postgres", "here"), "webhook")


# ------------------------------------------------------------------------------------ feed


def read_feed(admin: psycopg.Connection, url: str, dv_id: int) -> dict:
    """The DV reads and acknowledges its whole feed over HTTP from `nmc api`."""
    events = scalar(admin, "SELECT count(*) FROM nmc.event WHERE dv_id = %s", dv_id)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, **write_secrets(Path(tmp))}
        env["NMC_API_DATABASE_URL"] = with_overrides(url, user="nmc_api")
        token = issue_dev_token(oin(0), lifetime_seconds=3600, environ=env)
        port = free_port()
        api = start_api(env, port, 1)
        try:

            async def read() -> FeedReader:
                async with httpx.AsyncClient(
                    base_url=f"http://127.0.0.1:{port}",
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=60,
                ) as client:
                    feed = FeedReader(client)  # pages of 1,000: the API's most
                    # Untimed: the API's first request (its pool's connections, first plans).
                    warm = await client.get(f"{BASE}/notificaties/wijzigingen?limiet=1")
                    warm.raise_for_status()
                    with cpu:
                        await feed.read()
                    return feed

            cpu = Cpu(admin, api.pid)
            feed = asyncio.run(read())
        finally:
            api.terminate()
            api.wait(timeout=30)
    expect("feed", feed.events, events)
    expect("feed acknowledgements", feed.acks, -(-events // feed.page_size))
    return per_item(cpu, events, ("postgres", "api"), "feed") | {"pages": feed.pages}


# ------------------------------------------------------------------------------------ chain


def life_steps(admin_url: str, count: int) -> dict:
    """Receipt processing, settlement, feed, webhook, erasure and deletion of `count`
    notifications on one fresh database (dropped afterwards)."""
    results = {}
    with webhook_receiver(oin(0)) as (hook_url, received):
        name, url, dv_id = create_database(admin_url, hook_url)
        try:
            with (
                psycopg.connect(url, autocommit=True) as admin,
                psycopg.connect(with_overrides(url, user="nmc_worker"), autocommit=True) as worker,
            ):
                sent = sent_attempts(url, dv_id, count)
                expect("send set-up", len(sent), count)
                store_receipts(url, sent)
                admin.execute("VACUUM ANALYZE")

                with Cpu(admin) as cpu:
                    handled = drain_sql(worker, QUERIES["process_receipts"], RECEIPT_BATCH)
                expect("receipt", handled, count)
                expect("receipt tasks", scalar(admin, OPEN_TASKS, "receipt"), 0)
                results["receipt processing"] = per_item(cpu, handled, PARTS, "receipt")

                bezorgd = scalar(admin, "SELECT count(*) FROM nmc.notificatie "
                                "WHERE status = 'bezorgd'")  # fmt: skip
                failed = -(-count // FAILED_SHARE)  # the receipts n with n % FAILED_SHARE == 0
                expect("settlement set-up", bezorgd, count - failed)
                advance(admin, SETTLEMENT_JUMP)
                admin.execute("VACUUM ANALYZE")  # each step at its best: no dead rows, stats
                with Cpu(admin) as cpu:
                    settled = drain_sql(worker, QUERIES["process_vaststellingen"], SETTLEMENT_BATCH)
                expect("settlement", settled, bezorgd)
                expect("settlement tasks", scalar(admin, OPEN_TASKS, "vaststellen"), 0)
                results["settlement"] = per_item(cpu, settled, PARTS, "settlement")

                results["feed read + acknowledge"] = read_feed(admin, url, dv_id)
                with tempfile.TemporaryDirectory() as tmp:
                    results["webhook delivery"] = aio.run(
                        deliver_webhook(url, dv_id, Path(tmp), received)
                    )

                terminal = scalar(admin, "SELECT count(*) FROM nmc.notificatie "
                                 "WHERE terminaal_op IS NOT NULL")  # fmt: skip
                expect("erasure set-up", terminal, count)
                advance(admin, ERASURE_JUMP)
                admin.execute("VACUUM ANALYZE")
                with Cpu(admin) as cpu:
                    erased = drain_sql(
                        worker, QUERIES["process_wissen"], WISSEN_BATCH, lambda rows: rows[0][0]
                    )
                expect("erasure", erased, terminal)
                expect("erasure keys", scalar(admin, "SELECT count(*) FROM nmc.notificatie "
                                             "WHERE sleutel_gewrapt IS NOT NULL"), 0)  # fmt: skip
                results["erasure"] = per_item(cpu, erased, PARTS, "erasure")

                advance(admin, DELETION_JUMP)
                admin.execute("VACUUM ANALYZE")
                with Cpu(admin) as cpu:
                    deleted = delete_expired(worker)
                expect("deletion", deleted, count)
                expect("deletion rows", scalar(admin, "SELECT count(*) FROM nmc.notificatie"), 0)
                results["deletion after retention"] = per_item(cpu, deleted, PARTS, "deletion")
        finally:
            drop_database(admin_url, name)
    return results


PARTS = ("postgres", "here")
OPEN_TASKS = "SELECT count(*) FROM nmc.taak WHERE soort = %s AND staat <> 'done'"


def delete_expired(conn: psycopg.Connection) -> int:
    """nmc.delete_expired until a batch deletes nothing; returns the notifications deleted."""
    total = 0
    while True:
        [done] = conn.execute("SELECT nmc.delete_expired(%s)", [RETENTIE_BATCH]).fetchone()
        if not done["notificaties"] and not done["taken"]:
            return total
        total += done["notificaties"]


# ------------------------------------------------------------------------------------ navraag


def reconciliation(admin_url: str, count: int) -> dict:
    """The worker's reconciliëren kind against the NotifyNL simulator, `count` attempts."""
    ring = parse_kek_ring(new_kek_ring("kek-bench"))
    api_key = f"bench-{uuid.uuid4()}-{uuid.uuid4()}"
    with (
        fresh_database(admin_url) as url,
        notifynl_simulator(api_key) as (sim_url, _),
        psycopg.connect(url, autocommit=True) as admin,
    ):
        [dv_id] = onboard(admin, 1)
        # Far above the load, sends and reconciliation alike: the pace must not limit it.
        set_budget(admin, 100_000_000, 0.5)
        intake_sealed(admin, dv_id, count, ring)

        async def run(tmp: Path) -> Cpu:
            config = replace(
                worker_config(url, sim_url, api_key, tmp, 100, 200), kinds=("verzenden", KIND)
            )
            async with Worker.started(
                config, ring=ring, pseudonym_key=secrets.token_bytes(32)
            ) as worker:
                while scalar(admin, OPEN_TASKS, "verzenden"):  # untimed: the sends
                    await worker.run_once("verzenden")
                advance(admin, RECONCILIATION_JUMP)
                admin.execute("VACUUM ANALYZE")
                with Cpu(admin) as cpu:
                    while await worker.run_once(KIND):
                        pass
            return cpu

        with tempfile.TemporaryDirectory() as tmp:
            cpu = aio.run(run(Path(tmp)))
        done = scalar(admin, "SELECT count(*) FROM nmc.taak WHERE soort = %s "
                     "AND staat = 'done'", KIND)  # fmt: skip
        expect("reconciliation", done, count)
        expect("reconciliation answers", scalar(admin, "SELECT count(*) FROM "
               "nmc.notificatie WHERE status = 'bezorgd'"), count)  # fmt: skip
    return per_item(cpu, done, PARTS, "reconciliation")


KIND = "reconciliëren"


def bench_steps(admin_url: str, count: int) -> dict:
    """Every step's figures; ms per item under ["…"]["ms_per_item"]."""
    started = time.perf_counter()
    results = life_steps(admin_url, count)
    results["reconciliation"] = reconciliation(admin_url, count)
    results["seconds"] = round(time.perf_counter() - started, 1)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="notifications per step (1000)")
    args = parser.parse_args()
    import shutil

    from bench_lifecycle import own_cluster_settings

    from nmc.database import connection_url
    from nmc_dev.embedded_db import EmbeddedCluster
    from nmc_dev.stack.postgres import EmbeddedPostgres

    settings, home = own_cluster_settings()
    cluster = EmbeddedCluster(settings)
    try:
        cluster.start()
        bench_intake.postmaster = EmbeddedPostgres(settings).pid
        result = bench_steps(connection_url(settings), args.count)
    finally:
        cluster.stop()
        shutil.rmtree(home, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
