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
