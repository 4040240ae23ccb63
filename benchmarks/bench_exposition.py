"""Rendering a /metrics page: nmc.observability.prometheus against prometheus_client with a custom
collector. Not collected by pytest; run by hand (prometheus-client is in the `bench` extra:
pip install -e '.[bench]'):

    .venv/bin/python benchmarks/bench_exposition.py              # 50 DVs, 7 rounds of 300 renders
    .venv/bin/python benchmarks/bench_exposition.py --dvs 500 --renders 200

The page is what the API's and the worker's /metrics hold on a busy NMC, made in memory
(no database): the rows of nmc.metrics() for `--dvs` DVs (every per-DV family, the task and
status families, the counters), the API's request histogram (every route template, three
statuses each) and the worker's own series (outcomes per kind, claim rounds, outbound calls
per target and status class). Both renderers get the same rows and the same histogram
counts; the time measured is rows (and histogram state) to bytes.

ceiling   the same page as one bytes join of its lines rendered beforehand: the least any
          renderer can cost in Python.
nmc       nmc.observability.prometheus: database_lines + the histograms' lines + render.
client    prometheus_client: a collector yielding Gauge/Counter/HistogramMetricFamily, a
          CollectorRegistry, generate_latest.

The variants run interleaved, `--rounds` rounds of `--renders` renders each; the figures are
medians of the CPU time (this process) per render, and ratios to the ceiling and to nmc.
The run also says whether the two pages hold the same series (names, labels and values),
since a renderer that changes a name is not a drop-in: prometheus_client writes a
counter's samples, HELP and TYPE as `<name>_total`.
"""

import argparse
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "pyshell"))

from nmc.api.metrics import HttpMetrics  # noqa: E402
from nmc.observability.prometheus import DATABASE_HELP, database_lines, number, render  # noqa: E402
from nmc.worker.metrics import HELP, WorkerMetrics  # noqa: E402

SOORTEN = ("verzenden", "receipt", "navraag", "vaststellen", "controle", "ongeldig-melden")
STAATEN = ("open", "claimed", "failed")
STATUSSEN = ("aangenomen", "verzonden", "afgeleverd", "definitief-bezorgd", "mislukt", "vervallen")
PER_DV = (
    "nmc_onbevestigd_terminaal",
    "nmc_onbevestigd_terminaal_afgekapt",
    "nmc_geen_contactgegevens_aandeel",
    "nmc_feed_achterstand_seconden",
    "nmc_beheerrapport_leeftijd_seconden",
    "nmc_webhook_mislukt",
    "nmc_webhook_gepauzeerd",
    "nmc_webhook_achterstand_seconden",
    "nmc_webhook_gevalideerd",
)
ROUTES = (
    "/v1/notificaties",
    "/v1/notificaties/{id}",
    "/v1/notificaties/{id}/bewijs",
    "/v1/feed",
    "/v1/feed/stream",
    "/v1/feed/bevestiging",
    "/v1/webhook",
    "/v1/jwks",
    "/health/live",
    "/health/ready",
    "/metrics",
    "/notifynl/callback",
)
DOELEN = ("notifynl", "profielservice", "ldv", "webhook")
KLASSEN = ("2xx", "4xx", "5xx", "timeout", "verbinding")


def database_rows(dvs: int, rng: random.Random) -> list[tuple[str, dict, float]]:
    rows: list[tuple[str, dict, float]] = []
    for soort in SOORTEN:
        for staat in STAATEN:
            rows.append(("nmc_taken", {"soort": soort, "staat": staat}, rng.randrange(10_000)))
        rows.append(("nmc_taak_oudste_due_seconden", {"soort": soort}, rng.random() * 60))
        rows.append(("nmc_taak_herhaald", {"soort": soort}, rng.randrange(100)))
        for dv in range(1, dvs + 1):
            rows.append(("nmc_taak_achterstand", {"soort": soort, "dv": dv}, rng.randrange(50)))
    for status in STATUSSEN:
        rows.append(("nmc_notificaties", {"status": status}, rng.randrange(10**7)))
    for naam in ("ontvangst_geweigerd", "ontvangst_misvormd", "callback_onbekend"):
        rows.append(("nmc_teller_totaal", {"naam": naam}, rng.randrange(1000)))
    for dv in range(1, dvs + 1):
        for naam in PER_DV:
            rows.append((naam, {"dv": dv}, round(rng.random(), 4)))
    rows.append(("nmc_verzendbudget_gebruikt", {"service": "standaard"}, 1234))
    rows.append(("nmc_verzendbudget_plafond", {"service": "standaard", "soort": "verzenden"}, 3e3))
    rows.append(("nmc_event_default_rijen", {}, 0))
    rows.append(("nmc_feed_watermerk_achterstand_seconden", {}, 0.25))
    rows.append(("nmc_oudste_schrijftransactie_seconden", {}, 1.5))
    return rows


def in_process(rng: random.Random) -> tuple[HttpMetrics, WorkerMetrics]:
    http = HttpMetrics()
    for route in ROUTES:
        for method, status in (("GET", 200), ("POST", 201), ("GET", 404)):
            for _ in range(20):
                http.observe(method, route, status, rng.expovariate(50))
    worker = WorkerMetrics(SOORTEN)
    for soort in SOORTEN:
        for uitkomst in ("verzonden", "uitgesteld", "opnieuw", "verwerkt"):
            worker.tasks_done(soort, uitkomst, rng.randrange(1, 10_000))
        for _ in range(20):
            worker.round(soort, rng.expovariate(100))
    for doel in DOELEN:
        for klasse in KLASSEN:
            for _ in range(20):
                worker.call(doel, klasse, rng.expovariate(20))
    return http, worker


def nmc_page(rows, http: HttpMetrics, worker: WorkerMetrics) -> bytes:
    return render(database_lines(rows, 0.05), http.lines(), worker.lines())


def client_renderer(rows, http: HttpMetrics, worker: WorkerMetrics):
    """A render function over prometheus_client: a collector built from the same state."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
    )

    def histogram(h):
        label_names = list(h.label_names)
        family = HistogramMetricFamily(h.name, h.help_text, labels=label_names)
        for values, series in sorted(h._series.items()):
            buckets = [(number(b), c) for b, c in zip(h.buckets, series, strict=False)]
            buckets.append(("+Inf", series[-2]))
            family.add_metric(list(values), buckets, series[-1])
        return family

    def grouped(label_rows):
        families: dict[str, list] = {}
        for naam, labels, waarde in label_rows:
            families.setdefault(naam, []).append((labels, waarde))
        return families

    class NmcCollector:
        def collect(self):
            families = grouped(rows)
            shares = families.get("nmc_geen_contactgegevens_aandeel", [])
            families["nmc_geen_contactgegevens_drempel"] = [({}, 0.05)]
            families["nmc_geen_contactgegevens_boven_drempel"] = [
                (labels, 1.0 if share > 0.05 else 0.0) for labels, share in shares
            ]
            for naam in sorted(families):
                help_text = DATABASE_HELP.get(naam, naam)
                samples = families[naam]
                keys = sorted({k for labels, _ in samples for k in labels})
                kind = CounterMetricFamily if naam.endswith("_totaal") else GaugeMetricFamily
                family = kind(naam, help_text, labels=keys)
                for labels, waarde in samples:
                    family.add_metric([str(labels.get(k, "")) for k in keys], float(waarde))
                yield family
            yield GaugeMetricFamily(
                "nmc_database_bereikbaar", DATABASE_HELP["nmc_database_bereikbaar"], 1
            )
            yield histogram(http._histogram)
            taken = CounterMetricFamily(
                "nmc_worker_taken_totaal",
                HELP["nmc_worker_taken_totaal"],
                labels=["soort", "uitkomst"],
            )
            for (soort, uitkomst), n in sorted(worker._taken.items()):
                taken.add_metric([soort, uitkomst], n)
            yield taken
            bezig = GaugeMetricFamily(
                "nmc_worker_taken_bezig", HELP["nmc_worker_taken_bezig"], labels=["soort"]
            )
            for soort, n in sorted(worker._bezig.items()):
                bezig.add_metric([soort], n)
            yield bezig
            yield histogram(worker._rondes)
            yield histogram(worker._aanroepen)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(NmcCollector())
    return lambda: generate_latest(registry)


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$")


def series(page: bytes) -> dict[tuple[str, frozenset], float]:
    """The page's samples as (name, label pairs) → value, whatever their order or format."""
    out = {}
    for line in page.decode().splitlines():
        match = _SAMPLE.match(line)
        if match:
            name, labels, value = match.groups()
            pairs = frozenset(re.findall(r'([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"', labels or ""))
            out[(name, pairs)] = float(value)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dvs", type=int, default=50)
    parser.add_argument("--renders", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--write", type=Path, help="a folder: both pages as nmc.prom, client.prom")
    args = parser.parse_args()
    rng = random.Random(15)  # noqa: S311 - made-up figures, the same every run
    rows = database_rows(args.dvs, rng)
    http, worker = in_process(rng)
    page = nmc_page(rows, http, worker)
    lines = page.split(b"\n")
    variants = {
        "ceiling": lambda: b"\n".join(lines),
        "nmc": lambda: nmc_page(rows, http, worker),
        "client": client_renderer(rows, http, worker),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, render_page in variants.items():
            started = time.process_time()  # CPU time: other engineers' load does not count
            for _ in range(args.renders):
                render_page()
            times[name].append((time.process_time() - started) / args.renders * 1e6)
    medians = {name: statistics.median(t) for name, t in times.items()}
    ours, theirs = series(page), series(variants["client"]())
    renamed = sorted({n for n, _ in theirs} - {n for n, _ in ours})
    result = {
        "page": {"bytes": len(page), "samples": len(ours), "dvs": args.dvs},
        **{
            name: {
                "median_us_per_render": round(medians[name], 1),
                "x_ceiling": round(medians[name] / medians["ceiling"], 1),
                "x_nmc": round(medians[name] / medians["nmc"], 2),
                "rounds_us": [round(t, 1) for t in times[name]],
            }
            for name in variants
        },
        "client_bytes": len(variants["client"]()),
        "same_series": ours == theirs,
        "names_only_in_client": renamed,
        "names_only_in_nmc": sorted({n for n, _ in ours} - {n for n, _ in theirs}),
        "same_series_but_those_names": ours
        == {
            (n.removesuffix("_total") if n.endswith("_totaal_total") else n, labels): value
            for (n, labels), value in theirs.items()
        },
    }
    if args.write:
        (args.write / "nmc.prom").write_bytes(page)
        (args.write / "client.prom").write_bytes(variants["client"]())
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
