"""The event log the feed and the metrics benchmarks read (benchmarks/bench_feed.py,
benchmarks/bench_metrics.py): ten DVs and their events, filled in bulk, one database per size;
and what both measure and print with (a backend's CPU time, percentiles, the run's
conditions, the command line of sizes).

The bulk data is made with SQL as admin (`INSERT … SELECT generate_series`) into the real
nmc.event: partitioned, logged, with its primary key, both indexes and its append-only
triggers, as production has it. What the load does differently from production, and why:

* The xid column is given explicitly instead of defaulting to the writer's transaction id:
  ten million events need about a million past transactions, below the visibility watermark,
  to be read at all. Events are spread over consecutive xids, `events_per_xid` at a time
  (10 on a cluster with enough xid history; as few as the cluster's age allows otherwise),
  as batch intakes and receipt batches write them, all inside the first xid range partition.
* Rows go in chunks of 250,000, each its own transaction, so the load never holds the
  cluster's watermark (and other users' feeds) for more than a few seconds; the load session
  runs with synchronous_commit off (its own commits only; nothing about the table changes).
* Afterwards `VACUUM (ANALYZE)` of nmc.event, what autovacuum does to a table that grew
  gradually: statistics, hint bits and the visibility map.

Each notification has five events (aangenomen .. definitief-bezorgd) with a random-looking
uuid, so the notificatie index is filled in random order as in production.
"""

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TypeVar

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "pyshell"))
sys.path.insert(0, str(ROOT / "pyshell" / "dev"))

from bench_send import fresh_database  # noqa: E402

from nmc.config import Settings  # noqa: E402
from nmc.database import connection_url  # noqa: E402
from nmc_dev.embedded_db import EmbeddedCluster  # noqa: E402

PAGE = 1000  # the DVs' feedMaxPagina
DV_COUNT = 10
CHUNK = 250_000
PREFERRED_EVENTS_PER_XID = 10
XID_BASE = 1000
TEMPLATE_ID = "a0a0a0a0-0000-4000-8000-00000000000f"
Target = TypeVar("Target")

FILL = """
INSERT INTO nmc.event (notificatie_id, dv_id, sequence, van, naar, reden, tijdstip, xid)
SELECT
    md5(%(seed)s::text || (g.k / 5)::text)::uuid,
    (%(dvs)s::integer [])[1 + (g.k / 5) %% %(dv_count)s],
    1 + g.k %% 5,
    (ARRAY[NULL, 'aangenomen', 'in-verzending', 'verzonden', 'bezorgd']
        ::nmc.notificatie_status [])[1 + g.k %% 5],
    (ARRAY['aangenomen', 'in-verzending', 'verzonden', 'bezorgd', 'definitief-bezorgd']
        ::nmc.notificatie_status [])[1 + g.k %% 5],
    NULL,
    %(begin)s::timestamptz + g.k * INTERVAL '10 milliseconds',
    (%(xid_base)s + g.k / %(per_xid)s)::text::xid8
FROM generate_series(%(van)s::bigint, %(tot)s::bigint - 1) AS g (k)
"""


def onboard(conn: psycopg.Connection) -> list[int]:
    """Ten DVs; the first is the one that reads. No call-rate limit gets in the way."""
    ids = []
    for n in range(DV_COUNT):
        document = {
            "oin": f"{n + 1:020d}",
            "naam": f"Bench DV {n + 1}",
            "feedMaxPagina": PAGE,
            "feedAanroepenPerMinuut": 100_000_000,
            "berichttypen": [{"code": "aanslag", "notifynlTemplateId": TEMPLATE_ID}],
        }
        row = conn.execute("SELECT nmc.apply_dienstverlener(%s::jsonb)", [json.dumps(document)])
        ids.append(row.fetchone()[0])
    return ids


def events_per_xid(admin_url: str, largest: int) -> int:
    """As few events per xid as the cluster's xid history allows (at least the preferred)."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        [xmin] = conn.execute(
            "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
        ).fetchone()
    room = xmin - XID_BASE - 1
    if room < 1:
        raise RuntimeError("the cluster is too young to hold past xids for the events")
    return max(PREFERRED_EVENTS_PER_XID, math.ceil(largest / room))


def fill(url: str, dvs: list[int], size: int, per_xid: int) -> float:
    """`size` events in chunks (each its own transaction); then VACUUM (ANALYZE). Seconds."""
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET synchronous_commit = off")
        [begin] = conn.execute("SELECT nmc.now() - INTERVAL '400 days'").fetchone()
        for van in range(0, size, CHUNK):
            conn.execute(
                FILL,
                {
                    "seed": "nmc-bench-feed/",
                    "dvs": dvs,
                    "dv_count": len(dvs),
                    "begin": begin,
                    "xid_base": XID_BASE,
                    "per_xid": per_xid,
                    "van": van,
                    "tot": min(van + CHUNK, size),
                },
            )
        conn.execute("VACUUM (ANALYZE) nmc.event")
    return time.perf_counter() - started


def filled_targets(
    stack: ExitStack,
    admin_url: str,
    sizes: Sequence[int],
    per_xid: int,
    target: Callable[[str, list[int], int], Target],
) -> tuple[list[Target], dict[int, float]]:
    """A fresh database per size, its DVs onboarded and its log filled, and what `target`
    (url, DV ids, size) makes of each; with the seconds each load took."""
    targets: list[Target] = []
    load_seconds: dict[int, float] = {}
    for size in sizes:
        url = stack.enter_context(fresh_database(admin_url))
        with psycopg.connect(url, autocommit=True) as conn:
            dvs = onboard(conn)
        load_seconds[size] = round(fill(url, dvs, size, per_xid), 1)
        targets.append(target(url, dvs, size))
    return targets, load_seconds


def backend_cpu(connection: psycopg.Connection) -> float:
    """CPU seconds of a connection's backend so far (0 when the server is not local): on a
    busy machine the wall time includes waiting for a core, the CPU time does not."""
    try:
        stat = Path(f"/proc/{connection.info.backend_pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def conditions(
    per_xid: int, load_seconds: dict[int, float], loadavg_before: tuple[float, float, float]
) -> dict[str, Any]:
    """How the run went: the events per xid, the load times, the load average around it."""
    return {
        "events_per_xid": per_xid,
        "load_seconds": load_seconds,
        "loadavg_before": [round(x, 2) for x in loadavg_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
    }


def add_sizes_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sizes",
        default="100000,10000000",
        help="events in the log, comma-separated (default 100000,10000000)",
    )


def sizes_and_database(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> tuple[tuple[int, ...], str]:
    """The sizes asked for (at least two, and a sample) and the admin URL of the server: the
    embedded cluster, started if need be, unless NMC_DATABASE_URL names one."""
    sizes = tuple(int(part.replace("_", "")) for part in args.sizes.split(",") if part.strip())
    if len(sizes) < 2 or args.samples < 1:
        parser.error("give at least two sizes and one sample")
    settings = Settings.from_env()
    if not settings.database_url:
        EmbeddedCluster(settings).start()
    admin_url = connection_url(settings)
    print(f"CPUs: {os.cpu_count()}  PostgreSQL: {admin_url.rsplit('@', 1)[-1]}", flush=True)
    return sizes, admin_url
