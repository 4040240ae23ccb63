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
    "send drain, budget 60/min (worst window)",
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
# configured budget (the same everywhere); the other units are ratios or task counts.
MACHINE_UNITS = ("/s", "ms", "s")
CONFIGURED = {"send drain, budget 60/min (worst window)"}


def check_relative_target(row: dict) -> None:
    if row["unit"] not in MACHINE_UNITS:
        assert row["unit"] in ("x", "tasks") or row["name"] in CONFIGURED, row
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
    expected = ROWS[:7] + (FEED_ROWS if feed_there else [FEED_MISSING]) + ROWS[7:]
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
