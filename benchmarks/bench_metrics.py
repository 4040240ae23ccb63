"""Benchmark of a metrics scrape (`nmc.metrics()`) with 100k vs 10M events in the log, none
of them acknowledged. Not collected by pytest; run by hand:

    .venv/bin/python benchmarks/bench_metrics.py                        # 100k vs 10M (~10 min)
    .venv/bin/python benchmarks/bench_metrics.py --sizes 10000,100000   # a quick run

Target: p50 <= 50 ms at the largest size (the API role's statement timeout is 5 s), and
p50(largest) / p50(smallest) <= 1.5: the scrape's cost does not grow with the log. (The ratio
means that only when the smallest size already reaches the limit for every DV: at least
5 x 10 x 1000 = 50,000 events; the run says so when it does not.)

What is measured: the named query `api_metrics` (`SELECT … FROM nmc.metrics()`, what GET
/metrics of the API and of the worker sends) as role nmc_api, the client's time per scrape,
and the CPU time of the backend (from /proc when the server runs on this machine). The
worst case for the count of unacknowledged terminal statuses (`nmc_onbevestigd_terminaal`):
ten DVs that never acknowledged (a webhook-only DV, say), so every terminal event of theirs
is past their acknowledgement and, 400 days old, overdue. `nmc.report_onbevestigd_v2` reads
at most `instellingen.onbevestigd_telgrens` (1000) of them per DV from the partial index
`event_terminaal`; every DV is then reported as "at least 1000" (`afgekapt`), which the run
checks. For comparison the count as it was before (every terminal event past the
acknowledgement, joined and grouped) is timed once per size as admin (`--zonder-vergelijking`
skips it: at 10M it takes seconds to minutes).

The log is filled as benchmarks/eventlog.py fills it (its FILL, in chunks, then VACUUM
(ANALYZE)): five events per notification, aangenomen .. definitief-bezorgd, one in five
terminal, spread over ten DVs, xids given explicitly below the watermark. There are no
notificatie rows: the metrics that count notifications (per status, the geen-contactgegevens
share) are not what this measures. `--services` Notify services (20) have sent today, so the
scrape has their day and pace rows too (nmc.verzenddag).
"""

import argparse
import json
import os
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "pyshell"))

import eventlog  # noqa: E402

from nmc.database import with_overrides  # noqa: E402
from nmc.queries import QUERIES  # noqa: E402

WARM_UP = 5
TARGET_P50_MS = 50.0
TARGET_RATIO = 1.5

# The count before it was bounded (functions/feed/acknowledge.sql as it was): every terminal
# event past each DV's acknowledgement, joined and grouped. For comparison only.
UNBOUNDED = """
SELECT d.dv_id, pg_catalog.count(*), pg_catalog.min(e.tijdstip)
FROM nmc.dienstverlener AS d
LEFT JOIN nmc.bevestiging AS b
    ON b.dv_id = d.dv_id AND b.epoch = (SELECT c.epoch FROM nmc.cluster_epoch AS c)
INNER JOIN nmc.event AS e
    ON e.dv_id = d.dv_id
    AND (b.dv_id IS NULL OR (e.xid, e.event_id) > (b.xid, b.event_id))
WHERE nmc.is_terminal(e.naar)
    AND e.tijdstip < nmc.now() - d.bevestigingstermijn
GROUP BY d.dv_id
"""


# Notify services in the scrape: the day and pace metrics have a row per service.
SERVICES = 20


class Target:
    """One size: its database and an nmc_api connection that scrapes."""

    def __init__(self, url: str, size: int, stack: ExitStack, services: int = 0):
        self.url = url
        self.size = size
        self.times: list[float] = []
        self.cpu_seconds = 0.0
        self.api = stack.enter_context(
            psycopg.connect(with_overrides(url, user="nmc_api"), autocommit=True)
        )
        with psycopg.connect(url, autocommit=True) as admin:
            [(self.telgrens,)] = admin.execute(
                "SELECT onbevestigd_telgrens FROM nmc.instellingen"
            ).fetchall()
            # Notify services that sent today: each is a row of the day and pace metrics.
            admin.execute(
                "INSERT INTO nmc.notify_service (code) "
                "SELECT 'dienst-' || g FROM generate_series(1, %s) AS g",
                [services],
            )
            admin.execute(
                "SELECT nmc.take_budget('dienst-' || g, 'verzenden', 5) "
                "FROM generate_series(1, %s) AS g",
                [services],
            )

    def scrape(self, record: bool) -> list[tuple]:
        cpu = eventlog.backend_cpu(self.api)
        started = time.perf_counter()
        rows = self.api.execute(QUERIES["api_metrics"]).fetchall()
        elapsed = time.perf_counter() - started
        cpu = eventlog.backend_cpu(self.api) - cpu
        if record:
            self.times.append(elapsed * 1000)
            self.cpu_seconds += cpu
        return rows

    def check(self, rows: list[tuple], dv_count: int) -> dict:
        """Every DV never acknowledged: each is reported as at least the limit."""
        values: dict[str, dict[int, float]] = {}
        for naam, labels, waarde in rows:
            if naam.startswith("nmc_onbevestigd_terminaal"):
                values.setdefault(naam, {})[int(labels["dv"])] = waarde
        counts = values.get("nmc_onbevestigd_terminaal", {})
        capped = values.get("nmc_onbevestigd_terminaal_afgekapt", {})
        expected = min(self.telgrens, self.size // 5 // dv_count)
        if len(counts) != dv_count or set(counts.values()) != {float(expected)}:
            raise AssertionError(f"unexpected counts per DV: {counts}")
        if expected == self.telgrens and set(capped.values()) != {1.0}:
            raise AssertionError(f"counts at the limit not flagged: {capped}")
        return {"per_dv": expected, "afgekapt": expected == self.telgrens}

    def unbounded_seconds(self) -> float:
        with psycopg.connect(self.url, autocommit=True) as admin:
            started = time.perf_counter()
            admin.execute(UNBOUNDED).fetchall()
            return time.perf_counter() - started


def bench_metrics(
    admin_url: str,
    sizes=(100_000, 10_000_000),
    samples=30,
    compare: bool = True,
    services: int = SERVICES,
) -> dict:
    sizes = tuple(sorted(int(size) for size in sizes))
    per_xid = eventlog.events_per_xid(admin_url, sizes[-1])
    checked: dict[int, dict] = {}
    unbounded: dict[int, float] = {}
    loadavg_before = os.getloadavg()
    with ExitStack() as stack:
        targets, load_seconds = eventlog.filled_targets(
            stack,
            admin_url,
            sizes,
            per_xid,
            lambda url, dvs, size: Target(url, size, stack, services),
        )
        for target in targets:
            for _ in range(WARM_UP):
                rows = target.scrape(record=False)
            checked[target.size] = target.check(rows, eventlog.DV_COUNT)
        # In alternation, so the load of a shared machine falls on every size alike.
        for _ in range(samples):
            for target in targets:
                target.scrape(record=True)
        if compare:
            for target in targets:
                unbounded[target.size] = round(target.unbounded_seconds() * 1000, 1)
    p50 = {t.size: round(statistics.median(t.times), 2) for t in targets}
    p95 = {t.size: round(eventlog.percentile(t.times, 0.95), 2) for t in targets}
    return {
        "p50_ms": p50,
        "p95_ms": p95,
        "ratio": round(p50[sizes[-1]] / p50[sizes[0]], 2),
        "backend_cpu_ms_per_scrape": {
            t.size: round(t.cpu_seconds * 1000 / len(t.times), 2) for t in targets
        },
        "onbevestigd": checked,
        "unbounded_count_ms": unbounded,
        "samples": samples,
        "dv_count": eventlog.DV_COUNT,
        "notify_services": services,
        **eventlog.conditions(per_xid, load_seconds, loadavg_before),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    eventlog.add_sizes_argument(parser)
    parser.add_argument("--samples", type=int, default=30, help="scrapes per size (30)")
    parser.add_argument(
        "--zonder-vergelijking",
        action="store_true",
        help="do not time the unbounded count of before, for comparison",
    )
    parser.add_argument(
        "--services",
        type=int,
        default=SERVICES,
        help=f"Notify services with a pace row, each a row of the day metrics ({SERVICES})",
    )
    args = parser.parse_args()
    sizes, admin_url = eventlog.sizes_and_database(parser, args)
    started = time.perf_counter()
    result = bench_metrics(
        admin_url, sizes, args.samples, not args.zonder_vergelijking, args.services
    )
    print(f"\n== metrics scrape ({time.perf_counter() - started:.0f} s)", flush=True)
    for size in sorted(result["p50_ms"]):
        onbevestigd = result["onbevestigd"][size]
        line = (
            f"{size:>12,} events: scrape p50 {result['p50_ms'][size]:.2f} ms, "
            f"p95 {result['p95_ms'][size]:.2f} ms, "
            f"backend CPU {result['backend_cpu_ms_per_scrape'][size]:.2f} ms/scrape; "
            f"onbevestigd per DV {'>= ' if onbevestigd['afgekapt'] else ''}"
            f"{onbevestigd['per_dv']}"
        )
        if size in result["unbounded_count_ms"]:
            line += f"; the unbounded count of before: {result['unbounded_count_ms'][size]:.0f} ms"
        print(line + f" (load {result['load_seconds'][size]:.0f} s)")
    smallest = min(result["p50_ms"])
    if not result["onbevestigd"][smallest]["afgekapt"]:
        print(f"(at {smallest:,} events no DV reaches the limit: the ratio compares less work)")
    largest = max(result["p50_ms"])
    verdict = result["p50_ms"][largest] <= TARGET_P50_MS and result["ratio"] <= TARGET_RATIO
    print(
        f"ratio p50 largest/smallest: {result['ratio']:.2f} (target <= {TARGET_RATIO}; "
        f"p50 <= {TARGET_P50_MS:.0f} ms): {'ok' if verdict else 'MISSED'}"
    )
    print(f"load average before {result['loadavg_before']}, after {result['loadavg_after']}")
    print(json.dumps(result, indent=2), flush=True)


if __name__ == "__main__":
    main()
