"""Benchmarks of the send pipeline. Not collected by pytest; run by hand:

    .venv/bin/python benchmarks/bench_send.py                 # everything (about 4 minutes)
    .venv/bin/python benchmarks/bench_send.py engine claim    # some sections

Sections, each on a fresh database of the embedded cluster (or NMC_DATABASE_URL's server):

engine   the bare task engine: 200k no-op tasks claimed and finished through
         nmc.claim_taken + nmc.finish_taken (batch 1000, 4 connections, 10 DVs), next to
         its ceiling in the same run: the same rows claimed and finished by plain UPDATEs
         (the next batch of open tasks SKIP LOCKED, then done), none of the NMC's rules
         (no fair share per DV, no expired leases first, no claim epoch checks).
         Target: >= 30% of that ceiling.
claim    claim latency with 10k vs 1M open tasks (100 DVs), for nmc.claim_taken and for
         nmc.claim_verzenden (batch 20). Target: ratio <= 1.5.
drain    drain without a budget: `nmc worker` logic in this process (batch 100, 200 sends
         at a time, on uvloop as `nmc worker` runs) against the NotifyNL simulator in its own
         process (`nmc sim notifynl`), LDV to a fsync'd file. Prints CPU ms per send of the
         worker, the simulator and PostgreSQL, and commits per send (group commit). Its
         ceiling in the same run: the same sends through the worker's SQL calls alone
         (claim_verzenden and finish_verzenden_batch, as the worker's named queries, over
         4 connections, on notificaties made the same way), without HTTP, crypto or LDV.
         Target: >= 30% of that ceiling.
budget   the send pace: the worker drains a backlog for minutes through the NotifyNL
         simulator, which limits the service's rate and judges every request by both of
         NotifyNL's limiters (the fork's rolling window, upstream's token bucket). The
         most sends in any 60 s must be the send rate R within 1%, no limiter may refuse
         one (RateLimitError), and the largest burst must fit upstream's bucket.

Bulk data is made with SQL as admin: tasks without notificaties for `engine` and
`claim_taken`; for `claim_verzenden` the same inserts nmc.intake_notificaties does (event,
notificatie, task) in one statement each, without its checks.
"""

import argparse
import asyncio
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "pyshell"))
sys.path.insert(0, str(ROOT / "pyshell" / "dev"))

from nmc.admin.migrate import migrate  # noqa: E402
from nmc.config import Settings  # noqa: E402
from nmc.crypto.kek_ring import KekRing, new_kek_ring, parse_kek_ring  # noqa: E402
from nmc.crypto.sealing import seal  # noqa: E402
from nmc.database import connection_url, with_overrides  # noqa: E402
from nmc.queries import QUERIES  # noqa: E402
from nmc.runtime import aio  # noqa: E402
from nmc.worker.config import WorkerConfig  # noqa: E402
from nmc.worker.loop import Worker  # noqa: E402
from nmc_dev.embedded_db import EmbeddedCluster  # noqa: E402
from nmc_dev.sim.notifynl_limits import PaceWatch, bucket_size  # noqa: E402

TEMPLATE_ID = "a0a0a0a0-0000-4000-8000-00000000000a"
# The reconciliation share of a service's rate as deployed (NotifyNL's default rate less
# it for sends): also the headroom for the workers' spread between claim and call.
NAVRAAG_AANDEEL = 0.1
TRACE = "0123456789abcdef0123456789abcdef"


# ------------------------------------------------------------------------------------ set-up


@contextmanager
def fresh_database(admin_url: str):
    name = f"nmc_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = with_overrides(admin_url, database=name)
    try:
        migrate(url, ROOT)
        yield url
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def onboard(conn: psycopg.Connection, count: int) -> list[int]:
    ids = []
    for n in range(count):
        document = {
            "oin": f"{n + 1:020d}",
            "naam": f"Bench DV {n}",
            "quotumPerMinuut": 100_000_000,
            "quotumPerDag": 100_000_000,
            "berichttypen": [{"code": "aanslag", "notifynlTemplateId": TEMPLATE_ID}],
        }
        ids.append(
            conn.execute(
                "SELECT nmc.apply_dienstverlener(%s::jsonb)", [json.dumps(document)]
            ).fetchone()[0]
        )
    return ids


def set_budget(conn: psycopg.Connection, per_minute: int, navraag_aandeel: float = 0) -> None:
    conn.execute(
        "INSERT INTO nmc.notify_service (code, budget_per_minuut, navraag_aandeel) "
        "VALUES ('standaard', %s, %s) ON CONFLICT (code) DO UPDATE "
        "SET budget_per_minuut = excluded.budget_per_minuut, "
        "navraag_aandeel = excluded.navraag_aandeel",
        [per_minute, navraag_aandeel],
    )


def bulk_tasks(
    conn: psycopg.Connection, soort: str, count: int, dvs: list[int], vacuum: bool = True
) -> None:
    conn.execute(
        "INSERT INTO nmc.taak (soort, dv_id, due, aangemaakt_op) "
        "SELECT %s::nmc.taak_soort, (%s::integer[])[1 + g %% %s], nmc.now(), nmc.now() "
        "FROM generate_series(1, %s) AS g",
        [soort, dvs, len(dvs), count],
    )
    if vacuum:
        conn.execute("VACUUM ANALYZE nmc.taak")


BULK_SENDS = (
    """
    CREATE TEMP TABLE bulk ON COMMIT DROP AS
    SELECT gen_random_uuid() AS id, (%(dvs)s::integer[])[1 + g %% %(ndv)s] AS dv
    FROM generate_series(1, %(n)s) AS g
    """,
    """
    INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, reden, tijdstip)
    SELECT b.id, b.dv, 1, NULL, 'aangenomen', NULL, nmc.now() FROM bulk AS b
    """,
    """
    INSERT INTO nmc.notificatie (
        id, dv_id, berichttype, regie, status, reden, versie, geldig_tot, dvref_hmac,
        pepper_versie, payload_hash, trace_id, ontvanger_versleuteld, gegevens_versleuteld,
        sleutel_gewrapt, kek_id, aangenomen_op, bijgewerkt_op
    )
    SELECT b.id, b.dv, 'aanslag', 'decentraal', 'aangenomen', NULL, 1,
        nmc.now() + interval '3 days', sha256(b.id::text::bytea), 1, sha256('p'::bytea),
        %(trace)s, '\\x01', '\\x02', '\\x03', 'kek-1', nmc.now(), nmc.now()
    FROM bulk AS b
    """,
    """
    INSERT INTO nmc.taak (
        soort, dv_id, notificatie_id, berichttype, due, trace_id, aangemaakt_op
    )
    SELECT 'verzenden', b.dv, b.id, 'aanslag', nmc.now(), %(trace)s, nmc.now() FROM bulk AS b
    """,
)


def bulk_sends(conn: psycopg.Connection, count: int, dvs: list[int], vacuum: bool = True) -> None:
    """Send tasks with their notificaties as the intake writes them (dummy ciphertext).

    The rows are exactly what the guard triggers accept (version 1, aangenomen, its event in
    the same transaction), so the load skips them and the FK checks (replica role): a
    million rows then take seconds instead of minutes."""
    step = 250_000
    for start in range(0, count, step):
        params = {"dvs": dvs, "ndv": len(dvs), "n": min(step, count - start), "trace": TRACE}
        with conn.transaction():
            conn.execute("SET LOCAL session_replication_role = replica")
            for statement in BULK_SENDS:
                conn.execute(statement, params)
    if vacuum:
        conn.execute("VACUUM ANALYZE nmc.taak")
        conn.execute("VACUUM ANALYZE nmc.notificatie")


def intake_sealed(conn, dv_id: int, count: int, ring: KekRing) -> None:
    """`count` decentraal notificaties with real ciphertext, through nmc.intake_notificaties."""
    for start in range(0, count, 1000):
        size = min(1000, count - start)
        ids = [uuid.uuid4() for _ in range(size)]
        sealed = [
            seal(i, dv_id, f"bezorgd+{i.hex[:12]}@voorbeeld.nl", {"naam": "Bench"}, ring=ring)
            for i in ids
        ]
        conn.execute(
            "SELECT count(*) FROM nmc.intake_notificaties_v3(%s, 'decentraal', 1::smallint, "
            "0::smallint, %s, NULL, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, NULL)",
            [
                dv_id,
                ring.active_id,
                ids,
                ["aanslag"] * size,
                [secrets.token_bytes(32) for _ in ids],
                [secrets.token_bytes(32) for _ in ids],
                [s.recipient for s in sealed],
                [s.berichtgegevens for s in sealed],
                [s.wrapped_key for s in sealed],
                [None] * size,
                [TRACE] * size,
                [None] * size,
            ],
        )


# ------------------------------------------------------------------------------------ engine


def run_claimers(url: str, connections: int, step) -> tuple[int, float]:
    """`connections` threads, each on its own connection, call `step(conn, slot)` (which
    returns how many tasks it finished) until it finished nothing twice in a row; returns
    (tasks, seconds) from the moment all are connected."""
    done = [0] * connections
    failures: list[BaseException] = []
    barrier = threading.Barrier(connections + 1)

    def run(slot: int) -> None:
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                barrier.wait()
                empty = 0
                while empty < 2:
                    finished = step(conn, slot)
                    empty = 0 if finished else empty + 1
                    done[slot] += finished
        except BaseException as error:  # reported below; a silent death would skew the rate
            failures.append(error)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(connections)]
    for thread in threads:
        thread.start()
    with suppress(threading.BrokenBarrierError):
        barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError(f"a claimer failed: {failures[0]!r}")
    return sum(done), time.perf_counter() - started


ENGINE_CLAIM = "SELECT taak_id, claim_epoch FROM nmc.claim_taken('wissen', %s, %s)"
ENGINE_FINISH = "SELECT cardinality(nmc.finish_taken(%s::bigint[], %s::integer[]))"
# The engine's ceiling: the same row changes as plain statements, none of the NMC's rules.
PLAIN_CLAIM = """
UPDATE nmc.taak AS t
SET staat = 'claimed', lease_eigenaar = %s, lease_tot = now() + interval '2 minutes',
    claim_epoch = t.claim_epoch + 1
FROM (
    SELECT o.id FROM nmc.taak AS o
    WHERE o.soort = 'wissen' AND o.staat = 'open'
    ORDER BY o.soort, o.dv_id, o.due
    LIMIT %s
    FOR UPDATE SKIP LOCKED
) AS v
WHERE t.id = v.id
RETURNING t.id
"""
PLAIN_FINISH = """
UPDATE nmc.taak SET staat = 'done', afgerond_op = now(), lease_eigenaar = NULL, lease_tot = NULL
WHERE id = ANY(%s::bigint[])
"""


def bench_engine(
    admin_url: str, total=200_000, batch=1000, connections=4, dv_count=10, ceiling=True
) -> dict:
    """Tasks per second through nmc.claim_taken + nmc.finish_taken, and (`ceiling`) the same
    on a second fresh database with plain UPDATEs as admin."""

    def engine_step(conn, slot: int) -> int:
        rows = conn.execute(ENGINE_CLAIM, [f"bench-{slot}", batch]).fetchall()
        if not rows:
            return 0
        ids, epochs = zip(*rows, strict=True)
        return conn.execute(ENGINE_FINISH, [list(ids), list(epochs)]).fetchone()[0]

    def plain_step(conn, slot: int) -> int:
        ids = [row[0] for row in conn.execute(PLAIN_CLAIM, [f"bench-{slot}", batch]).fetchall()]
        if not ids:
            return 0
        return conn.execute(PLAIN_FINISH, [ids]).rowcount

    with fresh_database(admin_url) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            bulk_tasks(conn, "wissen", total, onboard(conn, dv_count))
        tasks, elapsed = run_claimers(
            with_overrides(url, user="nmc_worker"), connections, engine_step
        )
    result = {
        "tasks": tasks,
        "seconds": round(elapsed, 2),
        "tasks_per_s": round(tasks / elapsed),
        "batch": batch,
        "connections": connections,
    }
    if ceiling:
        with fresh_database(admin_url) as url:
            with psycopg.connect(url, autocommit=True) as conn:
                bulk_tasks(conn, "wissen", total, onboard(conn, dv_count))
            plain, plain_elapsed = run_claimers(url, connections, plain_step)
        result["ceiling"] = {
            "what": "plain UPDATEs of the same rows (claim SKIP LOCKED, then done)",
            "tasks": plain,
            "tasks_per_s": round(plain / plain_elapsed),
        }
    return result


# ------------------------------------------------------------------------------------ claim


def claim_latency(worker, query: str, refill, samples: int) -> dict:
    """Median and p95 of one claim (batch 20) at a steady backlog: after each claim the tasks
    are finished and as many new ones are added (neither is timed)."""
    times, claimed = [], []
    finish = "SELECT nmc.finish_taken(%s::bigint[], %s::integer[])"
    for _ in range(samples):
        started = time.perf_counter()
        rows = worker.execute(query).fetchall()
        times.append((time.perf_counter() - started) * 1000)
        claimed.append(len(rows))
        worker.execute(finish, [[r[0] for r in rows], [r[1] for r in rows]])
        refill(len(rows))
    times.sort()
    return {
        "median_ms": round(statistics.median(times), 2),
        "p95_ms": round(times[int(0.95 * len(times)) - 1], 2),
        "tasks_per_claim": sorted(set(claimed)),
    }


def bench_claim(admin_url: str, sizes=(10_000, 1_000_000), dv_count=10, samples=300) -> dict:
    results: dict = {}
    for kind in ("claim_taken", "claim_verzenden"):
        for size in sizes:
            with fresh_database(admin_url) as url, psycopg.connect(url, autocommit=True) as conn:
                dvs = onboard(conn, dv_count)
                if kind == "claim_taken":
                    bulk_tasks(conn, "wissen", size, dvs)
                    query = "SELECT taak_id, claim_epoch FROM nmc.claim_taken('wissen', 'b', 20)"

                    def refill(n, conn=conn, dvs=dvs):
                        bulk_tasks(conn, "wissen", n, dvs, vacuum=False)
                else:
                    set_budget(conn, 100_000_000)
                    bulk_sends(conn, size, dvs)
                    query = "SELECT taak_id, claim_epoch FROM nmc.claim_verzenden('b', 20)"

                    def refill(n, conn=conn, dvs=dvs):
                        bulk_sends(conn, n, dvs, vacuum=False)

                with psycopg.connect(with_overrides(url, user="nmc_worker"), autocommit=True) as w:
                    claim_latency(w, query, refill, 20)  # warm up
                    results[f"{kind} {size:>9,}"] = claim_latency(w, query, refill, samples)
        small, large = (results[f"{kind} {s:>9,}"]["median_ms"] for s in sizes)
        results[f"{kind} ratio"] = round(large / small, 2)
    return results


# ------------------------------------------------------------------------------------ drain


@contextmanager
def notifynl_simulator(api_key: str):
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nmc",
            "sim",
            "notifynl",
            "--api-key",
            api_key,
            "--port",
            "0",
            "--delivery-delay",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        line = process.stdout.readline()
        yield line.split(": ", 1)[1].strip(), process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process on this machine (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def backend_cpu(probe, database: str) -> float:
    """CPU of every PostgreSQL backend connected to `database` (same machine only), except
    the probe's own: it only watches (polls for the end), it is not the system measured."""
    pids = probe.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
        [database],
    ).fetchall()
    total = 0.0
    for (pid,) in pids:
        with suppress(OSError):
            total += cpu_seconds(pid)
    return total


def open_send_tasks(conn) -> int:
    return conn.execute(
        "SELECT count(*) FROM nmc.taak WHERE soort = 'verzenden' AND staat IN ('open', 'claimed')"
    ).fetchone()[0]


async def run_worker_until(config, ring, done, on_start=None, on_end=None) -> float:
    async with Worker.started(config, ring=ring, pseudonym_key=secrets.token_bytes(32)) as worker:
        if on_start:
            on_start()
        started = time.perf_counter()
        running = asyncio.create_task(worker.run())
        while not await asyncio.to_thread(done):
            await asyncio.sleep(0.2)
        worker.stop()
        await running
        elapsed = time.perf_counter() - started
        if on_end:
            on_end()
        return elapsed


def worker_config(url, sim_url, api_key, tmp: Path, batch, concurrency) -> WorkerConfig:
    return WorkerConfig(
        database_url=with_overrides(url, user="nmc_worker"),
        notifynl_url=sim_url,
        notifynl_api_key=api_key,
        profielservice_url=None,
        ldv_url=None,
        ldv_file=tmp / f"ldv-{uuid.uuid4().hex[:6]}.jsonl",
        kinds=("verzenden",),
        batch=batch,
        concurrency=concurrency,
        poll_interval=0.05,
        pool_size=8,
    )


def sql_send_ceiling(admin_url: str, count: int, batch: int, connections: int = 4) -> dict:
    """The send path's SQL alone, on a fresh database with `count` notificaties made as the
    drain's are: the worker's named queries claim_verzenden and finish_verzenden_batch (every
    send reported verzonden with a NotifyNL id, in one group commit per claim) as nmc_worker
    over `connections` connections. No HTTP, no crypto, no LDV: what the worker could reach
    if everything between claim and commit were free."""
    ring = parse_kek_ring(new_kek_ring("kek-bench"))

    def step(conn, slot: int) -> int:
        claimed = conn.execute(
            QUERIES["claim_verzenden"], {"eigenaar": f"ceiling-{slot}", "batch": batch}
        ).fetchall()
        if not claimed:
            return 0
        params = {
            "taak_ids": [row[0] for row in claimed],
            "claim_epochs": [row[1] for row in claimed],
            "uitkomsten": ["verzonden"] * len(claimed),
            "notifynl_ids": [uuid.uuid4() for _ in claimed],
            "contactgegeven_ids": [None] * len(claimed),
            "template_versies": [1] * len(claimed),
        }
        rows = conn.execute(QUERIES["finish_verzenden_batch"], params).fetchall()
        return sum(1 for _, _, fout in rows if fout is None)

    with fresh_database(admin_url) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            [dv_id] = onboard(conn, 1)
            set_budget(conn, 100_000_000)
            intake_sealed(conn, dv_id, count, ring)
            conn.execute("VACUUM ANALYZE")
        sent, elapsed = run_claimers(with_overrides(url, user="nmc_worker"), connections, step)
    return {
        "what": "the worker's SQL calls alone (claim_verzenden + finish_verzenden_batch)",
        "sent": sent,
        "sends_per_s": round(sent / elapsed),
        "connections": connections,
        "batch": batch,
    }


def bench_drain(admin_url: str, count=20_000, batch=100, concurrency=200, ceiling=True) -> dict:
    ring = parse_kek_ring(new_kek_ring("kek-bench"))
    api_key = f"bench-{uuid.uuid4()}-{uuid.uuid4()}"
    with fresh_database(admin_url) as url, notifynl_simulator(api_key) as (sim_url, sim_pid):
        with psycopg.connect(url, autocommit=True) as conn:
            [dv_id] = onboard(conn, 1)
            set_budget(conn, 100_000_000)
            intake_sealed(conn, dv_id, count, ring)
            conn.execute("VACUUM ANALYZE")
        database = url.rsplit("/", 1)[1]
        with psycopg.connect(url, autocommit=True) as probe:
            config = worker_config(
                url, sim_url, api_key, Path(tempfile.gettempdir()), batch, concurrency
            )
            cpu: dict[str, float] = {}

            def mark(when: str) -> None:
                cpu[f"worker {when}"] = time.process_time()
                cpu[f"sim {when}"] = cpu_seconds(sim_pid)
                cpu[f"db {when}"] = backend_cpu(probe, database)
                probe.execute("SELECT pg_stat_clear_snapshot()")
                cpu[f"commits {when}"] = probe.execute(
                    "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", [database]
                ).fetchone()[0]

            elapsed = aio.run(
                run_worker_until(
                    config,
                    ring,
                    lambda: open_send_tasks(probe) == 0,
                    on_start=lambda: mark("start"),
                    on_end=lambda: mark("end"),
                )
            )
            sent = probe.execute(
                "SELECT count(*) FROM nmc.notificatie WHERE status = 'verzonden'"
            ).fetchone()[0]
        config.ldv_file.unlink(missing_ok=True)
    per_send = {
        part: round(1000 * (cpu[f"{part} end"] - cpu[f"{part} start"]) / sent, 3)
        for part in ("worker", "sim", "db")
    }
    return {
        "sent": sent,
        "seconds": round(elapsed, 2),
        "sends_per_s": round(sent / elapsed),
        "cpu_ms_per_send": per_send,
        "cpu_bound_sends_per_s_on_2_cores": round(2000 / sum(per_send.values())),
        # Transactions per send (claims, lease extensions, outcomes; group commit shares
        # them), from pg_stat_database, which backends update about once a second.
        "commits_per_send": round((cpu["commits end"] - cpu["commits start"]) / sent, 3),
        "load_average": round(os.getloadavg()[0], 2),
        "batch": batch,
        "concurrency": concurrency,
        **({"ceiling": sql_send_ceiling(admin_url, count, batch)} if ceiling else {}),
    }


class ScaledClock:
    """The NMC clock and the simulator's running `speed` times as fast as real time, moved
    together every `step_s` of real time (a run of minutes in seconds: smoke runs)."""

    def __init__(self, url: str, sim_url: str, speed: float, step_s: float = 0.05) -> None:
        self.url, self.sim_url, self.speed, self.step_s = url, sim_url, speed, step_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn, httpx.Client() as http:
            while not self._stop.wait(self.step_s):
                jump = self.step_s * (self.speed - 1)
                conn.execute("SELECT nmc.advance_clock(make_interval(secs => %s))", [jump])
                http.post(f"{self.sim_url}/_sim/clock", json={"advance_s": jump})

    def __enter__(self) -> "ScaledClock":
        if self.speed > 1:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def bench_budget(
    admin_url: str, per_minute=3000, minutes=5, speed=1.0, overpace=1.0, mode="bucket"
) -> dict:
    """The send pace against NotifyNL's limits over a run of `minutes`.

    The service's rate is `per_minute` (NotifyNL's rate limit, the simulator's), of which
    sends get R = the rate less the reconciliation share (nmc.verzendtempo_kind); the worker
    drains a backlog larger than the run through the simulator, which enforces its limit
    in `mode` and judges every request by both limiters (nmc_dev.sim.notifynl_limits.Pace).
    Figures: the most sends in any 60 s and the largest burst as the simulator received
    them, the same from the NMC's grants (its attempts' claim times, exact on the NMC
    clock), and the simulator's counts per limiter mode.

    `speed` > 1 (smoke runs): the NMC clock and the simulator's run that many times as fast
    as real time (ScaledClock), so the run's minutes take seconds. `overpace` > 1 (the test
    that the verdict can fail): the NMC's budget is set that many times above the rate the
    simulator limits to and the pace is judged against. On a scaled clock the NMC's grant
    times are those of the claim's first statement, which a clock step can separate from the
    take's by one step; on the real clock they are exact."""
    ring = parse_kek_ring(new_kek_ring("kek-bench"))
    api_key = f"bench-{uuid.uuid4()}-{uuid.uuid4()}"
    with fresh_database(admin_url) as url, notifynl_simulator(api_key) as (sim_url, _):
        with psycopg.connect(url, autocommit=True) as conn:
            rate, burst = conn.execute(
                "SELECT per_minuut, burst FROM nmc.verzendtempo_kind(%s::integer, %s::numeric, "
                "NULL, 'verzenden')",
                [per_minute, NAVRAAG_AANDEEL],
            ).fetchone()
            backlog = round(rate * overpace * (minutes + 1)) + burst
            [dv_id] = onboard(conn, 1)
            set_budget(conn, round(per_minute * overpace), NAVRAAG_AANDEEL)
            intake_sealed(conn, dv_id, backlog, ring)
            conn.execute("VACUUM ANALYZE")
            begun = conn.execute("SELECT nmc.now()").fetchone()[0]
        httpx.post(
            f"{sim_url}/_sim/config", json={"rate_limit": per_minute, "rate_limit_mode": mode}
        ).raise_for_status()
        config = worker_config(url, sim_url, api_key, Path(tempfile.gettempdir()), 50, 50)
        run_s = minutes * 60 / speed
        end = [float("inf")]  # the run's minutes count from the worker's start

        def started() -> None:
            end[0] = time.monotonic() + run_s

        with ScaledClock(url, sim_url, speed):
            elapsed = aio.run(
                run_worker_until(config, ring, lambda: time.monotonic() > end[0], started)
            )
        limits = httpx.get(f"{sim_url}/_sim/limits").json()
        with psycopg.connect(url, autocommit=True) as probe:
            granted = [
                row[0].timestamp()
                for row in probe.execute(
                    "SELECT p.aangemaakt_op FROM nmc.poging AS p WHERE p.aangemaakt_op >= %s "
                    "ORDER BY p.aangemaakt_op",
                    [begun],
                )
            ]
            sent = probe.execute(
                "SELECT count(*) FROM nmc.notificatie WHERE status = 'verzonden'"
            ).fetchone()[0]
        config.ldv_file.unlink(missing_ok=True)
    nmc_side = PaceWatch(per_minute)
    for moment in granted:
        nmc_side.observe(moment)
    [sim_side] = limits["pace"].values() or [PaceWatch(per_minute).figures()]
    per_mode = {
        judged: {verdict: sum(counts.values()) for verdict, counts in verdicts.items()}
        for judged, verdicts in limits["per_mode"].items()
    }
    return {
        "rate_limit_per_minute": per_minute,
        "send_rate_per_minute": rate,
        "burst": burst,
        "bucket_size": bucket_size(per_minute),
        "overpace": overpace,
        "minutes": minutes,
        "clock": "real" if speed == 1 else f"{speed:g}x scaled",
        "enforced_mode": mode,
        "seconds": round(elapsed, 1),
        "simulator": sim_side,  # requests, most_in_60s, largest_burst, bucket_size
        "nmc_grants": nmc_side.figures(),
        "per_mode": per_mode,  # mode -> admitted / refused
        "accepted": sum(limits["admitted"].values()),
        "sent": sent,
        "sends_per_minute": round(sim_side["requests"] / minutes, 1),
    }


# ------------------------------------------------------------------------------------ main

SECTIONS = {
    "engine": bench_engine,
    "claim": bench_claim,
    "drain": bench_drain,
    "budget": bench_budget,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sections", nargs="*", choices=[*SECTIONS, []], default=list(SECTIONS))
    args = parser.parse_args()
    settings = Settings.from_env()
    if not settings.database_url:
        EmbeddedCluster(settings).start()
    admin_url = connection_url(settings)
    print(f"CPUs: {os.cpu_count()}  PostgreSQL: {admin_url.rsplit('@', 1)[-1]}", flush=True)
    for name in args.sections or SECTIONS:
        started = time.perf_counter()
        result = SECTIONS[name](admin_url)
        print(f"\n== {name} ({time.perf_counter() - started:.0f} s)", flush=True)
        print(json.dumps(result, indent=2, default=str), flush=True)


if __name__ == "__main__":
    main()
