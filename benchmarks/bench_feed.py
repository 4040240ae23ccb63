"""Benchmark of the feed: a page of 1,000 events with 100k vs 10M events in the log.
Not collected by pytest; run by hand:

    .venv/bin/python benchmarks/bench_feed.py                        # 100k vs 10M (~10 min)
    .venv/bin/python benchmarks/bench_feed.py --sizes 10000,100000   # a quick run

Targets: p50 at the largest size <= 3x the p50 of its ceiling, and p50(largest) /
p50(smallest) <= 1.5. The ceiling, measured in the same run on the same databases from the
same positions (alternating with the pages): the same page read with plain SQL as admin, no
NMC logic (the same events by the same index, built into the same JSON, but no cursor
checks, no watermark, no call-rate counter and no commit).

What is measured: `nmc.page_events` (the one SQL call of GET /notificaties/wijzigingen, the
named query of nmc.queries) as role nmc_api, for one DV among ten that share the log (each
has a tenth of the events, interleaved by notification), from a cursor at a random event of
that DV's history with a full page after it. The time is the client's: round trip, the call
(cursor checks, the call-rate counter write and its commit, the page under the watermark) and
the page crossing the wire as text (~300 kB; not decoded in Python, so the figure is the
database's). The CPU time of the backend per page is reported too (read from /proc when the
server runs on this machine): on a shared machine it shows what waiting for a core hides.
Every page is checked to hold the full page size afterwards, outside the timing.
Each size has its own database; after a warm-up the sizes are measured in alternation, so
the load of a shared machine falls on both alike.

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
import random
import statistics
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import psycopg
from psycopg.types.string import TextLoader

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "pyshell"))

from bench_send import fresh_database  # noqa: E402

from nmc.config import Settings  # noqa: E402
from nmc.database import connection_url, with_overrides  # noqa: E402
from nmc.queries import QUERIES  # noqa: E402
from nmc_dev.embedded_db import EmbeddedCluster  # noqa: E402

PAGE = 1000
DV_COUNT = 10
EVENTS_PER_NOTIFICATIE = 5
CHUNK = 250_000
WARM_UP = 20
PREFERRED_EVENTS_PER_XID = 10
XID_BASE = 1000
TEMPLATE_ID = "a0a0a0a0-0000-4000-8000-00000000000f"

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

POSITIONS = """
SELECT s.xid::text, s.event_id
FROM (
    SELECT e.xid, e.event_id, row_number() OVER (ORDER BY e.xid, e.event_id) AS r
    FROM nmc.event AS e WHERE e.dv_id = %(dv_id)s
) AS s
WHERE s.r <= %(last)s
ORDER BY random()
LIMIT %(samples)s
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


# The ceiling of a page: the same events by the same index, as the same JSON, plain SQL.
PLAIN_PAGE = """
SELECT coalesce(pg_catalog.json_agg(p.event ORDER BY p.xid, p.event_id), '[]'::json)
FROM (
    SELECT e.xid, e.event_id,
        pg_catalog.json_build_object(
            'eventId', e.event_id, 'notificatieId', e.notificatie_id, 'sequence', e.sequence,
            'van', e.van, 'naar', e.naar, 'reden', e.reden, 'tijdstip', e.tijdstip,
            'xid', e.xid::text
        ) AS event
    FROM nmc.event AS e
    WHERE e.dv_id = %(dv_id)s AND (e.xid, e.event_id) > (%(xid)s::xid8, %(event_id)s::bigint)
    ORDER BY e.xid, e.event_id
    LIMIT %(limiet)s
) AS p
"""


class Target:
    """One size: its database, the reading DV, cursor positions, an nmc_api connection."""

    def __init__(self, url: str, dv_id: int, size: int, samples: int, stack: ExitStack):
        self.size = size
        self.dv_id = dv_id
        self.times: list[float] = []
        self.plain_times: list[float] = []
        self.cpu_seconds = 0.0
        with psycopg.connect(url, autocommit=True) as admin:
            [dv_events] = admin.execute(
                "SELECT count(*) FROM nmc.event WHERE dv_id = %s", [dv_id]
            ).fetchone()
            self.page = min(PAGE, dv_events // 2)
            rows = admin.execute(
                POSITIONS,
                {"dv_id": dv_id, "last": dv_events - self.page, "samples": samples + WARM_UP},
            ).fetchall()
            [(self.epoch, self.now)] = admin.execute(
                "SELECT c.epoch, nmc.now() FROM nmc.cluster_epoch AS c"
            ).fetchall()
        self.positions = [(int(xid), event_id) for xid, event_id in rows]
        random.shuffle(self.positions)
        self.api = stack.enter_context(
            psycopg.connect(with_overrides(url, user="nmc_api"), autocommit=True)
        )
        # The page crosses the wire, but is not decoded: the figure is the database's.
        self.api.adapters.register_loader("json", TextLoader)
        self.plain = stack.enter_context(psycopg.connect(url, autocommit=True))
        self.plain.adapters.register_loader("json", TextLoader)
        self.backend = Path(f"/proc/{self.api.info.backend_pid}/stat")

    def call(self, position: tuple[int, int], record: bool) -> None:
        xid, event_id = position
        params = {
            "dv_id": self.dv_id,
            "epoch": self.epoch,
            "xid": str(xid),
            "event_id": event_id,
            "uitgegeven_op": self.now,
            "limiet": self.page,
        }
        cpu = self.backend_cpu()
        started = time.perf_counter()
        [text] = self.api.execute(QUERIES["page_events"], params).fetchone()
        elapsed = time.perf_counter() - started
        cpu = self.backend_cpu() - cpu
        events = json.loads(text)["events"]
        if len(events) != self.page or int(events[0]["xid"]) < xid:
            raise AssertionError(f"a page of {len(events)} events, expected {self.page}")
        if record:
            self.times.append(elapsed * 1000)
            self.cpu_seconds += cpu

    def call_plain(self, position: tuple[int, int], record: bool) -> None:
        """The same page as plain SQL (the ceiling), timed the same way."""
        xid, event_id = position
        params = {"dv_id": self.dv_id, "xid": str(xid), "event_id": event_id, "limiet": self.page}
        started = time.perf_counter()
        [text] = self.plain.execute(PLAIN_PAGE, params).fetchone()
        elapsed = time.perf_counter() - started
        if len(json.loads(text)) != self.page:
            raise AssertionError("the plain read did not give a full page")
        if record:
            self.plain_times.append(elapsed * 1000)

    def backend_cpu(self) -> float:
        """CPU seconds of this connection's backend so far (0 when the server is not local):
        on a busy machine the wall time includes waiting for a core, the CPU time does not."""
        try:
            fields = self.backend.read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def bench_feed(admin_url: str, sizes=(100_000, 10_000_000), samples=200) -> dict:
    sizes = tuple(sorted(int(size) for size in sizes))
    per_xid = events_per_xid(admin_url, sizes[-1])
    load_seconds: dict[int, float] = {}
    loadavg_before = os.getloadavg()
    with ExitStack() as stack:
        targets = []
        for size in sizes:
            url = stack.enter_context(fresh_database(admin_url))
            with psycopg.connect(url, autocommit=True) as conn:
                dvs = onboard(conn)
            load_seconds[size] = round(fill(url, dvs, size, per_xid), 1)
            targets.append(Target(url, dvs[0], size, samples, stack))
        for target in targets:
            for position in target.positions[:WARM_UP]:
                target.call(position, record=False)
                target.call_plain(position, record=False)
        for index in range(WARM_UP, WARM_UP + samples):
            for target in targets:
                position = target.positions[index % len(target.positions)]
                target.call(position, record=True)
                target.call_plain(position, record=True)
    p50 = {t.size: round(statistics.median(t.times), 2) for t in targets}
    p99 = {t.size: round(percentile(t.times, 0.99), 2) for t in targets}
    plain = {t.size: round(statistics.median(t.plain_times), 2) for t in targets}
    return {
        "p50_ms": p50,
        "p99_ms": p99,
        "ratio": round(p50[sizes[-1]] / p50[sizes[0]], 2),
        "ceiling": {
            "what": "the same page read with plain SQL (no cursor, watermark or counter)",
            "p50_ms": plain,
        },
        "page": {t.size: t.page for t in targets},
        "backend_cpu_ms_per_page": {
            t.size: round(t.cpu_seconds * 1000 / len(t.times), 2) for t in targets
        },
        "samples": samples,
        "dv_count": DV_COUNT,
        "events_per_xid": per_xid,
        "load_seconds": load_seconds,
        "loadavg_before": [round(x, 2) for x in loadavg_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        default="100000,10000000",
        help="events in the log, comma-separated (default 100000,10000000)",
    )
    parser.add_argument("--samples", type=int, default=200, help="pages per size (200)")
    args = parser.parse_args()
    sizes = tuple(int(part.replace("_", "")) for part in args.sizes.split(",") if part.strip())
    if len(sizes) < 2 or args.samples < 1:
        parser.error("give at least two sizes and one sample")
    settings = Settings.from_env()
    if not settings.database_url:
        EmbeddedCluster(settings).start()
    admin_url = connection_url(settings)
    print(f"CPUs: {os.cpu_count()}  PostgreSQL: {admin_url.rsplit('@', 1)[-1]}", flush=True)
    started = time.perf_counter()
    result = bench_feed(admin_url, sizes, args.samples)
    print(f"\n== feed ({time.perf_counter() - started:.0f} s)", flush=True)
    for size in sorted(result["p50_ms"]):
        print(
            f"{size:>12,} events: page of {result['page'][size]}: "
            f"p50 {result['p50_ms'][size]:.2f} ms, p99 {result['p99_ms'][size]:.2f} ms, "
            f"backend CPU {result['backend_cpu_ms_per_page'][size]:.2f} ms/page "
            f"(load {result['load_seconds'][size]:.0f} s)"
        )
    plain = result["ceiling"]["p50_ms"]
    largest = max(plain)
    print(
        f"ratio p50 largest/smallest: {result['ratio']:.2f} (target <= 1.5); at the largest "
        f"size the page takes {result['p50_ms'][largest] / plain[largest]:.2f}x its plain read "
        f"({plain[largest]:.2f} ms; target <= 3x)"
    )
    print(f"load average before {result['loadavg_before']}, after {result['loadavg_after']}")
    print(json.dumps(result, indent=2), flush=True)


if __name__ == "__main__":
    main()
