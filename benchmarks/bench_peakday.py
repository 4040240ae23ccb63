"""The peak day of one NotifyNL service at full size (nmc_dev.peakday; the CI size is
tests_py/test_peakday.py). Not collected by pytest; run by hand:

    .venv/bin/python benchmarks/bench_peakday.py [--ci]

D = 250,000 sends a UTC day, R = 3,000 a minute; DV A submits 400,000 at 08:00 UTC in 40
batches, 20 small DVs 1,800 each (3 a minute) from 08:00 to 18:00. The claim functions run
on a fresh database on the NMC clock, each send judged by the NotifyNL simulator's limit
code (window and bucket); prints the figures per hour (docs/dag-aandeel.md).
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "pyshell"))
sys.path.insert(0, str(ROOT / "pyshell" / "dev"))

from bench_send import fresh_database  # noqa: E402

from nmc.config import Settings  # noqa: E402
from nmc.database import connection_url  # noqa: E402
from nmc_dev import peakday  # noqa: E402
from nmc_dev.embedded_db import EmbeddedCluster  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ci", action="store_true", help="the CI size instead of the full")
    args = parser.parse_args()
    settings = Settings.from_env()
    if not settings.database_url:
        EmbeddedCluster(settings).start()
    config = peakday.PeakDay.ci() if args.ci else peakday.PeakDay()
    with fresh_database(connection_url(settings)) as url:
        print(peakday.report(peakday.run(url, config)), flush=True)


if __name__ == "__main__":
    main()
