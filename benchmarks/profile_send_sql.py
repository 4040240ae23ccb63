"""Where a send's database time goes: the worker's SQL calls of a drain, without HTTP.

    .venv/bin/python benchmarks/profile_send_sql.py [--count 4000] [--batch 100] [--mode …]

Creates a fresh database, intakes `count` decentraal notificaties through
nmc.intake_notificaties, then, as nmc_worker on one autocommit connection, runs what the
worker does for a send: the claim, the lease extension before the call and the commit of the
outcome (`verzonden` with a NotifyNL id). With `track_functions = 'all'` it prints
pg_stat_user_functions per send (calls, total and self milliseconds) and the wall time of
each kind of call, so a change to a function shows in figures. Not a test; nothing is
asserted.

Modes: `single` is one extend_lease and one finish_verzenden per send (the worker before
group commit); `batch` is one extend_leases and one finish_verzenden_batch per claimed
batch (the calls a group-committing worker makes under load), or per `--finish-batch`
outcomes.
"""

import argparse
import os
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "pyshell"))
sys.path.insert(0, str(ROOT / "pyshell" / "dev"))

from bench_send import (  # noqa: E402
    cpu_seconds,
    fresh_database,
    intake_sealed,
    onboard,
    set_budget,
)

from nmc.config import Settings  # noqa: E402
from nmc.crypto.kek_ring import new_kek_ring, parse_kek_ring  # noqa: E402
from nmc.database import connection_url, with_overrides  # noqa: E402
from nmc_dev.embedded_db import EmbeddedCluster  # noqa: E402

CLAIM = "SELECT c.taak_id, c.claim_epoch FROM nmc.claim_verzenden(%s, %s) AS c"
EXTEND = "SELECT nmc.extend_lease(%s, %s)"
FINISH = "SELECT nmc.finish_verzenden(%s, %s, 'verzonden', %s)"
EXTEND_BATCH = "SELECT count(*) FROM nmc.extend_leases(%s::bigint[], %s::integer[])"
FINISH_BATCH = (
    "SELECT count(*) FROM nmc.finish_verzenden_batch("
    "%s::bigint[], %s::integer[], %s::text[], %s::uuid[], %s::uuid[])"
)


def run(
    worker: psycopg.Connection, mode: str, batch: int, finish_batch: int
) -> tuple[int, dict[str, float]]:
    wall: dict[str, float] = defaultdict(float)
    sent = 0

    def timed(name: str, query: str, params) -> list:
        started = time.perf_counter()
        rows = worker.execute(query, params).fetchall()
        wall[name] += time.perf_counter() - started
        return rows

    while True:
        claimed = timed("claim_verzenden", CLAIM, ["profiel", batch])
        if not claimed:
            return sent, wall
        ids = [r[0] for r in claimed]
        epochs = [r[1] for r in claimed]
        if mode == "single":
            for taak_id, epoch in claimed:
                timed("extend_lease", EXTEND, [taak_id, epoch])
                timed("finish_verzenden", FINISH, [taak_id, epoch, uuid.uuid4()])
        else:
            timed("extend_leases", EXTEND_BATCH, [ids, epochs])
            for start in range(0, len(ids), finish_batch):
                part_ids, part_epochs = ids[start:][:finish_batch], epochs[start:][:finish_batch]
                timed(
                    "finish_verzenden_batch",
                    FINISH_BATCH,
                    [
                        part_ids,
                        part_epochs,
                        ["verzonden"] * len(part_ids),
                        [uuid.uuid4() for _ in part_ids],
                        [None] * len(part_ids),
                    ],
                )
        sent += len(claimed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=4000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--mode", choices=["single", "batch"], default="single")
    parser.add_argument(
        "--finish-batch", type=int, default=0, help="outcomes per finish call (batch mode)"
    )
    args = parser.parse_args()
    settings = Settings.from_env()
    if not settings.database_url:
        EmbeddedCluster(settings).start()
    admin_url = connection_url(settings)
    ring = parse_kek_ring(new_kek_ring("kek-profiel"))
    with fresh_database(admin_url) as url:
        database = url.rsplit("/", 1)[1].split("?", 1)[0]
        with psycopg.connect(url, autocommit=True) as conn:
            [dv_id] = onboard(conn, 1)
            set_budget(conn, 100_000_000)
            intake_sealed(conn, dv_id, args.count, ring)
            conn.execute("VACUUM ANALYZE")
            conn.execute(f"ALTER DATABASE \"{database}\" SET track_functions = 'all'")
            conn.execute("SELECT pg_stat_reset()")
        with psycopg.connect(with_overrides(url, user="nmc_worker"), autocommit=True) as worker:
            backend = worker.execute("SELECT pg_backend_pid()").fetchone()[0]
            cpu_before = cpu_seconds(backend)
            started = time.perf_counter()
            sent, wall = run(worker, args.mode, args.batch, args.finish_batch or args.batch)
            elapsed = time.perf_counter() - started
            cpu = cpu_seconds(backend) - cpu_before
        with psycopg.connect(url, autocommit=True) as conn:
            time.sleep(1.5)  # the worker backend flushes its statistics as it exits
            conn.execute("SELECT pg_stat_clear_snapshot()")
            functions = conn.execute(
                "SELECT schemaname || '.' || funcname, calls, total_time, self_time "
                "FROM pg_stat_user_functions ORDER BY total_time DESC"
            ).fetchall()
            commits = conn.execute(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
            ).fetchone()[0]
    print(
        f"CPUs: {os.cpu_count()}  load: {os.getloadavg()[0]:.2f}  mode: {args.mode}  "
        f"batch: {args.batch}  sent: {sent}  seconds: {elapsed:.2f}  "
        f"sends/s: {sent / elapsed:.0f}  commits: {commits}\n"
        f"backend CPU ms per send: {1000 * cpu / sent:.3f}"
    )
    print("\nwall ms per send, by call (client side, includes the commit):")
    for name, seconds in sorted(wall.items(), key=lambda kv: -kv[1]):
        print(f"  {name:<28} {1000 * seconds / sent:8.3f}")
    print(f"  {'total':<28} {1000 * sum(wall.values()) / sent:8.3f}")
    print("\npg_stat_user_functions per send: calls, total ms, self ms")
    for name, calls, total, own in functions:
        print(f"  {name:<40} {calls / sent:7.2f} {total / sent:8.3f} {own / sent:8.3f}")


if __name__ == "__main__":
    main()
