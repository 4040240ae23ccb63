"""What the event log's readers cost per call as the term's partitions add up, with and
without a partition's statistics changing between the calls (issue 26: on the year the feed's
page, the webhook's look and the transitions' guard cost two to three times as much in the
last month as in the first, while running them did not).

    .venv/bin/python benchmarks/bench_partitions.py                  # 2 and 40 partitions
    .venv/bin/python benchmarks/bench_partitions.py --before HEAD~1  # and another commit's SQL

One database per partition count, migrated, ten DVs onboarded, the log split into `count`
ranges of RANGE_WIDTH xids below the watermark plus the current one, each range holding
EVENTS_PER_RANGE events (benchmarks/eventlog.py's bulk load, explicit xids). One session
calls each reader CALLS times at a steady pace (PAUSE_S apart, as the API's pooled
connections take a DV's requests); beside it, in the `changing` runs, a second session
changes the current range's storage options every CHANGE_EVERY_S, which makes PostgreSQL
drop every plan that holds that range, as autovacuum's VACUUM and ANALYZE of the range being
written do many times a day. The figure is the calling backend's CPU per call (/proc), so a
shared machine's waits do not count. With `--before REV` each database is measured with that
commit's functions first (`git archive`, migrated onto it), then with this tree's.

The calls: the feed's empty page at the current range (a DV that polls), a full page of
1000 events from the oldest range, the webhook's look for waiting events, the delivery
proof's events of one notification from its intake's range, and a status change (whose
guard reads the events its transaction wrote).
"""

import argparse
import itertools
import json
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import psycopg
from bench_lifecycle import tree_of
from bench_send import bulk_sends, fresh_database
from eventlog import FILL, ROOT, XID_BASE, backend_cpu, onboard

from nmc.admin.migrate import migrate
from nmc.config import Settings
from nmc.database import connection_url
from nmc_dev.embedded_db import EmbeddedCluster

RANGE_WIDTH = 100  # xids
EVENTS_PER_RANGE = 2000
CALLS = 150
WARM_UP = 5
PAUSE_S = 0.02
CHANGE_EVERY_S = 0.1

READERS = {
    "feed, empty page": "SELECT nmc.read_events(%(dv)s, %(current)s::xid8, 0, 1000, 1, now())",
    "feed, full page": "SELECT nmc.read_events(%(dv)s, %(oldest)s::xid8, 0, 1000, 1, now())",
    "webhook look": "SELECT nmc.webhook_events_wachten(%(dv)s, %(current)s::xid8, 0)",
    "proof's events": (
        "SELECT nmc.bewijs_events_json_v2(%(notificatie)s::uuid, 0, NULL, %(newest)s::xid8)"
    ),
    # A status change of its own notification each call: its guard reads the events of its
    # transaction.
    "a status change": (
        "SELECT nmc.transition_notificatie(%(aangenomen)s::uuid, 'geannuleerd', 'geannuleerd')"
    ),
}


def split_log(url: str, count: int) -> dict:
    """The log as `count` closed ranges below the watermark and the current one above them,
    filled; returns the readers' parameters."""
    with psycopg.connect(url, autocommit=True) as conn:
        dvs = onboard(conn)
        [(xmin,)] = conn.execute(
            "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
        ).fetchall()
        top = XID_BASE + count * RANGE_WIDTH
        if xmin <= top:
            raise SystemExit(f"the cluster is too young: {top} xids of history needed")
        conn.execute("DROP TABLE nmc.event_x000000000000")
        conn.execute("DELETE FROM nmc.event_partitie")
        bounds = [0, *(XID_BASE + k * RANGE_WIDTH for k in range(count + 1)), 1 << 24]
        for low, high in itertools.pairwise(bounds):
            [(current,)] = conn.execute(
                "SELECT nmc.create_event_partitie(%s::text::xid8, %s::text::xid8)",
                [str(low), str(high)],
            ).fetchall()
            # owned as maintenance makes it; the last one made is the current range
            conn.execute(f"ALTER TABLE nmc.{current} OWNER TO nmc_owner")
        conn.execute("SET synchronous_commit = off")
        [(begin,)] = conn.execute("SELECT nmc.now() - INTERVAL '30 days'").fetchall()
        per_xid = EVENTS_PER_RANGE // RANGE_WIDTH
        for k in range(count):
            conn.execute(
                FILL,
                {
                    "seed": f"nmc-bench-partitions/{k}/",
                    "dvs": dvs,
                    "dv_count": len(dvs),
                    "begin": begin,
                    "xid_base": XID_BASE + k * RANGE_WIDTH,
                    "per_xid": per_xid,
                    "van": 0,
                    "tot": EVENTS_PER_RANGE,
                },
            )
        conn.execute("VACUUM (ANALYZE) nmc.event")
        [(notificatie,)] = conn.execute(
            "SELECT e.notificatie_id FROM nmc.event AS e WHERE e.xid >= %s::text::xid8"
            " ORDER BY e.xid LIMIT 1",
            [str(top - RANGE_WIDTH)],
        ).fetchall()
    return {
        "ids": aangenomen(url, dvs[1:]),
        "dv": dvs[0],
        "oldest": str(XID_BASE),
        "newest": str(top - RANGE_WIDTH),
        "current": str(top),
        "notificatie": str(notificatie),
        "current_partition": current,
    }


def changer(url: str, partition: str, stop: threading.Event) -> None:
    """A storage option of the current range set again and again: each commit invalidates
    the plans that hold the range, as a VACUUM or ANALYZE of it does."""
    with psycopg.connect(url, autocommit=True) as conn:
        flip = False
        while not stop.wait(CHANGE_EVERY_S):
            flip = not flip
            conn.execute(
                f"ALTER TABLE nmc.{partition} SET (autovacuum_vacuum_cost_delay = {int(flip)})"
            )


def aangenomen(url: str, dvs: list[int]) -> Iterator[str]:
    """Notifications as the intake leaves them, one for each status change (bench_send), of
    the other DVs: the reading DV's current range stays empty."""
    with psycopg.connect(url, autocommit=True) as conn:
        bulk_sends(conn, 2 * 2 * (CALLS + WARM_UP), dvs)  # two trees, steady and changing
        ids = [str(i) for (i,) in conn.execute("SELECT n.id FROM nmc.notificatie AS n")]
    return iter(ids)


def arguments(query: str, params: dict) -> dict:
    """The parameters of one call: a status change takes a notification of its own."""
    if "%(aangenomen)s" in query:
        return {**params, "aangenomen": next(params["ids"])}
    return params


def per_call(url: str, params: dict, changing: bool) -> dict[str, float]:
    """CPU ms per call of each reader, CALLS calls PAUSE_S apart, in one fresh session."""
    result = {}
    for name, query in READERS.items():
        stop = threading.Event()
        thread = None
        with psycopg.connect(url, autocommit=True) as conn:
            for _ in range(WARM_UP):  # the session's first plans and caches are not the figure
                conn.execute(query, arguments(query, params)).fetchall()
            if changing:
                thread = threading.Thread(
                    target=changer, args=(url, params["current_partition"], stop), daemon=True
                )
                thread.start()
            try:
                cpu = backend_cpu(conn)
                for _ in range(CALLS):
                    conn.execute(query, arguments(query, params)).fetchall()
                    time.sleep(PAUSE_S)
                cpu = backend_cpu(conn) - cpu
            finally:
                stop.set()
                if thread is not None:
                    thread.join()
        result[name] = round(1000 * cpu / CALLS, 3)
    return result


def measure(url: str, params: dict) -> dict:
    return {
        "steady": per_call(url, params, changing=False),
        "changing": per_call(url, params, changing=True),
    }


def printed(figures: dict) -> str:
    trees = list(next(iter(figures.values())))
    lines = ["CPU ms per call of the calling backend (steady | a range's statistics changing)"]
    width = max(26, *(len(tree) + 2 for tree in trees))
    half = (width - 3) // 2
    header = f"{'reader':<18}{'partitions':>11}" + "".join(f"{tree:>{width}}" for tree in trees)
    lines += [header, "-" * len(header)]
    for name in READERS:
        for count, by_tree in figures.items():
            cells = "".join(
                f"{by_tree[t]['steady'][name]:>{width - 3 - half}.3f} | "
                f"{by_tree[t]['changing'][name]:<{half}.3f}"
                for t in trees
            )
            lines.append(f"{name:<18}{count:>11}{cells}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="2,40", help="partition counts (default 2,40)")
    parser.add_argument("--before", metavar="REV", help="measure that commit's functions too")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    settings = Settings.from_env()
    if not settings.database_url:
        EmbeddedCluster(settings).start()
    admin_url = connection_url(settings)
    figures: dict[int, dict] = {}
    with ExitStack() as stack:
        before = None
        if args.before:
            before = tree_of(args.before, Path(stack.enter_context(tempfile.TemporaryDirectory())))
        for count in counts:
            url = stack.enter_context(fresh_database(admin_url))
            params = split_log(url, count)
            figures[count] = {}
            if before is not None:
                migrate(url, before)
                figures[count][f"before ({args.before})"] = measure(url, params)
                migrate(url, ROOT)
            figures[count]["this tree"] = measure(url, params)
            print(f"{count} partitions measured", flush=True)
    print(printed(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
