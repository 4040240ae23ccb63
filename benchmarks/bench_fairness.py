"""Fairness benchmark: how long small DVs wait while one DV floods the send queue.

    .venv/bin/python benchmarks/bench_fairness.py [--flood 100000] [--small 100] [--small-dvs 9]

On a fresh database one DV has `--flood` notifications waiting to be sent. Four claimers
(think: four workers) drain them through the real send claim, nmc.claim_verzenden (batch 20,
the worker's default), and report each claimed task with nmc.finish_verzenden. Once a tenth
of the flood is claimed, nine small DVs each submit `--small` notifications through
nmc.intake_notificaties. Measured per small DV, from the database's own timestamps:

* seconds from its intake to its last attempt marked verzonden;
* tasks claimed (of every DV) between its intake and its own last claim: under a fair claim
  that is about (DVs with work) x (its size), whatever the flood's size; under first-in,
  first-out it would be the whole rest of the flood (also shown, as "FIFO").

Target: every small DV is done within 1.5 x its fair share of claims (10 DVs x 100 = 1,000
tasks, so at most 1,500), independent of the flood's size; and, in time, within the time
this run needs for that many claims at the flood's own rate.

Why the bare claim/finish engine and not the worker against the NotifyNL simulator: the
order of service is decided entirely inside the claim (nmc.lock_due_taken: a share of the
batch per DV with due work), and the HTTP call between claim and finish costs the same for
every task whichever DV it belongs to, so it stretches the time axis without changing who
goes first. A full send of 100k through the worker and the simulator runs at a few hundred
sends per second on this 2-core machine (benchmarks/bench_send.py drain), i.e. five to ten
minutes for this one row; the engine drains it in a fraction of that. What the engine does
not model is the worker's varying claim size (min(batch, free slots)); a smaller claim only
means more rounds, each still shared per DV.
"""

import argparse
import json
import sys
import threading
import time
import uuid

import psycopg
from bench_send import (
    bulk_sends,
    fresh_database,
    intake_sealed,
    onboard,
    open_send_tasks,
    set_budget,
)

from nmc.config import Settings
from nmc.crypto.kek_ring import new_kek_ring, parse_kek_ring
from nmc.database import connection_url, with_overrides
from nmc_dev.embedded_db import EmbeddedCluster

CLAIM = "SELECT taak_id, claim_epoch FROM nmc.claim_verzenden(%s, %s)"
# The worker group-commits its outcomes: one call for the batch (nmc.worker.verzenden).
FINISH = (
    "SELECT count(*) FROM nmc.finish_verzenden_batch(%s::bigint[], %s::integer[], %s::text[], "
    "%s::uuid[])"
)
FAIR_SHARE_SLACK = 1.5  # rounding of shares and concurrent claimers: a little above the ideal

# Per DV, from the rows the run left behind: when its first notification was accepted, when
# its last attempt was claimed and marked verzonden, how many tasks of any DV were claimed in
# between (the work that went before it), and how many claim transactions that took.
PER_DV = """
WITH per_dv AS (
    SELECT n.dv_id, count(*) AS notificaties, min(n.aangenomen_op) AS aangenomen,
        max(p.aangemaakt_op) AS laatste_claim, max(p.verzonden_op) AS klaar,
        min(p.aangemaakt_op) AS eerste_claim,
        count(*) FILTER (WHERE n.status = 'verzonden') AS verzonden
    FROM nmc.notificatie AS n
    LEFT JOIN nmc.poging AS p ON p.notificatie_id = n.id
    GROUP BY n.dv_id
)
SELECT d.dv_id, d.notificaties, d.verzonden, d.aangenomen, d.eerste_claim, d.laatste_claim,
    d.klaar,
    (SELECT count(*) FROM nmc.poging AS p
        WHERE p.aangemaakt_op > d.aangenomen AND p.aangemaakt_op <= d.laatste_claim),
    (SELECT count(DISTINCT p.aangemaakt_op) FROM nmc.poging AS p
        WHERE p.aangemaakt_op > d.aangenomen AND p.aangemaakt_op <= d.laatste_claim),
    (SELECT count(*) FROM nmc.poging AS p JOIN nmc.notificatie AS n ON n.id = p.notificatie_id
        WHERE n.dv_id = %(flood_dv)s AND p.aangemaakt_op > d.aangenomen)
FROM per_dv AS d
ORDER BY d.dv_id
"""


def claim_and_finish(worker_url: str, owner: str, batch: int, start, stop, failures) -> None:
    """One claimer: claim a batch, mark its tasks verzonden in one group commit (as a worker
    does after NotifyNL answered 201), repeat; an empty claim waits a little, as the worker's
    poll does."""
    try:
        with psycopg.connect(worker_url, autocommit=True) as conn:
            start.wait()
            while not stop.is_set():
                rows = conn.execute(CLAIM, [owner, batch]).fetchall()
                if not rows:
                    time.sleep(0.02)
                    continue
                ids, epochs = [r[0] for r in rows], [r[1] for r in rows]
                conn.execute(
                    FINISH, [ids, epochs, ["verzonden"] * len(ids), [uuid.uuid4() for _ in ids]]
                )
    except Exception as error:  # reported by wait_until; a silent death would hang the run
        failures.append(error)
        start.abort()


def wait_until(condition, failures: list, poll: float = 0.05) -> None:
    while not condition():
        if failures:
            raise RuntimeError(f"a claimer failed: {failures[0]!r}")
        time.sleep(poll)


def bench_fairness(
    admin_url: str,
    flood=100_000,
    small=100,
    small_dvs=9,
    claimers=4,
    batch=20,
    arrive_after=0.1,
) -> dict:
    ring = parse_kek_ring(new_kek_ring("kek-bench"))
    with fresh_database(admin_url) as url, psycopg.connect(url, autocommit=True) as conn:
        flood_dv, *small_ids = onboard(conn, 1 + small_dvs)
        set_budget(conn, 100_000_000)
        bulk_sends(conn, flood, [flood_dv])
        start, stop, failures = threading.Barrier(claimers + 1), threading.Event(), []
        worker_url = with_overrides(url, user="nmc_worker")
        threads = [
            threading.Thread(
                target=claim_and_finish,
                args=(worker_url, f"fair-{n}", batch, start, stop, failures),
            )
            for n in range(claimers)
        ]
        for thread in threads:
            thread.start()
        try:
            start.wait()
            threshold = int(flood * arrive_after)
            wait_until(
                lambda: conn.execute("SELECT count(*) FROM nmc.poging").fetchone()[0] >= threshold,
                failures,
            )
            for dv_id in small_ids:
                intake_sealed(conn, dv_id, small, ring)
            wait_until(lambda: open_send_tasks(conn) == 0, failures, poll=0.1)
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        rows = conn.execute(PER_DV, {"flood_dv": flood_dv}).fetchall()
    return summarise(rows, flood_dv, small, small_dvs, claimers, batch)


def summarise(rows, flood_dv: int, small: int, small_dvs: int, claimers: int, batch: int) -> dict:
    by_dv = {row[0]: row for row in rows}
    flood_row = by_dv.pop(flood_dv)
    flood_seconds = (flood_row[6] - flood_row[4]).total_seconds()
    flood_rate = flood_row[2] / flood_seconds
    fair_share = (1 + small_dvs) * small
    target_ahead = round(FAIR_SHARE_SLACK * fair_share)
    per_dv = [
        {
            "dv_id": dv_id,
            "notificaties": count,
            "verzonden": sent,
            "seconds": round((done - accepted).total_seconds(), 3),
            "claimed_ahead": ahead,
            "claim_rounds": rounds,
            "fifo_ahead": flood_after + count,
        }
        for dv_id, count, sent, accepted, _, _, done, ahead, rounds, flood_after in by_dv.values()
    ]
    return {
        "path": "engine: nmc.claim_verzenden + nmc.finish_verzenden, no HTTP",
        "claimers": claimers,
        "batch": batch,
        "flood": {
            "notificaties": flood_row[1],
            "verzonden": flood_row[2],
            "seconds": round(flood_seconds, 2),
            "per_s": round(flood_rate),
        },
        "small_dvs": per_dv,
        "all_sent": all(d["verzonden"] == d["notificaties"] for d in per_dv)
        and flood_row[2] == flood_row[1],
        "slowest_seconds": max(d["seconds"] for d in per_dv),
        "max_claimed_ahead": max(d["claimed_ahead"] for d in per_dv),
        "fair_share": fair_share,
        "target_claimed_ahead": target_ahead,
        "target_seconds": round(target_ahead / flood_rate, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=100_000, help="the big DV (100000)")
    parser.add_argument("--small", type=int, default=100, help="per small DV (100)")
    parser.add_argument("--small-dvs", type=int, default=9, help="small DVs (9)")
    parser.add_argument("--claimers", type=int, default=4, help="concurrent claimers (4)")
    parser.add_argument("--batch", type=int, default=20, help="claim batch (20)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    settings = Settings.from_env()
    if not settings.database_url:
        EmbeddedCluster(settings).start()
    result = bench_fairness(
        connection_url(settings), args.flood, args.small, args.small_dvs, args.claimers, args.batch
    )
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    flood = result["flood"]
    print(
        f"flood: {flood['verzonden']:,} sent in {flood['seconds']:.1f} s ({flood['per_s']:,}/s); "
        f"{args.claimers} claimers, batch {args.batch}; {result['path']}"
    )
    print("   DV  notificaties  seconds  claimed ahead  claim rounds  FIFO would be")
    for d in result["small_dvs"]:
        print(
            f"{d['dv_id']:5d}  {d['notificaties']:12,}  {d['seconds']:7.2f}  "
            f"{d['claimed_ahead']:13,}  {d['claim_rounds']:12,}  {d['fifo_ahead']:13,}"
        )
    print(
        f"target: every small DV within {result['target_claimed_ahead']:,} claimed tasks "
        f"({FAIR_SHARE_SLACK} x its fair share {result['fair_share']:,}), i.e. "
        f"{result['target_seconds']:.2f} s at the flood's rate: worst "
        f"{result['max_claimed_ahead']:,} tasks, {result['slowest_seconds']:.2f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
