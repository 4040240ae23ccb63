"""Smoke test of the benchmark report (benchmarks/report.py).

The report's `tiny` preset runs every benchmark end to end on small data (about half a
minute), so neither the report nor the bench_… functions it calls can rot unnoticed. Only
the shape is checked (every row there, every figure a positive number, the files written):
speed is what the report measures, never what a test asserts. And that every target is
relative, so a verdict means the same on any machine: a rate or a time is held against a
ceiling measured in the same run, and the ratio is the figure against that share of it.
"""

import importlib
import importlib.util
import json
import math
import re
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"

ROWS = [
    "intake single (HTTP)",
    "intake batch (HTTP, 1000 per call)",
    "send drain, no budget",
    "send pace 270/min: most sends in any 60 s",
    "send pace 270/min: largest burst",
    "fairness: 9 DVs x 10 beside a flood of 600: tasks claimed while the slowest waits",
    "fairness: 9 DVs x 10 beside a flood of 600: slowest small DV done",
    "receipt ingest (HTTP callback)",
    "claim latency ratio, 1k vs 3k open tasks (claim_taken)",
    "claim latency ratio, 1k vs 3k open tasks (claim_verzenden)",
    "bare task engine (claim_taken + finish_taken)",
]
FEED_ROWS = ["feed page p50 at 5k events", "feed page p50 ratio, 1k vs 5k events"]
# Units of rates and times: such a figure depends on the machine, so its target must be a
# share or multiple of a ceiling measured in the same run. The budget row's rate is the
# configured send rate (the same everywhere); the other units are ratios or counts.
MACHINE_UNITS = ("/s", "ms", "s")
CONFIGURED = {"send pace 270/min: most sends in any 60 s"}


def check_relative_target(row: dict) -> None:
    if row["unit"] not in MACHINE_UNITS:
        assert row["unit"] in ("x", "tasks", "sends") or row["name"] in CONFIGURED, row
        return
    assert row["ceiling"] and math.isfinite(row["ceiling"]) and row["ceiling"] > 0, row
    assert row["ceiling_what"] and row["share"] > 0, row
    expected_ratio = row["figure"] / (row["share"] * row["ceiling"])
    assert math.isclose(row["ratio"], expected_ratio, rel_tol=1e-9), row
    assert not re.search(r"\d[\d,]{3,}\s*/s", row["target"]), f"an absolute rate: {row}"


FEED_MISSING = "feed page at 1k vs 5k events"


def test_tiny_report_runs_every_benchmark(admin_url, tmp_path, monkeypatch):
    # The benchmarks import each other as top-level modules from their own folder (as when
    # run as scripts); spawned load-generator processes inherit this path.
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    report = importlib.import_module("report")

    document = report.run_report(admin_url, "tiny")
    markdown_file, json_file = report.write(document, tmp_path)

    feed_there = importlib.util.find_spec("bench_feed") is not None
    expected = ROWS[:8] + (FEED_ROWS if feed_there else [FEED_MISSING]) + ROWS[8:]
    rows = document["rows"]
    assert [row["name"] for row in rows] == expected
    for row in rows:
        if row["name"] == FEED_MISSING:
            assert row["verdict"] == "not available"
            continue
        assert row["verdict"] in ("pass", "FAIL"), row
        assert isinstance(row["figure"], int | float), row
        assert math.isfinite(row["figure"]) and row["figure"] > 0, row
        assert row["ratio"] > 0, row
        assert row["target"], row
        check_relative_target(row)

    machine = document["machine"]
    assert machine["nproc"] >= 1 and machine["cpu"] and machine["postgresql"]
    assert json.loads(json_file.read_text())["rows"] == rows
    text = markdown_file.read_text()
    assert all(row["name"] in text for row in rows)
    assert "| row " in text and "ceiling (same run)" in text and machine["postgresql"] in text


def paced(**changes) -> dict:
    """The figures bench_budget returns for a run at R = 540/min (rate limit 600) that
    neither limiter refused; `changes` replace some."""
    figures = {
        "rate_limit_per_minute": 600,
        "send_rate_per_minute": 540,
        "burst": 9,
        "minutes": 3,
        "clock": "real",
        "enforced_mode": "bucket",
        "simulator": {
            "requests": 1600, "most_in_60s": 540, "largest_burst": 10, "bucket_size": 201,
        },
        "nmc_grants": {"requests": 1600, "most_in_60s": 540, "largest_burst": 9},
        "per_mode": {
            "window": {"admitted": 1600, "refused": 0},
            "bucket": {"admitted": 1600, "refused": 0},
        },
        "accepted": 1600,
        "sent": 1600,
    }  # fmt: skip
    for key, value in changes.items():
        figures[key] = value if not isinstance(value, dict) else figures[key] | value
    return figures


def verdicts(figures: dict) -> list[str]:
    report = importlib.import_module("report")
    return [row.verdict for row in report.pace_rows(figures)]


def test_the_pace_rows_judge_the_most_in_60_seconds_refusals_and_burst(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    assert verdicts(paced()) == ["pass", "pass"]
    assert verdicts(paced(simulator={"most_in_60s": 545})) == ["pass", "pass"]  # within 1%
    assert verdicts(paced(simulator={"most_in_60s": 546})) == ["FAIL", "pass"]  # above
    assert verdicts(paced(simulator={"most_in_60s": 530})) == ["FAIL", "pass"]  # too slow
    # A refusal by either limiter, also the one only counted, fails both rows.
    refused = {"admitted": 1599, "refused": 1}
    assert verdicts(paced(per_mode={"window": refused})) == ["FAIL", "FAIL"]
    assert verdicts(paced(per_mode={"bucket": refused})) == ["FAIL", "FAIL"]
    one_mode = paced()
    del one_mode["per_mode"]["window"]  # a simulator that judged by one limiter only
    assert verdicts(one_mode) == ["FAIL", "FAIL"]
    assert verdicts(paced(accepted=1590)) == ["FAIL", "pass"]  # a send it did not see
    assert verdicts(paced(simulator={"largest_burst": 202})) == ["pass", "FAIL"]


def test_a_run_paced_above_the_rate_gets_a_failing_verdict(admin_url, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    report = importlib.import_module("report")
    tiny = report.PRESETS["tiny"]["budget"]

    figures, rows = report.budget(admin_url, {**tiny, "minutes": 2, "overpace": 2.0})

    rate = figures["send_rate_per_minute"]
    assert [row.verdict for row in rows] == ["FAIL", "FAIL"]
    # The failure is the run's own: the simulator saw too many and refused some.
    assert figures["simulator"]["most_in_60s"] > 1.01 * rate
    assert sum(counts["refused"] for counts in figures["per_mode"].values()) > 0


def test_lifecycle_figures_and_rows(monkeypatch):
    # The lifecycle benchmark starts a stack of its own (too long for the tiny preset): here
    # its arithmetic and its report rows, from made-up windows. Per notification: 10 NMC CPU
    # seconds over 1000 notifications is 10 ms; steps 0.1 (intake) + 2 x 0.5 (sends) + 0.4
    # (receipts) = 1.5 ms, the narrow sum; the later steps add 1 x 0.3 (receipt processing)
    # + 0.1 x 1.0 (reconciliation) + 0.9 x 0.2 (settlement) + 4 x 0.01 (feed) + 4 x 0.02
    # (webhook) + 0.1 (erasure) + 0.1 (deletion) = 0.9 ms: 2.4 ms in all.
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    lifecycle = importlib.import_module("bench_lifecycle")
    report = importlib.import_module("report")

    parts = {"postgres": 6.0, "api": 1.0, "worker-1": 1.5, "worker-2": 1.5, "notifynl": 9.0}
    # PostgreSQL by kind of process (inside "postgres", never counted twice).
    parts |= {"pg: backend nmc_worker": 4.0, "pg: backend nmc_api": 2.0, "pg: walwriter": 0.0}
    whole = lifecycle.Window(100.0, parts)
    life = {
        "notificaties": 1000,
        "single_share": 0.5,
        "rate_per_s": 10.0,
        "windows": {"whole life": whole},
        "sends": 2000,
        "receipts": 1000,
        "feed": {"events": 4000, "pages": 10, "acks": 10},
        "webhook": {"events": 4000, "calls": 8},
        "reconciliations": 100,
        "settlements": 900,
        "erasures": 1000,
        "deletions": 1000,
        "pickup_ms": {"count": 900, "p50": 250.0, "p99": 600.0},
        "statements": [
            {"query": "SELECT nmc.claim()", "calls": 5000, "ms": 800.0, "rows": 1,
             "toplevel": True, "plan_ms": 0.0},
            # Inside the functions (--nested): ordered by planning and running together.
            {"query": "UPDATE nmc.taak", "calls": 1000, "ms": 100.0, "rows": 1000,
             "toplevel": False, "plan_ms": 10.0},
            {"query": "INSERT INTO nmc.event", "calls": 2000, "ms": 50.0, "rows": 2000,
             "toplevel": False, "plan_ms": 200.0},
        ],
    }  # fmt: skip
    idle = {
        "window": lifecycle.Window(
            20.0,
            {"postgres": 0.1, "api": 0.0, "worker-1": 0.05, "worker-2": 0.05, "ldv": 0.5,
             "pg: walwriter": 0.1},
        ),
        "statements": [
            {"query": "SELECT nmc.claim()", "calls": 80, "ms": 40.0, "rows": 0,
             "toplevel": True, "plan_ms": 0.0},
        ],
    }  # fmt: skip
    steps = {"intake single": 0.15, "intake batch item": 0.05, "send": 0.5, "receipt callback": 0.4}
    steps |= {"receipt processing": 0.3, "reconciliation": 1.0, "settlement": 0.2,
              "feed read + acknowledge": 0.01, "webhook delivery": 0.02, "erasure": 0.1,
              "deletion after retention": 0.1}  # fmt: skip
    figures = lifecycle.summarise(idle, life, steps)

    assert figures["nmc_cpu_ms_per_notificatie"] == 10.0  # the simulator does not count
    assert figures["step_sum_ms"] == 2.4
    assert figures["ratio_to_steps"] == round(10 / 2.4, 2)
    assert figures["ratio_to_intake_send_callback"] == round(10 / 1.5, 2)
    assert figures["step_items_per_notificatie"]["feed read + acknowledge"] == 4.0
    assert figures["idle"]["core_percent"]["nmc"] == 1.0  # 0.2 CPU s in 20 s
    assert figures["idle"]["statements_per_s"][0]["per_s"] == 4.0
    assert figures["statements"][0]["calls_per_notificatie"] == 5.0
    assert len(figures["statements"]) == 1  # the top-level ones only
    nested = figures["nested_statements"]
    assert [s["query"] for s in nested] == ["INSERT INTO nmc.event", "UPDATE nmc.taak"]
    assert nested[0]["plan_ms_per_notificatie"] == 0.2 and nested[1]["rows_per_call"] == 1.0
    assert figures["postgres_ms_per_notificatie"] == {
        "backend nmc_worker": 4.0, "backend nmc_api": 2.0
    }  # fmt: skip
    assert "pg: walwriter" not in figures["idle"]["core_percent"]
    assert figures["idle"]["postgres_core_percent"] == {"walwriter": 0.5}  # 0.1 s in 20 s
    assert "inside the functions" in lifecycle.printed(figures)
    # The idle stack's rate over the life's 100 s: 1% of a core, 1 s, 1 ms per notification.
    assert figures["idle_share_of_life_ms"] == 1.0

    monkeypatch.setattr(report, "bench_lifecycle", lambda **sizes: figures)
    _, rows = report.lifecycle("unused", report.PRESETS["quick"]["lifecycle"])
    cpu, idle_row, pickup = (asdict_row(row) for row in rows)
    check_relative_target(cpu)
    assert cpu["ratio"] == (10 / 2.4) / report.LIFECYCLE_FACTOR and cpu["ok"] is False
    assert idle_row["figure"] == 1.0 and idle_row["ok"] is True
    assert pickup["figure"] == 250.0 and pickup["verdict"] == "information"
    assert "lifecycle" not in report.PRESETS["tiny"]  # a stack of its own: not the smoke test


def asdict_row(row) -> dict:
    import dataclasses

    return dataclasses.asdict(row)


def test_pickup_is_the_first_send_of_the_first_attempt():
    import sys

    sys.path.insert(0, str(BENCHMARKS))
    try:
        lifecycle = importlib.import_module("bench_lifecycle")
    finally:
        sys.path.remove(str(BENCHMARKS))
    accepted = {"n1": 100.0, "n2": 100.5}
    attempts = {"p1": "n1", "p2": "n2", "p9": "elsewhere"}
    send = lifecycle.SEND_PATH
    requests = [
        {"method": "GET", "path": "/v2/notifications", "reference": "p1", "ts": 100.1},
        {"method": "POST", "path": send, "reference": "p1", "ts": 100.25},
        {"method": "POST", "path": send, "reference": "p1", "ts": 103.0},  # a re-send
        {"method": "POST", "path": send, "reference": "p2", "ts": 101.0},
        {"method": "POST", "path": send, "reference": "p9", "ts": 101.0},
        {"method": "POST", "path": send, "reference": None, "ts": 101.0},
    ]
    latencies = lifecycle.pickup_latencies(accepted, requests, attempts)
    assert sorted(round(x, 3) for x in latencies) == [0.25, 0.5]
    # Statements are named by the first NMC function they call.
    query = "SELECT c.taak_id FROM nmc.claim_verzenden($1::text, $2::integer) AS c"
    assert lifecycle.label(query) == "nmc.claim_verzenden(…)"
    assert lifecycle.label("SELECT 1") == "SELECT 1"
