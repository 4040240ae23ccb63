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

The log is filled in bulk as benchmarks/eventlog.py describes.
"""

import argparse
import json
import os
import random
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import psycopg
from psycopg.types.string import TextLoader

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "pyshell"))

import eventlog  # noqa: E402

from nmc.database import with_overrides  # noqa: E402
from nmc.queries import QUERIES  # noqa: E402

WARM_UP = 20

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
            self.page = min(eventlog.PAGE, dv_events // 2)
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
        cpu = eventlog.backend_cpu(self.api)
        started = time.perf_counter()
        [text] = self.api.execute(QUERIES["page_events"], params).fetchone()
        elapsed = time.perf_counter() - started
        cpu = eventlog.backend_cpu(self.api) - cpu
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


def bench_feed(admin_url: str, sizes=(100_000, 10_000_000), samples=200) -> dict:
    sizes = tuple(sorted(int(size) for size in sizes))
    per_xid = eventlog.events_per_xid(admin_url, sizes[-1])
    loadavg_before = os.getloadavg()
    with ExitStack() as stack:
        targets, load_seconds = eventlog.filled_targets(
            stack,
            admin_url,
            sizes,
            per_xid,
            lambda url, dvs, size: Target(url, dvs[0], size, samples, stack),
        )
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
    p99 = {t.size: round(eventlog.percentile(t.times, 0.99), 2) for t in targets}
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
        "dv_count": eventlog.DV_COUNT,
        **eventlog.conditions(per_xid, load_seconds, loadavg_before),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    eventlog.add_sizes_argument(parser)
    parser.add_argument("--samples", type=int, default=200, help="pages per size (200)")
    args = parser.parse_args()
    sizes, admin_url = eventlog.sizes_and_database(parser, args)
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
