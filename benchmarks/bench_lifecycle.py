"""The cost of one notification over its whole life, process by process and statement by
statement, against the sum of what its steps cost in their own benchmarks (same run).

    .venv/bin/python benchmarks/bench_lifecycle.py            # 3000 notifications, 60 s idle
    .venv/bin/python benchmarks/bench_lifecycle.py --quick    # 600, 20 s idle (< 2 min)
    .venv/bin/python benchmarks/bench_lifecycle.py --quick --before main   # a before/after

`--before REV` first runs a stack that is another commit's (`git archive REV`: its Python
first on the processes' PYTHONPATH, its schema and functions migrated into the stack's own
database), on the same cluster, then this tree's: a cut's before and after in one run.

The whole life as production runs it, on a LocalStack (nmc_dev.stack: the API, two workers
with the default kinds, maintenance included, the NotifyNL, Profielservice and LDV
simulators) over a PostgreSQL cluster of its own that loads pg_stat_statements:

1. idle: the stack with one onboarded DV and nothing to do, `idle_s` seconds (after 30 s
   of settling: its first rounds and every pool connection's first plans);
2. the life: the demo's mix (nmc_dev.demo.scenario: decentraal and centraal, bounces, a full
   mailbox, lost callbacks, no e-mail address; 30% one by one, the rest in batches of 25)
   submitted at a steady `rate`; the workers send, receipts come back; clock +1 h 5 min
   (reconciliation asks NotifyNL); clock +8 days (settlement after the term, NotifyNL's
   retention, maintenance); clock +8 days (the personal data erased); clock +1 year (every
   notification deleted after the proof's retention); all the while the DV reads its feed and
   acknowledges it, and takes the same events by webhook;
3. the steps alone, on the same cluster (first, before any stack): batch and single intake
   (bench_intake), the send drain (bench_send.bench_drain), receipt intake (bench_callback)
   and the rest of the life (bench_steps: receipt processing, reconciliation against the
   NotifyNL simulator, settlement, the feed read and acknowledged over HTTP, webhook
   delivery, erasure, deletion after retention), each in bulk at its best.

CPU is CPU time from /proc (a shared machine's wall time says little): PostgreSQL is the
postmaster and its children (backends that exit leave their time in the postmaster's
children's time), minus the benchmark's own probe connection; the API and each worker their
process. The verdict is the ratio of the life's NMC CPU per notification to the sum of the
steps' own costs per notification, each weighted by how often the life took it (sends,
receipts, reconciliation look-ups, settlements, events read from the feed and delivered by
webhook, erasures, deletions per notification): `ratio_to_steps`. Beside it the narrow one
of before, `ratio_to_intake_send_callback`: against intake, send and receipt callback
alone, all the rest counted as overhead. What no step's ceiling holds is overhead: the
upkeep rounds (controle, beheerrapport, maintenance's other jobs, the watchdog), polling,
the idle stack's own cost over the life's time, and the autovacuum and background work
bench_steps leaves out of its figures.
"""

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path

import bench_intake
import httpx
import psycopg
from bench_callback import bench_callback
from bench_intake import IntakeOptions, process_cpu
from bench_send import bench_drain, cpu_seconds
from bench_steps import bench_steps

from nmc.adapters.webhook_validatie import ALLOWED_NETWORKS_ENV, Adresbeleid
from nmc.admin import onboarding as admin
from nmc.config import Settings
from nmc.database import connection_url
from nmc_dev.demo import scenario
from nmc_dev.demo.display import TERMINAL
from nmc_dev.demo.dv import Dv, FeedReader
from nmc_dev.embedded_db import EmbeddedCluster
from nmc_dev.sim.server import start_in_thread
from nmc_dev.soak.year import LOOPBACK_NETWORK
from nmc_dev.soak.yeardv import HOOK_PATH, receiver_app
from nmc_dev.stack import LocalStack
from nmc_dev.stack.postgres import EmbeddedPostgres

NMC_PARTS = ("postgres", "api", "worker-1", "worker-2")
SIMULATORS = ("notifynl", "profielservice", "ldv")
RECONCILIATION_JUMP = timedelta(hours=1, minutes=5)
SETTLEMENT_JUMP = timedelta(days=8)
ERASURE_JUMP = timedelta(days=8)  # past the erasure term (wistermijn, 7 days after final)
DELETION_JUMP = timedelta(days=366)  # past the proof's retention (bewijs_bewaartermijn)
POLL_S = 0.5  # the benchmark's own checks (on its probe connection, not counted)
FEED_POLL_S = 0.5  # the DV reads its feed this often
PHASE_TIMEOUT_S = 300.0
LIFECYCLE_KINDS = ("verzenden", "receipt", "reconciliëren", "vaststellen", "ongeldig-melden")
SEND_PATH = "/v2/notifications/email"

QUIET_SQL = """
SELECT (SELECT count(*) FROM nmc.taak
         WHERE soort::text = ANY(%(kinds)s)
           AND (staat = 'claimed' OR (staat = 'open' AND due <= nmc.now())))
     + (SELECT count(*) FROM nmc.notificatie WHERE status IN ('aangenomen', 'in-verzending'))
"""
# On the wall clock, as the simulator logs its requests: less the test clock's offset (the
# history wave moved it on; it stands still until the reconciliation jump).
ACCEPTED_SQL = """
SELECT id::text, extract(epoch FROM aangenomen_op - (SELECT verschuiving FROM nmc.klok))::float8
FROM nmc.notificatie
"""
OPEN_SQL = "SELECT count(*) FROM nmc.notificatie WHERE status::text <> ALL(%(terminal)s)"
# Erased: no personal data left on any notification, no erasure task waiting.
ERASED_SQL = """
SELECT NOT EXISTS (SELECT 1 FROM nmc.notificatie WHERE sleutel_gewrapt IS NOT NULL)
   AND NOT EXISTS (SELECT 1 FROM nmc.taak WHERE soort = 'wissen' AND staat <> 'done')
"""
DELETED_SQL = "SELECT NOT EXISTS (SELECT 1 FROM nmc.notificatie)"
EVENTS_SQL = "SELECT count(*) FROM nmc.event"
SETTLED_SQL = "SELECT count(*) FROM nmc.event WHERE naar = 'definitief-bezorgd'"
# Once erased, before the deletion: the notifications erased, and those the deletion takes.
ERASED_COUNTS_SQL = """
SELECT count(*) FILTER (WHERE gewist_op IS NOT NULL), count(*) FROM nmc.notificatie
"""
# After the history wave, what autovacuum keeps in a running NMC: every table's statistics
# (a fresh cluster's autovacuum, one round a minute, had not come round to them yet).
ANALYZE_SQL = "ANALYZE"
LOOKUP_PATH = "/v2/notifications"  # GET: a reconciliation's look-up (not the POST send)
# Top-level statements of the NMC's roles only (not the probe's own, nor migrate's).
STATEMENTS_SQL = """
SELECT s.query, s.calls, s.total_exec_time, s.rows, s.toplevel, s.total_plan_time
FROM pg_stat_statements AS s
WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND s.userid <> (SELECT oid FROM pg_roles WHERE rolname = current_user)
ORDER BY s.total_exec_time DESC
"""


@dataclass
class Window:
    """CPU seconds per part between two snapshots, and the wall time between them."""

    seconds: float
    cpu: dict[str, float]

    def nmc(self) -> float:
        return sum(self.cpu[part] for part in NMC_PARTS if part in self.cpu)


@dataclass
class Meter:
    """Snapshots of every part's CPU; the probe's own backend is taken out of PostgreSQL's."""

    stack: LocalStack
    probe: psycopg.Connection
    marks: list[tuple[float, dict[str, float]]] = field(default_factory=list)

    def snapshot(self) -> tuple[float, dict[str, float]]:
        pids = self.stack.pids()
        cpu = {name: process_cpu(pid) for name, pid in pids.items() if name != "postgres"}
        cpu["postgres"] = process_cpu(pids["postgres"]) - cpu_seconds(self.probe.info.backend_pid)
        probe = str(self.probe.info.backend_pid)
        for part, seconds in postgres_parts(pids["postgres"], probe).items():
            cpu[f"{PG_PART}{part}"] = seconds
        return time.monotonic(), cpu

    def between(self, start: tuple[float, dict], end: tuple[float, dict]) -> Window:
        return Window(
            end[0] - start[0], {part: end[1][part] - start[1].get(part, 0.0) for part in end[1]}
        )


PG_PART = "pg: "  # a Window's keys for PostgreSQL's processes by kind (postgres_parts)
TICK = os.sysconf("SC_CLK_TCK")


def postgres_parts(postmaster: int, probe: str) -> dict[str, float]:
    """PostgreSQL's CPU seconds by kind of process: backends by role, each background
    process by its title, the postmaster itself, and what exited processes left in its
    children's time (autovacuum workers, closed connections). The probe is left out."""
    parts: dict[str, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        pid = stat.parent.name
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            title = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if pid == str(postmaster):
            parts["postmaster"] = (int(fields[11]) + int(fields[12])) / TICK
            parts["exited (autovacuum workers, closed connections)"] = (
                int(fields[13]) + int(fields[14])
            ) / TICK
        elif fields[1] == str(postmaster) and pid != probe:
            words = title.removeprefix("postgres: ").split()
            # "nmc_worker nmc_lifecycle_0 127.0.0.1(5432) idle": a backend, by its role.
            kind = (
                f"backend {words[0]}"
                if len(words) >= 3 and "(" in words[2]
                else (" ".join(w for w in words if not w[0].isdigit()))
            )
            parts[kind] = parts.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / TICK
    return parts


def label(query: str) -> str:
    """A statement by the first NMC function it calls (the claims look alike otherwise)."""
    called = re.search(r"\bnmc\.(\w+)\s*\(", query)
    return f"nmc.{called.group(1)}(…)" if called else query


def statements(probe: psycopg.Connection) -> list[dict]:
    rows = probe.execute(STATEMENTS_SQL).fetchall()
    return [
        {
            "query": re.sub(r"\s+", " ", re.sub(r"--[^\n]*", "", q)).strip(),
            "calls": c,
            "ms": round(t, 1),
            "rows": r,
            "toplevel": top,
            "plan_ms": round(plan, 1),
        }
        for q, c, t, r, top, plan in rows
    ]


def reset_statements(probe: psycopg.Connection) -> None:
    probe.execute("SELECT pg_stat_statements_reset()")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def pickup_latencies(
    accepted_at: dict[str, float], requests: list[dict], attempts: dict[str, str]
) -> list[float]:
    """Seconds from each notification's acceptance (its aangenomen_op, the intake's
    transaction) to the first send of its first attempt to NotifyNL (the simulator logs
    every request with its wall time and reference: the attempt id). Notifications never
    sent (no address) have none."""
    first: dict[str, float] = {}
    for request in requests:
        if request["method"] != "POST" or request["path"] != SEND_PATH:
            continue
        notificatie = attempts.get(request.get("reference") or "")
        if notificatie in accepted_at and notificatie not in first:
            first[notificatie] = request["ts"]
    return [first[n] - accepted_at[n] for n in first]


# ------------------------------------------------------------------------------------ the run


def own_cluster_settings() -> tuple[Settings, Path]:
    """Settings for a throwaway embedded cluster of the benchmark's own (it must load
    pg_stat_statements at its start, which the developer's running cluster did not)."""
    settings = Settings.from_env()
    if settings.database_url:
        raise SystemExit("bench_lifecycle runs its own embedded cluster: unset NMC_DATABASE_URL")
    home = Path(tempfile.mkdtemp(prefix="nmc_lifecycle_", dir="/tmp"))
    home.chmod(0o755)  # the postgres OS user must reach it
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return replace(settings, home=home, db_port=port), home


async def submit_steadily(dv: Dv, plan: list[scenario.Notificatie], rate: float) -> dict:
    """The wave at `rate` notifications per second: single submissions and batches in a
    shuffled order, each sent at its own time (not after the previous one's answer).
    Returns notificatieId -> the wall time of its 202."""
    singles, grouped = scenario.batches(plan)
    units = [[n] for n in singles] + grouped
    random.Random(26).shuffle(units)  # noqa: S311 - a test's order, not a secret
    accepted: dict[str, float] = {}
    started, sent_before = time.monotonic(), 0

    async def submit(unit: list[scenario.Notificatie], at: float) -> None:
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        regie = unit[0].scenario.regie
        if len(unit) == 1:
            ids = [await dv.submit(regie, unit[0].body)]
        else:
            ids = await dv.submit_batch(regie, str(uuid.uuid4()), [n.body for n in unit])
        now = time.time()
        for n, notificatie_id in zip(unit, ids, strict=True):
            n.id = notificatie_id
            accepted[notificatie_id] = now

    tasks = []
    for unit in units:
        tasks.append(asyncio.create_task(submit(unit, started + sent_before / rate)))
        sent_before += len(unit)
    await asyncio.gather(*tasks)
    return accepted


async def until(condition, what: str, timeout_s: float = PHASE_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not await condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up after {timeout_s:.0f} s waiting for {what}")
        await asyncio.sleep(POLL_S)


class HookReceiver:
    """The DV's webhook (besides its feed), behind the year run's receiver (the CloudEvents
    handshake, a batch per call): takes every batch with a 204 and remembers which
    (notification, sequence) it was handed."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, int]] = set()
        self.calls = 0

    def receive(self, events: list[dict], cursor: str) -> int:
        self.calls += 1
        self.seen.update((str(e.get("subject")), int(e.get("sequence", 0))) for e in events)
        return 204


async def answer(probe: psycopg.Connection, query: str) -> bool:
    """A yes/no query of the probe's, as a condition for `until`."""
    return probe.execute(query).fetchone()[0]


async def run_life(
    stack: LocalStack,
    probe,
    meter: Meter,
    count: int,
    rate: float,
    hook: HookReceiver,
    *,
    history: bool = False,
    cursor: str | None = None,
) -> dict:
    """One wave of `count` notifications through its whole life, measured.

    `history`: the stack's first wave, which leaves what a running NMC has (history in its
    tables, their statistics, every connection's plans) and stops before the deletion: it
    returns only the DV's feed cursor, from which the measured wave's reader goes on."""
    plan = scenario.build_plan(count, scenario.new_run_id(), now=stack.now())
    response = httpx.post(f"{stack.profielservice_url}/_sim/parties", json=plan.parties)
    response.raise_for_status()
    main = plan.with_action("none")  # the wave that lives its whole life (no DELETE, no expiry)
    token = stack.dv_token(scenario.DEMO_OIN, ttl_s=3600)
    headers = {"Authorization": f"Bearer {token}"}
    sims = httpx.AsyncClient(timeout=10)
    async with httpx.AsyncClient(base_url=stack.api_url, headers=headers, timeout=60) as client:
        feed = FeedReader(client, cursor=cursor)
        before = {
            "settlements": probe.execute(SETTLED_SQL).fetchone()[0],
            "erasures": probe.execute(ERASED_COUNTS_SQL).fetchone()[0],
            "webhook events": len(hook.seen),
            "webhook calls": hook.calls,
        }

        async def follow() -> None:
            while True:
                await feed.read()
                await asyncio.sleep(FEED_POLL_S)

        async def quiet() -> bool:
            busy = probe.execute(QUIET_SQL, {"kinds": list(LIFECYCLE_KINDS)}).fetchone()[0]
            if busy:
                return False
            pending = (await sims.get(f"{stack.notifynl_url}/_sim/callbacks?summary=1")).json()
            return pending["pending_tasks"] == 0

        async def quiet_twice() -> bool:
            return await quiet() and (await asyncio.sleep(POLL_S) or await quiet())

        async def final() -> bool:
            if probe.execute(OPEN_SQL, {"terminal": sorted(TERMINAL)}).fetchone()[0]:
                return False
            await feed.read()
            known = feed.known
            if not all(n.id in known and known[n.id].status in TERMINAL for n in main):
                return False
            return len(hook.seen) >= probe.execute(EVENTS_SQL).fetchone()[0]

        reset_statements(probe)
        marks = {"start": meter.snapshot()}
        reader = asyncio.create_task(follow())
        accepted = await submit_steadily(Dv(client), main, rate)
        marks["submitted"] = meter.snapshot()
        await until(quiet_twice, "the sends and receipts")
        marks["sent"] = meter.snapshot()
        # The 202's time as the NMC wrote it (the intake's transaction; the clock has not
        # moved yet): a loaded client reads its answer late, the workers may send before.
        accepted.update(probe.execute(ACCEPTED_SQL).fetchall())
        stack.advance_clock(RECONCILIATION_JUMP)
        await until(quiet_twice, "reconciliation")
        marks["reconciled"] = meter.snapshot()
        stack.advance_clock(SETTLEMENT_JUMP)
        await until(final, "every notification final in the feed")
        marks["final"] = meter.snapshot()
        # Before the deletion takes them: how many were settled.
        counts = {"settlements": probe.execute(SETTLED_SQL).fetchone()[0]}
        # Attempt -> notification for the pickup, read before the deletion removes them.
        attempts = dict(
            probe.execute("SELECT id::text, notificatie_id::text FROM nmc.poging").fetchall()
        )
        stack.advance_clock(ERASURE_JUMP)
        await until(lambda: answer(probe, ERASED_SQL), "the erasure")
        marks["erased"] = meter.snapshot()
        if history:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
            await sims.aclose()
            return {"cursor": feed.cursor}
        erased, present = probe.execute(ERASED_COUNTS_SQL).fetchone()
        # The deletion takes the history too (its notifications are past the retention).
        counts |= {"erasures": erased, "deletions": present}
        counts = {what: n - before.get(what, 0) for what, n in counts.items()}
        stack.advance_clock(DELETION_JUMP)
        await until(lambda: answer(probe, DELETED_SQL), "the deletion")
        marks["deleted"] = meter.snapshot()
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        requests = (await sims.get(f"{stack.notifynl_url}/_sim/requests")).json()
        callbacks = (await sims.get(f"{stack.notifynl_url}/_sim/callbacks")).json()["callbacks"]
    await sims.aclose()
    pickups = pickup_latencies(accepted, requests, attempts)
    singles = len(scenario.batches(main)[0])
    sends = sum(1 for r in requests if r["method"] == "POST" and r["path"] == SEND_PATH)
    return {
        "notificaties": len(main),
        "single_share": round(singles / len(main), 3),
        "rate_per_s": rate,
        "windows": {
            name: meter.between(marks[a], marks[b])
            for name, a, b in (
                ("intake, send, receipts", "start", "sent"),
                ("reconciliation (+1 h 5 min)", "sent", "reconciled"),
                ("settlement (+8 days), feed to the end", "reconciled", "final"),
                ("erasure (+8 days)", "final", "erased"),
                ("deletion after retention (+1 year)", "erased", "deleted"),
                ("whole life", "start", "deleted"),
            )
        },
        "submit_seconds": round(marks["submitted"][0] - marks["start"][0], 1),
        "sends": sends,
        "receipts": sum(1 for c in callbacks if c["result"] == "delivered"),
        # NotifyNL asked about an attempt (by its id, or by reference when it has none).
        "reconciliations": sum(
            1 for r in requests if r["method"] == "GET" and r["path"].startswith(LOOKUP_PATH)
        ),
        **counts,
        "feed": {"events": feed.events, "pages": feed.pages, "acks": feed.acks},
        "webhook": {
            "events": len(hook.seen) - before["webhook events"],
            "calls": hook.calls - before["webhook calls"],
        },
        "pickup_ms": {
            "count": len(pickups),
            "p50": round(1000 * statistics.median(pickups), 1) if pickups else None,
            "p99": round(1000 * percentile(pickups, 0.99), 1) if pickups else None,
        },
        "statements": statements(probe),
    }


# Before the idle window: the start's own work (first claims, imports) and every pool
# connection's first plans of each function settle. Measured from the start, a minute's
# window was mostly that warm-up (the once-a-minute upkeep calls at 13-50 ms each on cold
# connections), which a stack running for days pays once an hour (the pools' max lifetime).
IDLE_SETTLE_S = 30.0


def measure_idle(meter: Meter, probe, seconds: float) -> dict:
    time.sleep(IDLE_SETTLE_S)
    reset_statements(probe)
    start = meter.snapshot()
    time.sleep(seconds)  # an idle window is wall time by definition: nothing to wait for
    window = meter.between(start, meter.snapshot())
    return {"window": window, "statements": statements(probe)}


def step_ceilings(admin_url: str, postmaster: int, sizes: dict) -> dict:
    """The steps' own benchmarks on the same cluster, the stack stopped; their CPU per item
    of the NMC's processes (API, worker, PostgreSQL; not the simulators nor the load)."""
    bench_intake.postmaster = postmaster  # their PostgreSQL CPU: this cluster's only
    try:
        intake = bench_intake.bench_intake(admin_url, IntakeOptions(**sizes["intake"]))
        drain = bench_drain(admin_url, ceiling=False, **sizes["drain"])
        callback = bench_callback(admin_url, ceiling=False, **sizes["callback"])
        later = bench_steps(admin_url, **sizes["steps"])
    finally:
        bench_intake.postmaster = None
    batch_item = intake["cpu_us_per_batch_item"]
    return {
        # ms per item. A single intake's PostgreSQL share is not measured apart: the batch
        # item's stands in for it (a single costs PostgreSQL at least that).
        "intake batch item": (batch_item["api"] + batch_item["postgres"]) / 1000,
        "intake single": intake["cpu_ms_per_single"]["api"] + batch_item["postgres"] / 1000,
        "send": drain["cpu_ms_per_send"]["worker"] + drain["cpu_ms_per_send"]["db"],
        "receipt callback": callback["api_cpu_ms"] + callback["db_cpu_ms"],
    } | {step: later[step]["ms_per_item"] for step in LATER_STEPS}


# bench_steps' steps, each with what the life counts of it (run_life), per notification.
LATER_STEPS = {
    "receipt processing": "receipts",
    "reconciliation": "reconciliations",
    "settlement": "settlements",
    "feed read + acknowledge": "feed events",
    "webhook delivery": "webhook events",
    "erasure": "erasures",
    "deletion after retention": "deletions",
}


@dataclass(frozen=True)
class Variant:
    """One stack of a before/after: extra `nmc worker` arguments, and the commit whose Python
    the stack's processes run (None: this tree's)."""

    worker_args: tuple[str, ...] = ()
    rev: str | None = None


ROOT = Path(__file__).resolve().parent.parent


def tree_of(rev: str, into: Path) -> Path:
    """Another commit's Python and SQL (`git archive`): a root for the children's
    NMC_ROOT, its pyshell/ first on their path."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "pyshell", *SQL_DIRS],
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


SQL_DIRS = ("sql", "schema", "functions", "triggers")


def bench_lifecycle(
    count: int = 3000,
    rate: float = 50.0,
    idle_s: float = 60.0,
    ceilings: dict | None = None,
    variants: dict[str, Variant] | None = None,
    nested: bool = False,
    history: int | None = None,
) -> dict:
    """The whole benchmark on a cluster of its own (removed afterwards); the figures.

    `history`: notifications of the history wave before the measured one (None: as many as
    the measured wave; 0: none, the life measured on a fresh stack and empty tables).

    `nested`: pg_stat_statements also counts the statements inside the functions (track =
    all; a little overhead on every statement, so not by default).

    `variants`: name -> Variant; each runs its own stack (a fresh database) on the same
    cluster, one after the other, against the same steps' costs (a before/after in one run).
    None: this tree as shipped. The first variant's figures are the result's own; every
    variant's are under "variants"."""
    settings, home = own_cluster_settings()
    cluster = EmbeddedCluster(settings, preload=("pg_stat_statements",))
    runs = {}
    try:
        cluster.start()
        if nested:
            with psycopg.connect(connection_url(settings), autocommit=True) as owner:
                owner.execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")
                owner.execute("ALTER SYSTEM SET pg_stat_statements.track_planning = on")
                owner.execute("SELECT pg_reload_conf()")
        # The steps first, on the fresh cluster (no stack polls beside them).
        postmaster = EmbeddedPostgres(settings).pid
        steps = step_ceilings(connection_url(settings), postmaster, ceilings or FULL_CEILINGS)
        for number, (name, variant) in enumerate((variants or {"shipped": Variant()}).items()):
            tree = tree_of(variant.rev, home / f"rev_{number}") if variant.rev else None
            runs[name] = run_stack(
                settings,
                home,
                f"nmc_lifecycle_{number}",
                variant.worker_args,
                count,
                rate,
                idle_s,
                tree,
                count if history is None else history,
            )
    finally:
        cluster.stop()
        shutil.rmtree(home, ignore_errors=True)
    results = {name: summarise(idle, life, steps) for name, (idle, life) in runs.items()}
    first = next(iter(results.values()))
    return first | ({"variants": results} if len(results) > 1 else {})


def run_stack(
    settings: Settings,
    home: Path,
    database: str,
    worker_args: tuple[str, ...],
    count: int,
    rate: float,
    idle_s: float,
    tree: Path | None = None,
    history: int = 0,
) -> tuple[dict, dict]:
    """One stack on the running cluster: a history wave of `history` notifications (none
    at 0), its idle window, then the life; stopped after."""
    hook = HookReceiver()
    receiver = start_in_thread(receiver_app({scenario.DEMO_OIN: hook}))
    stack = StackOf(
        settings,
        tree,
        state_dir=home / database,
        database=database,
        worker_args=worker_args,
        notify_templates=admin.notify_templates(scenario.dv_document()),
        child_env={ALLOWED_NETWORKS_ENV: LOOPBACK_NETWORK},
    )
    try:
        # The workers start once the DV is there: their first round gives its webhook a
        # position before the first notification (a new webhook starts at the watermark).
        stack.start(workers=False)
        onboard(stack, receiver.url + HOOK_PATH.format(oin=scenario.DEMO_OIN))
        stack.start_workers()
        with psycopg.connect(stack.admin_url, autocommit=True) as probe:
            probe.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            meter = Meter(stack, probe)
            cursor = None
            if history:
                wave = run_life(stack, probe, meter, history, rate, hook, history=True)
                cursor = asyncio.run(wave)["cursor"]
                probe.execute(ANALYZE_SQL)
                httpx.post(f"{stack.notifynl_url}/_sim/forget").raise_for_status()
            idle = measure_idle(meter, probe, idle_s)
            life = asyncio.run(run_life(stack, probe, meter, count, rate, hook, cursor=cursor))
    finally:
        stack.stop()
        receiver.stop()  # its idle polling must not count in the next stack's or steps' figures
    return idle, life


def onboard(stack: LocalStack, hook_url: str) -> None:
    """The demo's DV, as `nmc demo` onboards it, with a webhook besides its feed: its
    templates at NotifyNL first (the onboarding reads their placeholders with the Notify
    services' keys)."""
    document = scenario.dv_document() | {
        "webhook": {"url": hook_url, "maxMislukt": 3, "maxBatch": 500}
    }
    for template_id in {b["notifynlTemplateId"] for b in document["berichttypen"]}:
        httpx.post(
            f"{stack.notifynl_url}/_sim/templates",
            json={"template_id": template_id, "subject": scenario.TEMPLATE_SUBJECT,
                  "body": scenario.TEMPLATE_BODY},
        ).raise_for_status()  # fmt: skip
    path = stack.state_dir / "dv.json"
    path.write_text(json.dumps(document))
    admin.onboard_dv(
        stack.admin_settings,
        path,
        beleid=Adresbeleid.parse(LOOPBACK_NETWORK),
        notify_environ=stack.notify_environ(),
    )


class StackOf(LocalStack):
    """A LocalStack that is another commit's (`tree`, from tree_of): its processes run that
    commit's pyshell/, first on their path, and `nmc migrate` its schema and functions."""

    def __init__(self, settings: Settings, tree: Path | None, **options) -> None:
        super().__init__(settings, **options)
        self.tree = tree

    def _child_env(self) -> dict[str, str]:
        env = super()._child_env()
        if self.tree is not None:
            env |= {"PYTHONPATH": str(self.tree / "pyshell"), "NMC_ROOT": str(self.tree)}
        return env


FULL_CEILINGS = {
    "intake": {"seconds": 3, "rounds": 1, "warm_up": 2000},
    "drain": {"count": 5000},
    "callback": {"attempts": 3000, "clients": 32},
    "steps": {"count": 3000},
}
QUICK_CEILINGS = {
    "intake": {"seconds": 1, "rounds": 1, "warm_up": 200},
    "drain": {"count": 1000},
    "callback": {"attempts": 600, "clients": 16},
    "steps": {"count": 1000},  # ~20 s
}


def summarise(idle: dict, life: dict, steps: dict) -> dict:
    n = life["notificaties"]
    whole: Window = life["windows"]["whole life"]
    idle_window: Window = idle["window"]
    single = life["single_share"]
    # How often the life took each step per notification, and what that cost by the step's
    # own ceiling.
    taken = (
        {"sends": life["sends"], "receipts": life["receipts"]}
        | {what: life[what] for what in ("reconciliations", "settlements", "erasures", "deletions")}
        | {"feed events": life["feed"]["events"], "webhook events": life["webhook"]["events"]}
    )
    per_item = {
        "intake": single * steps["intake single"] + (1 - single) * steps["intake batch item"],
        "send": steps["send"],
        "receipt callback": steps["receipt callback"],
    } | {step: steps[step] for step in LATER_STEPS}
    weights = {"intake": 1.0, "send": taken["sends"] / n, "receipt callback": taken["receipts"] / n}
    weights |= {step: taken[what] / n for step, what in LATER_STEPS.items()}
    per_notification = {step: per_item[step] * weights[step] for step in per_item}
    step_sum = sum(per_notification.values())
    # The old verdict's sum: only the steps that had a benchmark of their own before.
    narrow_sum = sum(per_notification[s] for s in ("intake", "send", "receipt callback"))
    life_ms = 1000 * whole.nmc() / n
    idle_ms = 1000 * idle_window.nmc() / idle_window.seconds * whole.seconds / n
    toplevel = [s for s in life["statements"] if s["toplevel"]]
    # Inside the functions, by what they cost to plan and run (planning is not in the
    # statement's own time, nor in its caller's).
    nested = sorted(
        (s for s in life["statements"] if not s["toplevel"]),
        key=lambda s: -(s["ms"] + s["plan_ms"]),
    )
    total_db_ms = sum(s["ms"] for s in toplevel) or 1.0
    return {
        "notificaties": n,
        "rate_per_s": life["rate_per_s"],
        "single_share": single,
        "sends_per_notificatie": round(life["sends"] / n, 3),
        "receipts_per_notificatie": round(life["receipts"] / n, 3),
        "feed": life["feed"],
        "webhook": life.get("webhook"),
        "life_seconds": round(whole.seconds, 1),
        "cpu_ms_per_notificatie": {
            name: {part: round(1000 * cpu / n, 3) for part, cpu in w.cpu.items()}
            | {"nmc": round(1000 * w.nmc() / n, 3), "seconds": round(w.seconds, 1)}
            for name, w in life["windows"].items()
        },
        "nmc_cpu_ms_per_notificatie": round(life_ms, 3),
        "postgres_ms_per_notificatie": {
            part.removeprefix(PG_PART): round(1000 * cpu / n, 3)
            for part, cpu in sorted(whole.cpu.items(), key=lambda kv: -kv[1])
            if part.startswith(PG_PART) and cpu > 0
        },
        "step_cost_ms": {k: round(v, 4) for k, v in steps.items()},
        "step_items_per_notificatie": {k: round(v, 3) for k, v in weights.items()},
        "step_cost_ms_per_notificatie": {k: round(v, 4) for k, v in per_notification.items()},
        "step_sum_ms": round(step_sum, 4),
        # The verdict: against every step the life takes.
        "ratio_to_steps": round(life_ms / step_sum, 2),
        # The narrow one of before (intake, send, receipt callback only; the rest overhead).
        "ratio_to_intake_send_callback": round(life_ms / narrow_sum, 2),
        # What the idle stack alone would have cost over the life's wall time.
        "idle_share_of_life_ms": round(idle_ms, 3),
        "idle": {
            "seconds": round(idle_window.seconds, 1),
            "core_percent": {
                part: round(100 * cpu / idle_window.seconds, 2)
                for part, cpu in idle_window.cpu.items()
                if not part.startswith(PG_PART)
            }
            | {"nmc": round(100 * idle_window.nmc() / idle_window.seconds, 2)},
            "postgres_core_percent": {
                part.removeprefix(PG_PART): round(100 * cpu / idle_window.seconds, 3)
                for part, cpu in sorted(idle_window.cpu.items(), key=lambda kv: -kv[1])
                if part.startswith(PG_PART) and cpu > 0
            },
            "statements_per_s": [
                {
                    "query": label(s["query"])[:90],
                    "per_s": round(s["calls"] / idle_window.seconds, 2),
                    "ms_per_s": round(s["ms"] / idle_window.seconds, 3),
                }
                for s in [s for s in idle["statements"] if s["toplevel"]][:8]
            ],
        },
        "pickup_ms": life["pickup_ms"],
        "statements": [
            {
                "query": label(s["query"])[:90],
                "calls_per_notificatie": round(s["calls"] / n, 3),
                "ms_per_notificatie": round(s["ms"] / n, 4),
                "share": round(s["ms"] / total_db_ms, 3),
            }
            for s in toplevel[:12]
        ],
        "nested_statements": [
            {
                "query": s["query"][:200],
                "calls_per_notificatie": round(s["calls"] / n, 3),
                "ms_per_notificatie": round(s["ms"] / n, 4),
                "plan_ms_per_notificatie": round(s["plan_ms"] / n, 4),
                "rows_per_call": round(s["rows"] / max(s["calls"], 1), 1),
            }
            for s in nested[:40]
        ],
    }


# ------------------------------------------------------------------------------------ output


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = [" | ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    rule = "-+-".join("-" * w for w in widths)
    return "\n".join(
        [" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)), rule, *lines]
    )


def printed(r: dict) -> str:
    parts = [*NMC_PARTS, "nmc", *SIMULATORS]
    postgres = table(
        ["PostgreSQL by process (whole life)", "CPU ms per notification"],
        [[part, f"{ms:.3f}"] for part, ms in r["postgres_ms_per_notificatie"].items()],
    )
    per = r["cpu_ms_per_notificatie"]
    life = table(
        ["window (CPU ms per notification)", "s", *parts],
        [
            [name, str(w["seconds"]), *(f"{w.get(p, 0):.3f}" for p in parts)]
            for name, w in per.items()
        ],
    )
    items = r["step_items_per_notificatie"]
    steps = table(
        ["step (own benchmark, same run)", "ms per item", "items per notif.", "ms per notif."],
        [
            [k, f"{v / items[k]:.4f}" if items[k] else "-", f"{items[k]:.3f}", f"{v:.4f}"]
            for k, v in r["step_cost_ms_per_notificatie"].items()
        ]
        + [["sum", "", "", f"{r['step_sum_ms']:.4f}"]],
    )
    top = table(
        ["statement (top by total time)", "calls/notif.", "ms/notif.", "share"],
        [
            [
                s["query"][:70],
                f"{s['calls_per_notificatie']:.3f}",
                f"{s['ms_per_notificatie']:.4f}",
                f"{s['share']:.0%}",
            ]
            for s in r["statements"]
        ],
    )
    idle = r["idle"]
    idle_parts = table(
        ["idle (% of a core)", *idle["core_percent"]],
        [["", *(f"{v:.2f}" for v in idle["core_percent"].values())]],
    )
    idle_postgres = table(
        ["PostgreSQL idle by process", "% of a core"],
        [[part, f"{pct:.3f}"] for part, pct in idle.get("postgres_core_percent", {}).items()],
    )
    idle_top = table(
        ["idle statement", "calls/s", "ms/s"],
        [
            [s["query"][:70], f"{s['per_s']:.2f}", f"{s['ms_per_s']:.3f}"]
            for s in idle["statements_per_s"]
        ],
    )
    pickup = r["pickup_ms"]
    nested = (
        "\n\n"
        + table(
            ["inside the functions (--nested)", "calls/notif.", "ms/notif.", "plan", "rows/call"],
            [
                [
                    s["query"][:110],
                    f"{s['calls_per_notificatie']:.3f}",
                    f"{s['ms_per_notificatie']:.4f}",
                    f"{s['plan_ms_per_notificatie']:.4f}",
                    f"{s['rows_per_call']:.1f}",
                ]
                for s in r["nested_statements"]
            ],
        )
        if r["nested_statements"]
        else ""
    )
    return (
        f"{r['notificaties']} notifications at {r['rate_per_s']}/s ({r['single_share']:.0%} "
        f"one by one), life {r['life_seconds']} s; {r['sends_per_notificatie']} sends and "
        f"{r['receipts_per_notificatie']} receipts per notification; feed {r['feed']}; webhook "
        f"{r['webhook']}\n\n"
        f"{life}\n\n{postgres}\n\n{steps}\n\n"
        f"lifecycle NMC CPU {r['nmc_cpu_ms_per_notificatie']:.3f} ms per "
        f"notification = {r['ratio_to_steps']:.2f}x the sum of the steps' own costs "
        f"({r['ratio_to_intake_send_callback']:.2f}x intake, send and receipt callback's "
        "alone); the idle "
        f"stack alone over the same wall time: {r['idle_share_of_life_ms']:.3f} ms per "
        f"notification\n\n{top}\n\nidle over {idle['seconds']} s (after {IDLE_SETTLE_S:.0f} s "
        f"settling):\n{idle_parts}\n\n{idle_postgres}\n\n{idle_top}"
        f"{nested}\n\npickup (202 -> NotifyNL call): p50 {pickup['p50']} ms, "
        f"p99 {pickup['p99']} ms "
        f"({pickup['count']} notifications)\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="600 notifications, 20 s idle")
    parser.add_argument("--count", type=int, help="notifications (3000; quick 600)")
    parser.add_argument("--rate", type=float, default=50.0, help="per second (50)")
    parser.add_argument("--idle", type=float, help="idle seconds (60; quick 20)")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument(
        "--history",
        type=int,
        help="notifications of the unmeasured wave before the life (as many as --count; 0: "
        "none, the life on a fresh stack)",
    )
    parser.add_argument(
        "--nested", action="store_true", help="also the statements inside the functions"
    )
    parser.add_argument(
        "--before",
        metavar="REV",
        help="first a stack of that commit's Python and SQL (a before/after in one run)",
    )
    args = parser.parse_args()
    variants = (
        {f"before ({args.before})": Variant(rev=args.before), "this tree": Variant()}
        if args.before
        else None
    )
    result = bench_lifecycle(
        count=args.count or (600 if args.quick else 3000),
        rate=args.rate,
        idle_s=args.idle or (20.0 if args.quick else 60.0),
        ceilings=QUICK_CEILINGS if args.quick else FULL_CEILINGS,
        variants=variants,
        nested=args.nested,
        history=args.history,
    )
    for name, figures in result.get("variants", {"shipped": result}).items():
        print(f"\n===== {name}\n{printed(figures)}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
