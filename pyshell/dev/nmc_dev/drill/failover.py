"""`nmc drill failover`: lose the primary mid-stream on real streaming replication.

1. Three PostgreSQL 15 clusters of its own (nmc_dev.drill.clusters, $NMC_HOME/drill, free
   ports): a primary with `synchronous_standby_names = 'ANY 1 (s1, s2)'` and
   `synchronous_commit = on`, two hot standbys streaming from it.
2. A local NMC (nmc_dev.stack.LocalStack): the simulators, the API and workers pointed at the
   primary through a multi-host URL with `target_session_attrs=read-write`; the API reads its
   feed pages on the standbys (NMC_API_REPLICA_DATABASE_URL, `prefer-standby`).
3. The chaos soak's workload, DVs and clients (nmc_dev.soak): notifications over HTTP while a
   feed consumer per DV reads, pages and acknowledges.
4. Once part of the intake is accepted: the primary is lost (every process of it SIGSTOPped,
   then SIGKILLed). The standbys replay what they received; the one with the highest
   replayed LSN is promoted, the other re-pointed to it (a reload), the new primary's
   `synchronous_standby_names` names it. Nobody tells the API or the workers: they reconnect
   by themselves.
5. The clock walks through reconciliation and settlement until every notification is final;
   then the checks: every 202 seen before the kill exists on the new primary (0 lost), every
   notification final, every event chain whole, every consumer saw every event of its DV
   (0 skipped) without a 410 (a promotion continues the xid series: no epoch raise), and the
   figures: the intake's unavailability window, the replication lag seen, and one feed page's
   latency on the standby vs the new primary.
"""

import itertools
import json
import signal
import statistics
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any, TextIO

import httpx
import psycopg

from nmc.admin import onboarding as admin
from nmc.config import Settings
from nmc.database import connect, with_overrides
from nmc.errors import NmcError
from nmc_dev.demo.display import Display
from nmc_dev.drill.clusters import Node, ReplicaSet, lsn_number
from nmc_dev.interrupt import EXIT_INTERRUPTED, raise_interrupt
from nmc_dev.pg_binaries import server_bindir
from nmc_dev.queries import QUERIES
from nmc_dev.soak import checks, evidence, workload
from nmc_dev.soak.checks import Verdict
from nmc_dev.soak.consumer import FeedConsumer
from nmc_dev.soak.intake import Intake
from nmc_dev.soak.run import (
    DAY,
    DAYS_MAX,
    RECONCILIATION_STEPS,
    WORKER_HTTP_TIMEOUT_S,
    WORKER_KINDS,
    Options,
    PhaseTimeout,
    Soak,
    _free_port,
)
from nmc_dev.stack import LocalStack

DATABASE = "nmc_drill"
KILL_AT = 0.4  # of the intake accepted
STANDBYS = ("s1", "s2")
LATENCY_CALLS = 30
SAMPLE_S = 0.25
CURSOR_AGE = "60 days"
QUIET_STEP_S = 5.0
LEASE_STEP = timedelta(minutes=3)  # past the 2-minute lease and the first backoffs


@dataclass
class Failover:
    """What happened around the kill, for the summary."""

    killed_at: float | None = None
    promoted_at: float | None = None
    repointed_at: float | None = None
    promoted: str = ""
    lsns: dict[str, str] = field(default_factory=dict)  # standby -> replayed LSN at the kill
    acknowledged_before: set[str] = field(default_factory=set)  # ids in 202s before the kill
    found_after: int = 0
    error: str | None = None


class Lag:
    """Samples pg_stat_replication on whichever node is primary: the most WAL a standby was
    behind and the longest replay lag the primary measured."""

    def __init__(self, replicas: ReplicaSet) -> None:
        self.replicas = replicas
        self.max_bytes = 0
        self.max_seconds = 0.0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="drill-lag", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            primary = self.replicas.primary
            if primary is None or not primary.running:
                continue
            try:
                with primary.connect() as conn:
                    rows = conn.execute(
                        "SELECT pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(),"
                        " replay_lsn)::bigint, extract(epoch FROM replay_lag)::float8"
                        " FROM pg_catalog.pg_stat_replication"
                    ).fetchall()
            except psycopg.Error:
                continue  # the primary is being lost or promoted
            for lag_bytes, lag_seconds in rows:
                self.max_bytes = max(self.max_bytes, int(lag_bytes or 0))
                self.max_seconds = max(self.max_seconds, float(lag_seconds or 0.0))
            self.samples += 1


class RecordingConsumer(FeedConsumer):
    """The soak's consumer, recording every event id of every page it read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.event_ids: Counter[str] = Counter()
        client = self.reader.client
        read = client.read_changes

        def read_changes(cursor: str | None = None, limiet: int | None = None):
            page = read(cursor, limiet)
            with self._lock:
                self.event_ids.update(str(event["id"]) for event in page.events)
            return page

        client.read_changes = read_changes  # type: ignore[method-assign]


def run(settings: Settings, options: Options, out: TextIO = sys.stdout) -> int:
    if server_bindir() is None:
        raise NmcError("nmc drill needs the PostgreSQL server programs (see `nmc demo`)")
    if options.count < workload.MIN_COUNT:
        raise NmcError(f"--count must be at least {workload.MIN_COUNT}")
    home = settings.home / "drill"
    replicas = ReplicaSet(settings, home / "clusters", [_free_port() for _ in range(3)])
    display = Display(out, tty=options.tty)
    drill: FailoverDrill | None = None
    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        display.note(f"starting a primary and two synchronous standbys in {replicas.directory}")
        replicas.start_primary("p", synchronous_standbys=STANDBYS)
        for name in STANDBYS:
            replicas.add_standby(name)
        drill = FailoverDrill(replicas, _stack(settings, replicas, options), options, display)
        return drill.run()
    except KeyboardInterrupt:
        display.note("interrupted")
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
        display.close()
        if drill is not None:
            drill.shut_down()
        replicas.remove()


def multi_host_url(nodes: list[Node], database: str, attrs: str, user: str = "postgres") -> str:
    hosts = ",".join(node.host_port for node in nodes)
    return f"postgresql://{user}@{hosts}/{database}?target_session_attrs={attrs}&connect_timeout=2"


def _stack(settings: Settings, replicas: ReplicaSet, options: Options) -> LocalStack:
    nodes = list(replicas.nodes.values())
    primary_url = multi_host_url(nodes, DATABASE, "read-write")
    standbys_first = [n for n in nodes if n.name != "p"] + [n for n in nodes if n.name == "p"]
    replica_url = multi_host_url(standbys_first, DATABASE, "prefer-standby", user="nmc_api")
    home = settings.home / "drill"
    own = replace(settings, home=home, database_url=primary_url)
    return LocalStack(
        own,
        workers=options.workers,
        state_dir=home / "stack",
        database=DATABASE,
        worker_args=("--kinds", WORKER_KINDS),
        child_env={
            "NMC_HTTP_TIMEOUT": str(WORKER_HTTP_TIMEOUT_S),
            "NMC_API_REPLICA_DATABASE_URL": replica_url,
        },
    )


class FailoverDrill(Soak):
    """The soak's clients and waiting (nmc_dev.soak.run.Soak), with a failover for chaos."""

    def __init__(
        self, replicas: ReplicaSet, stack: LocalStack, options: Options, display: Display
    ) -> None:
        super().__init__(stack, options, display)
        self.replicas = replicas
        self.failover = Failover()
        self.lag = Lag(replicas)
        self._last_move = time.monotonic()
        self.consumers: dict[str, RecordingConsumer] = {}  # type: ignore[assignment]

    def run(self) -> int:
        note, options, stack = self.display.note, self.options, self.stack
        started = time.monotonic()
        stack.start()
        note(f"NMC up in {time.monotonic() - started:.1f} s (API and {options.workers} workers "
             f"on the primary, feed reads on the standbys); logs in {stack.log_dir}")  # fmt: skip
        self.work = workload.build(options.count, marker=workload.new_marker(),
                                   seed=options.seed or 9)  # fmt: skip
        self._onboard_quietly()
        self.intake = Intake(stack.api_url, self._token, self.counts, clock=stack.now)
        for dv in workload.DVS:
            consumer = RecordingConsumer(dv.oin, stack.api_url, self._token, self.counts)
            self.consumers[dv.oin] = consumer
            consumer.start()
        self.lag.start()
        killer = threading.Thread(target=self._fail_over, name="drill-failover", daemon=True)
        killer.start()
        failure = None
        try:
            self._phases(killer)
        except PhaseTimeout as timeout:
            failure = str(timeout)
            note(failure)
        self.lag.stop()
        self._catch_up_feed()
        return self._verdict(failure, time.monotonic() - started)

    def _onboard_quietly(self) -> None:
        """The soak's onboarding without NotifyNL's faults: this drill's chaos is the loss
        of the primary."""
        assert self.work  # noqa: S101
        for dv in workload.DVS:
            # Cursors live longer than the clock walk: any 410 here would be the failover's.
            document = replace(dv, max_cursorleeftijd=CURSOR_AGE).document()
            path = self.stack.state_dir / f"dv-{dv.oin}.json"
            path.write_text(json.dumps(document, indent=2) + "\n")
            admin.apply_dv(
                self.stack.admin_settings, path, notify_environ=self.stack.notify_environ()
            )
        with httpx.Client(timeout=60) as http:
            http.post(self.stack.profielservice_url + "/_sim/parties",
                      json=self.work.parties).raise_for_status()  # fmt: skip

    def _phases(self, killer: threading.Thread) -> None:
        assert self.work and self.intake  # noqa: S101
        note, options = self.display.note, self.options
        jobs = self.work.batches()
        note(f"submitting {options.count} notifications over at least "
             f"{options.submit_seconds:.0f} s; the primary is lost at {KILL_AT:.0%}")  # fmt: skip
        seconds = self.intake.submit_all(
            jobs, threads=options.intake_threads, min_seconds=options.submit_seconds
        )
        note(f"intake done in {seconds:.1f} s: {self.intake.accepted} accepted")
        self.timeline.append(f"intake {seconds:.0f} s")
        killer.join(timeout=self.options.timeout_s)
        if self.failover.error:
            raise PhaseTimeout(f"the failover failed: {self.failover.error}")
        self._until(self._quiet_moving_clock, "the sends and receipts to finish", phase="send")
        for step, label in RECONCILIATION_STEPS:
            self.stack.advance_clock(step)
            self._until(self._quiet, f"reconciliation ({label})")
        for _ in range(DAYS_MAX):
            self.stack.advance_clock(DAY)
            self._until(self._quiet, "a day")
            if self._all_terminal():
                break
        self._until(lambda: self._all_terminal() and self._quiet(), "a quiet pipeline",
                    phase="settle")  # fmt: skip

    def _quiet_moving_clock(self) -> bool:
        """Quiet, or else every few seconds the clock a lease further (as the soak's chaos
        does): a claim or commit the failover broke is deferred with a backoff or waits for
        its lease to run out, which only the NMC clock ends."""
        if self._quiet():
            return True
        now = time.monotonic()
        if now - self._last_move > QUIET_STEP_S:
            self.stack.advance_clock(LEASE_STEP)
            self._last_move = now
        return False

    # ------------------------------------------------------------------ the failover

    def _fail_over(self) -> None:
        f, note = self.failover, self.display.note
        try:
            due = KILL_AT * self.options.count
            deadline = time.monotonic() + self.options.timeout_s
            while self.intake is None or self.intake.accepted < due:
                if time.monotonic() > deadline:
                    raise NmcError("the intake never reached the kill point")
                time.sleep(0.05)
            old = self.replicas.primary
            assert old is not None  # noqa: S101
            with self.intake._lock:  # the ids every client has seen in a 202 so far
                f.acknowledged_before = {i for ids in self.intake.ids_by_dvref.values()
                                         for i in ids}  # fmt: skip
            f.killed_at = time.monotonic()
            old.kill()
            note(f"primary lost (SIGKILL) with {len(f.acknowledged_before)} notifications "
                 "acknowledged (202)")  # fmt: skip
            standbys = [self.replicas.nodes[name] for name in STANDBYS]
            replayed = {s.name: self.replicas.wait_replayed(s).replay for s in standbys}
            f.lsns = {name: str(lsn) for name, lsn in replayed.items()}
            best = max(standbys, key=lambda s: lsn_number(replayed[s.name]))
            other = next(s for s in standbys if s is not best)
            self.replicas.promote(best)
            f.promoted, f.promoted_at = best.name, time.monotonic()
            self.replicas.repoint(other, best)
            best.set(synchronous_standby_names=f"ANY 1 ({other.name})")
            f.repointed_at = time.monotonic()
            note(f"promoted {best.name} (replayed {replayed[best.name]}; {other.name} "
                 f"{replayed[other.name]}) in {f.promoted_at - f.killed_at:.1f} s; "
                 f"{other.name} follows it")  # fmt: skip
            f.found_after = self._found(f.acknowledged_before)
        except Exception as error:  # reported as a failed phase
            f.error = f"{type(error).__name__}: {error}"

    def _found(self, ids: set[str]) -> int:
        with connect(self.stack.admin_url) as conn:
            present = {row[0] for row in conn.execute(QUERIES["soak_notificaties"])}
        return len(ids & present)

    # ------------------------------------------------------------------ the verdict

    def _verdict(self, failure: str | None, seconds: float) -> int:
        assert self.work and self.intake  # noqa: S101
        stack, f = self.stack, self.failover
        alive = {name: stack.running(name) for name in stack.children}
        latency = self._page_latency()
        for name in [*stack.worker_names, "api"]:
            stack.stop_child(name)
        database = evidence.read_database(stack.admin_url)
        event_ids = _event_ids(stack.admin_url)
        self.stop_everything()

        lost = Verdict("every 202 seen before the kill exists on the new primary")
        for notificatie_id in sorted(f.acknowledged_before - set(database.notificaties)):
            lost.violation(f"{notificatie_id}: not on {f.promoted or 'the new primary'}")
        lost.figure = (f"{len(f.acknowledged_before)} acknowledged before the kill, "
                       f"{f.found_after} found right after the promotion, "
                       f"{len(f.acknowledged_before) - lost.count} at the end")  # fmt: skip
        verdicts = [
            lost,
            *checks.intake(self.intake.ids_by_dvref, self.options.count, self.intake.failed,
                           database.notificaties),
            *checks.event_chains(database.notificaties, database.events, database.allowed),
            checks.feed(database.notificaties,
                        {oin: c.held() for oin, c in self.consumers.items()}),
            self._feed_complete(database, event_ids),
            _processes(alive),
        ]  # fmt: skip
        if failure:
            verdicts.insert(0, Verdict("every phase finished in time", count=1,
                                       examples=[failure]))  # fmt: skip
        self._summary(verdicts, latency, seconds)
        return checks.exit_code(verdicts)

    def _feed_complete(self, database, event_ids: dict[int, set[str]]) -> Verdict:
        verdict = Verdict("every consumer read every event of its DV, none needed a 410")
        dv_of = {row.id: row.dv_id for row in database.notificaties.values()}
        repeats = 0
        for oin, consumer in sorted(self.consumers.items()):
            dv_ids = {dv_of[i] for i in consumer.held() if i in dv_of}
            expected = set().union(*(event_ids.get(d, set()) for d in dv_ids))
            seen = set(consumer.event_ids)
            missing = expected - seen
            if missing:
                verdict.violation(f"consumer {oin[-3:]}: {len(missing)} events never read")
            if seen - expected:
                verdict.violation(f"consumer {oin[-3:]}: {len(seen - expected)} unknown events")
            if consumer.restarts:
                verdict.violation(f"consumer {oin[-3:]}: {consumer.restarts} snapshot restarts")
            repeats += sum(n - 1 for n in consumer.event_ids.values())
        total = sum(len(c.event_ids) for c in self.consumers.values())
        verdict.figure = (f"{total} events read, 0 skipped allowed; {repeats} read again "
                          "(a page whose acknowledgement failed is read once more)")  # fmt: skip
        return verdict

    def _page_latency(self) -> dict[str, tuple[float, float, int]]:
        """The same feed page (the busiest DV's first 1000 events), read LATENCY_CALLS times
        as nmc_api with nmc.read_feed_pagina on the new primary and on the other standby:
        (median ms, p95 ms, events)."""
        results: dict[str, tuple[float, float, int]] = {}
        primary = self.replicas.primary
        if primary is None:
            return results
        with connect(self.stack.admin_url) as conn:
            row = conn.execute(
                "SELECT e.dv_id FROM nmc.event AS e GROUP BY e.dv_id ORDER BY count(*) DESC LIMIT 1"
            ).fetchone()
        if row is None:
            return results
        for node in self.replicas.nodes.values():
            if not node.running:
                continue
            if node is not primary:
                self.replicas.wait_caught_up(node)
            role = "primary" if node is primary else "standby"
            url = with_overrides(node.url("api", DATABASE), user="nmc_api")
            timings = []
            with psycopg.connect(url, autocommit=True) as conn:
                for _ in range(LATENCY_CALLS + 3):
                    begin = time.perf_counter()
                    page = conn.execute(QUERIES["read_feed_pagina"], {
                        "dv_id": row[0], "epoch": None, "xid": None, "event_id": None,
                        "uitgegeven_op": None, "limiet": 1000, "max_lag": None,
                    }).fetchone()[0]  # fmt: skip
                    timings.append((time.perf_counter() - begin) * 1000)
            timings = sorted(timings[3:])  # the first calls warm the plan and the cache
            p95 = timings[int(len(timings) * 0.95) - 1]
            results[f"{role} {node.name}"] = (statistics.median(timings), p95,
                                              len(page["events"]))  # fmt: skip
        return results

    def _summary(self, verdicts: list[Verdict], latency, seconds: float) -> None:
        assert self.intake  # noqa: S101
        out, f = self.display.out, self.failover
        self.display.close()
        window = self._unavailability()
        out.write(f"\nFailover drill: {self.options.count} notifications, "
                  f"{len(workload.DVS)} DVs, {self.options.workers} workers, {seconds:.0f} s "
                  f"({', '.join(self.timeline)})\n\n")  # fmt: skip
        promote_s = (f.promoted_at - f.killed_at) if f.promoted_at and f.killed_at else None
        lines = [
            f"primary lost (SIGKILL of every process) after "
            f"{len(f.acknowledged_before)} acknowledged notifications; replayed LSNs "
            f"{', '.join(f'{k} {v}' for k, v in sorted(f.lsns.items()))}; promoted "
            f"{f.promoted or '-'}"
            + (f" in {promote_s:.1f} s after the kill" if promote_s is not None else ""),
            f"notifications acknowledged before the kill and found after it: "
            f"{f.found_after} of {len(f.acknowledged_before)}",
            "intake unavailability window: "
            + (f"{window:.1f} s without a 202 around the kill (the longest gap between two "
               "answers, client retries with backoff included)" if window is not None
               else "no 202 after the kill"),
            f"intake answers: {_figures(self.counts.of('intake'))}",
            f"feed answers: {_figures(self.counts.of('feed'))}",
            f"replication lag seen: up to {self.lag.max_seconds:.3f} s replay lag, "
            f"{self.lag.max_bytes} bytes of WAL behind ({self.lag.samples} samples)",
            "feed page latency (nmc.read_feed_pagina, same page, same run): " + "; ".join(
                f"{name} median {med:.1f} ms, p95 {p95:.1f} ms ({n} events)"
                for name, (med, p95, n) in sorted(latency.items())
            ),
            "feed: " + "; ".join(
                f"{c.oin[-3:]}: {c.events} events in {c.pages} acknowledged pages, "
                f"{c.restarts} snapshot restarts (410)"
                for c in self.consumers.values()
            ),
        ]  # fmt: skip
        out.write("".join(f"  {line}\n" for line in lines) + "\n")
        checks.write_verdicts(out, verdicts)

    def _unavailability(self) -> float | None:
        """The longest stretch without an intake 202 from the last one before the kill on:
        a 202 that arrives just after the kill committed before it, so the gap counts, not
        the first answer."""
        killed = self.failover.killed_at
        if killed is None:
            return None
        times = self.counts.times_of("intake", "202")
        last_before = max((t for t in times if t <= killed), default=killed)
        around = [t for t in times if t >= last_before]
        gaps = [b - a for a, b in itertools.pairwise(around) if b > killed]
        return max(gaps, default=None)


def _event_ids(admin_url: str) -> dict[int, set[str]]:
    with connect(admin_url) as conn:
        rows = conn.execute(QUERIES["drill_event_ids"]).fetchall()
    found: dict[int, set[str]] = {}
    for dv_id, event_id in rows:
        found.setdefault(dv_id, set()).add(str(event_id))
    return found


def _processes(alive: dict[str, bool]) -> Verdict:
    verdict = Verdict("the API, the workers and the simulators rode it out (none exited)")
    for name, running in sorted(alive.items()):
        if not running:
            verdict.violation(f"{name} exited")
    verdict.figure = f"{sum(alive.values())} of {len(alive)} still running"
    return verdict


def _figures(counts) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"
