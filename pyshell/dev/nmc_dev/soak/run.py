"""`nmc soak`: N notifications through a whole local NMC under chaos, then the promises checked.

1. Start a LocalStack on a cluster of its own ($NMC_HOME/soak, a free port: the shared one
   is never touched, and this one may be restarted): PostgreSQL, a fresh database, the
   simulators, the API and several workers (NMC_HTTP_TIMEOUT 2 s).
2. Onboard three DVs, seed the Profielservice, set NotifyNL's faults: 20% of calls fail
   (500 and 503; a hang without acceptance; an acceptance whose answer hangs past the
   worker's timeout), 30% of callbacks duplicated, all reordered, 5% lost.
3. A feed consumer per DV starts and runs to the end; the chaos starts (nmc_dev.soak.chaos):
   worker SIGKILLs, Profielservice outages, the clock past the lease every few seconds,
   once 40% of the intake is accepted, a PostgreSQL restart (fast shutdown), and NotifyNL's
   refusals for a while: a team-only key from 20%, a template edit from 50%.
4. Submit every notification over the API (nmc_client; singles and batches, both regies,
   every DV); wait until the pipeline is quiet.
5. The clock walks through reconciliation (+1 h 5 min, +5 h, +18 h) and then a day at a
   time through settlement (7 days) and NotifyNL's retention, waiting for a quiet pipeline
   after each step. Then calm (no more kills or outages) and wait until every notification
   is terminal, the pipeline quiet and every consumer holds the database's versions.
6. Stop the workers and the API, read the database, the simulators and every log, run the
   checks (nmc_dev.soak.checks), print the summary; exit 1 on any violation.
"""

import json
import signal
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import TextIO

import httpx
import psycopg

from nmc.admin import onboarding as admin
from nmc.config import Settings
from nmc.errors import NmcError
from nmc.feed.cloudevents import event_source
from nmc.worker.config import KINDS
from nmc_dev.demo.display import STATUSES, Display, table
from nmc_dev.demo.watch import LIFECYCLE_KINDS, parse_metrics, pipeline_quiet
from nmc_dev.embedded_db import EmbeddedCluster, Status
from nmc_dev.interrupt import EXIT_INTERRUPTED, raise_interrupt
from nmc_dev.pg_binaries import server_bindir
from nmc_dev.soak import checks, evidence, privacy, proofs, workload
from nmc_dev.soak.chaos import Chaos, ChaosPlan
from nmc_dev.soak.consumer import FeedConsumer
from nmc_dev.soak.httpcount import HttpCounts
from nmc_dev.soak.intake import Intake
from nmc_dev.stack import LocalStack
from nmc_dev.stack.local import NMC_OIN

DATABASE = "nmc_soak"
WORKER_HTTP_TIMEOUT_S = 2.0
NOTIFYNL_FAULTS = {
    # 429s injected as faults (a RateLimitError body) are counted apart from the limits.
    "error_rate": {"429": 0.02, "500": 0.06, "503": 0.04},
    "timeout_rate": 0.04,  # hangs, nothing accepted
    "accept_timeout_rate": 0.04,  # accepted, the answer hangs
    "duplicate_rate": 0.3,
    "reorder": True,
    "lose_rate": 0.05,
}
# The hang outlasts the worker's timeout, so a hang is a timeout to the worker.
# NotifyNL's rate limit as upstream counts it (a token bucket of 1000 refilled at 50 a second):
# the NMC's own pace (3000 a minute less reconciliation's share, bursts of 45) never meets it.
NOTIFYNL_CONFIG = {
    "hang_s": 2 * WORKER_HTTP_TIMEOUT_S,
    "reorder_window_s": 1.0,
    "rate_limit": 3000,
    "rate_limit_mode": "bucket",
}
POSTGRES_RESTART_AT = 0.4  # of the intake accepted
# The clock walks through reconciliation (asks after 1, 6 and 24 hours, then daily) and the
# 7-day settlement term in the steps a real week takes, so every rule fires at its own time
# (one jump of 8 days would put NotifyNL's 7-day retention before the first reconciliation).
RECONCILIATION_STEPS = (
    (timedelta(hours=1, minutes=5), "+1 h 5 min"),
    (timedelta(hours=5), "+5 h"),
    (timedelta(hours=18), "+18 h"),
)
DAY = timedelta(days=1)
DAYS_MAX = 12  # settlement comes after 7 days and 30 minutes; a late resend needs more
# Maintenance deletes done tasks 7 days old (retention): once the clock has walked through
# the settlement term that would take the claim epochs the audit of duplicate e-mails reads.
# It does nothing else a soak of this size needs (the first event partition holds 16M
# transactions).
WORKER_KINDS = ",".join(kind for kind in KINDS if kind != "onderhoud")
SEND = "verzenden"
TOKEN_TTL_S = 8 * 3600
POLL_S = 0.5
RECOVERY_S = 15.0  # intake answers this long after PostgreSQL's start still count as its


@dataclass(frozen=True)
class Options:
    count: int = 20_000
    workers: int = 3
    intake_threads: int = 8
    submit_seconds: float = 20.0  # the intake is spread over at least this long
    phase_timeout_s: float | None = None  # default: 120 s + 25 ms per notification
    seed: int | None = None
    tty: bool = True

    @property
    def timeout_s(self) -> float:
        return self.phase_timeout_s or 120.0 + self.count / 40


class PhaseTimeout(NmcError):
    pass


def run(settings: Settings, options: Options, out: TextIO = sys.stdout) -> int:
    if settings.database_url:
        raise NmcError(
            "nmc soak restarts PostgreSQL, so it runs a cluster of its own: unset "
            "NMC_DATABASE_URL (it then uses $NMC_HOME/soak on a free port)"
        )
    if server_bindir() is None:
        raise NmcError("nmc soak needs the PostgreSQL server programs (see `nmc demo`)")
    if options.count < workload.MIN_COUNT:
        raise NmcError(f"--count must be at least {workload.MIN_COUNT}")
    if options.workers < 2:
        raise NmcError("--workers must be at least 2 (one is always being killed)")
    own = _own_cluster_settings(settings)
    stack = LocalStack(
        own,
        workers=options.workers,
        state_dir=own.home / "stack",
        database=DATABASE,
        worker_args=("--kinds", WORKER_KINDS),
        child_env={"NMC_HTTP_TIMEOUT": str(WORKER_HTTP_TIMEOUT_S)},
        notify_templates=admin.notify_templates(*(dv.document() for dv in workload.DVS)),
    )
    display = Display(out, tty=options.tty)
    soak = Soak(stack, options, display)
    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        return soak.run()
    except KeyboardInterrupt:
        display.note("interrupted")
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
        display.close()
        soak.shut_down()


def _own_cluster_settings(settings: Settings) -> Settings:
    """$NMC_HOME/soak on a free port; a cluster a killed soak left running there is stopped
    first (it is the soak's own, and it listens on that run's port)."""
    home = settings.home / "soak"
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o755)  # as root the cluster runs as `postgres`, which must enter it
    own = replace(settings, home=home, db_port=_free_port(), database_url=None)
    cluster = EmbeddedCluster(own)
    if cluster.status() is Status.RUNNING:
        cluster.stop()
    return own


class Soak:
    def __init__(self, stack: LocalStack, options: Options, display: Display) -> None:
        self.stack = stack
        self.options = options
        self.display = display
        self.counts = HttpCounts()
        self.tokens: dict[str, str] = {}
        self.work: workload.Workload | None = None
        self.intake: Intake | None = None
        self.consumers: dict[str, FeedConsumer] = {}
        self.chaos: Chaos | None = None
        self.timeline: list[str] = []  # phase durations for the summary
        self.metrics_text = ""
        self._stopped = False

    # ------------------------------------------------------------------ the phases

    def run(self) -> int:
        note, options, stack = self.display.note, self.options, self.stack
        started = time.monotonic()
        note(f"starting a cluster of its own ({stack.settings.home}), the simulators, the API "
             f"and {options.workers} workers …")  # fmt: skip
        stack.start()
        note(f"up in {time.monotonic() - started:.1f} s; logs in {stack.log_dir}")
        self.work = workload.build(
            options.count, marker=workload.new_marker(), seed=options.seed or 9
        )
        self._onboard()
        self.intake = Intake(stack.api_url, self._token, self.counts, clock=stack.now)
        for dv in workload.DVS:
            self.consumers[dv.oin] = FeedConsumer(dv.oin, stack.api_url, self._token, self.counts)
            self.consumers[dv.oin].start()
        restart_at = POSTGRES_RESTART_AT * options.count
        self.chaos = Chaos(
            stack,
            ChaosPlan(seed=options.seed),
            note,
            postgres_due=lambda: self.intake is not None and self.intake.accepted >= restart_at,
            refusal_due=lambda at: (
                self.intake is not None and self.intake.accepted >= at * options.count
            ),
        )
        self.chaos.start()
        failure = None
        try:
            self._phases()
        except PhaseTimeout as timeout:
            failure = str(timeout)
            note(failure)
        self.chaos.stop()
        self._catch_up_feed()
        return self._verdict(failure, time.monotonic() - started)

    def _phases(self) -> None:
        assert self.work and self.intake and self.chaos  # noqa: S101 - set by run()
        note, options = self.display.note, self.options
        jobs = self.work.batches()
        singles = sum(1 for job in jobs if len(job) == 1 and job[0].single)
        note(f"submitting {options.count} notifications: {singles} one by one, "
             f"{options.count - singles} in {len(jobs) - singles} batches, "
             f"{len(workload.DVS)} DVs, both regies, {options.intake_threads} threads, "
             f"over at least {options.submit_seconds:.0f} s; "
             f"PostgreSQL restarts at {POSTGRES_RESTART_AT:.0%}")  # fmt: skip
        seconds = self.intake.submit_all(
            jobs, threads=options.intake_threads, min_seconds=options.submit_seconds
        )
        answers = self.counts.of("intake")
        note(f"intake done in {seconds:.1f} s: {self.intake.accepted} accepted; answers "
             f"{_figures(answers)}; {self.intake.resubmits} resubmitted")  # fmt: skip
        self.timeline.append(f"intake {seconds:.0f} s")
        self._until(lambda: self.chaos.postgres_restarted, "the PostgreSQL restart")
        self._until(self._quiet, "the sends and receipts to finish", phase="send", next_due=True)

        started = time.monotonic()
        for step, label in RECONCILIATION_STEPS:
            self.chaos.jump(step, label)
            note(f"clock {label}: reconciliation asks NotifyNL about attempts without a "
                 f"receipt ({self._waiting()} notifications not yet final)")  # fmt: skip
            self._until(self._quiet, "reconciliation", next_due=True)
        self.timeline.append(f"reconciliation {time.monotonic() - started:.0f} s")

        started = time.monotonic()
        for day in range(2, DAYS_MAX + 2):
            self.chaos.jump(DAY, "+1 day")
            note(f"clock +1 day (day {day}): reconciliation daily, settlement after 7 days, "
                 f"NotifyNL's retention ({self._waiting()} not yet final)")  # fmt: skip
            self._until(self._quiet, f"day {day}", next_due=True)
            if self._all_terminal():
                break
        self.timeline.append(f"settlement {time.monotonic() - started:.0f} s")
        self.chaos.calm()
        note("calm: no more kills or outages; waiting for the last leases and receipts")
        self._until(lambda: self._all_terminal() and self._quiet(), "a quiet pipeline",
                    phase="calm", next_due=True)  # fmt: skip

    def _waiting(self) -> int:
        return sum(n for s, n in self._status_counts().items() if s not in checks.TERMINAL)

    def _onboard(self) -> None:
        assert self.work  # noqa: S101
        for dv in workload.DVS:
            path = self.stack.state_dir / f"dv-{dv.oin}.json"
            path.write_text(json.dumps(dv.document(), indent=2) + "\n", encoding="utf-8")
            admin.apply_dv(
                self.stack.admin_settings, path, notify_environ=self.stack.notify_environ()
            )
        with httpx.Client(timeout=60) as http:
            http.post(self.stack.profielservice_url + "/_sim/parties",
                      json=self.work.parties).raise_for_status()  # fmt: skip
            sim = self.stack.notifynl_url
            http.post(sim + "/_sim/config", json=NOTIFYNL_CONFIG).raise_for_status()
            http.post(sim + "/_sim/faults", json=NOTIFYNL_FAULTS).raise_for_status()
        self.display.note(
            f"onboarded {len(workload.DVS)} DVs, {len(self.work.parties)} parties at the "
            "Profielservice; NotifyNL: 20% 5xx, 429s and timeouts, upstream's rate limit, 30% "
            "of callbacks duplicated, "
            "reordered, 5% lost"
        )

    # ------------------------------------------------------------------ waiting

    def _until(
        self,
        condition: Callable[[], bool],
        what: str,
        phase: str | None = None,
        *,
        next_due: bool = False,
    ) -> None:
        """Until `condition` holds twice in a row, at most the phase timeout. `next_due`: when
        only deferred sends keep the pipeline busy, the clock moves on to the first one's due
        (a send deferred again and again under the chaos waits up to uitstel_max of NMC time
        per try; the phase waits for its tries, not for its backoff)."""
        started = time.monotonic()
        deadline = started + self.options.timeout_s
        streak = 0
        while True:
            try:
                holds = condition()
            except (httpx.HTTPError, NmcError, ValueError):
                holds = False  # the API or the database is restarting
            streak = streak + 1 if holds else 0
            if streak >= 2:  # twice in a row: not a moment between two steps
                break
            if time.monotonic() > deadline:
                raise PhaseTimeout(
                    f"gave up after {self.options.timeout_s:.0f} s waiting for {what}; "
                    f"what keeps the pipeline busy:\n  {self._busy()}"
                )
            if next_due and not holds:
                self._skip_to_next_due()
            self._progress()
            time.sleep(POLL_S)
        if phase:
            self.timeline.append(f"{phase} {time.monotonic() - started:.0f} s")

    def _busy(self) -> str:
        """The tasks that keep the pipeline busy (evidence.describe_busy), or why not read."""
        try:
            return evidence.describe_busy(evidence.read_busy(self.stack.admin_url, LIFECYCLE_KINDS))
        except (psycopg.Error, NmcError) as error:
            return f"(not read: {type(error).__name__})"

    def _skip_to_next_due(self) -> None:
        """When nothing is due or claimed and no callback is under way, but a deferred send
        still waits: move the clock to its due (the phase's own move, as the reconciliation
        steps are; no lease is running, so none is cut short)."""
        assert self.chaos  # noqa: S101
        try:
            # Earliest due first: a claimed or claimable task sorts before any deferred one.
            first = evidence.read_busy(self.stack.admin_url, LIFECYCLE_KINDS, limit=1)
            if not (first and first[0].soort == SEND and first[0].staat == "open"
                    and first[0].due_s > 0):  # fmt: skip
                return
            callbacks = httpx.get(self.stack.notifynl_url + "/_sim/callbacks", timeout=30).json()
        except (httpx.HTTPError, psycopg.Error, NmcError, ValueError, KeyError):
            return  # restarting: the next poll looks again
        if not callbacks["pending_tasks"]:
            self.chaos.skip(timedelta(seconds=first[0].due_s + 1))

    def _metrics(self) -> list[tuple[str, dict[str, str], float]]:
        response = httpx.get(self.stack.api_url + "/metrics", timeout=10)
        response.raise_for_status()
        self.metrics_text = response.text
        return parse_metrics(response.text)

    def _status_counts(self, samples=None) -> dict[str, int]:
        samples = samples if samples is not None else self._metrics()
        return {
            labels["status"]: int(value)
            for name, labels, value in samples
            if name == "nmc_notificaties" and "status" in labels
        }

    def _quiet(self) -> bool:
        """Nothing due or claimed (nmc_dev.demo.watch), no send waiting (a deferred one is not
        due yet, but a clock jump would put it past its geldigTot) and no callback under
        way at NotifyNL."""
        samples = self._metrics()
        if not pipeline_quiet(samples):
            return False
        sending = any(
            name == "nmc_taken" and labels.get("soort") == "verzenden" and value > 0
            and labels.get("staat") in ("open", "claimed")
            for name, labels, value in samples
        )  # fmt: skip
        if sending:
            return False
        callbacks = httpx.get(self.stack.notifynl_url + "/_sim/callbacks", timeout=30).json()
        return callbacks["pending_tasks"] == 0

    def _all_terminal(self) -> bool:
        counts = self._status_counts()
        return sum(counts.values()) > 0 and not any(
            counts.get(s) for s in STATUSES if s not in checks.TERMINAL
        )

    def _progress(self) -> None:
        try:
            counts = self._status_counts(parse_metrics(self.metrics_text))
        except ValueError:
            counts = {}
        self.display.counts(counts, self._chaos_text())

    def _chaos_text(self) -> str:
        if not self.chaos:
            return ""
        f = self.chaos.figures
        feed = sum(c.events for c in self.consumers.values())
        return (f"kills {f.kills}, outages {f.outages}, clock +{_duration(f.clock_moved)}, "
                f"feed events {feed}")  # fmt: skip

    def _catch_up_feed(self) -> None:
        """Until every consumer holds the database's version of each notification (bounded)."""
        url = self.stack.admin_url

        def caught_up() -> bool:
            held = {}
            for consumer in self.consumers.values():
                held.update({i: h.versie for i, h in consumer.held().items()})
            return held == evidence.read_versions(url)

        try:
            self._until(caught_up, "the feed consumers to catch up", phase="feed")
        except PhaseTimeout as timeout:
            self.display.note(str(timeout))
        for consumer in self.consumers.values():
            consumer.stop()

    # ------------------------------------------------------------------ the verdict

    def _verdict(self, failure: str | None, seconds: float) -> int:
        assert self.work and self.intake and self.chaos  # noqa: S101
        stack = self.stack
        with httpx.Client(timeout=30) as http:
            self.metrics_text = http.get(stack.api_url + "/metrics").text

        # Every terminal notification's delivery proof, as its DV fetches and verifies it:
        # once while the workers still run (late receipts, reconciliation, settlement) and
        # once when nothing moves; a final one must not have changed between the two (all at
        # once: the proof call rate is lifted for it).
        def fetch_proofs() -> proofs.ProofEvidence:
            return proofs.fetch(
                stack.api_url + "/api/nmc/v1",
                {oin: list(c.held()) for oin, c in self.consumers.items()},
                issuer=event_source({"NMC_OIN": NMC_OIN}),
                token_for=self._token,
            )

        evidence.lift_proof_call_rate(stack.admin_url)
        eerder = fetch_proofs()
        for name in stack.worker_names:  # their logs are complete, nothing moves
            stack.stop_child(name)
        bewijzen = fetch_proofs()
        stack.stop_child("api")
        database = evidence.read_database(stack.admin_url)
        sims = evidence.read_simulators(stack.notifynl_url, stack.profielservice_url,
                                        stack.ldv_url)  # fmt: skip
        worker_logs = [stack.log_dir / f"{name}.log" for name in stack.worker_names]
        send_log = evidence.read_send_log(worker_logs)
        outputs = [
            *evidence.log_texts([*sorted(stack.log_dir.glob("*.log")), self._postgres_log()]),
            ("LDV records", json.dumps(sims.ldv_records)),
            ("/metrics", self.metrics_text),
            ("task errors", "\n".join(database.task_errors)),
            ("delivery proofs", proofs.texts(bewijzen)),
        ]
        self.stop_everything()

        counts = checks.in_flight(sims.accepted_per_reference, send_log, database.send_epochs)
        verdicts = [
            *checks.intake(self.intake.ids_by_dvref, self.options.count, self.intake.failed,
                           database.notificaties),
            checks.intake_during_restart(self.counts.of("intake"), self._restart_answers(),
                                         self.chaos.figures.postgres_restart_error),
            *checks.event_chains(database.notificaties, database.events, database.allowed),
            checks.feed(database.notificaties,
                        {oin: c.held() for oin, c in self.consumers.items()}),
            checks.afleverbewijzen(database.notificaties, database.events, bewijzen.claims,
                                   bewijzen.failures,
                                   {oin: c.held() for oin, c in self.consumers.items()}),
            checks.afleverbewijzen_vast(eerder.claims, bewijzen.claims),
            *checks.duplicates(counts, sims.sends_per_reference),
            checks.notifynl_limits(sims.limits),
            checks.privacy(privacy.scan(outputs, self.work.personal), len(outputs)),
            checks.processes(self.chaos.figures.unexpected_exits,
                             self.chaos.figures.restart_failures),
            *checks.refusals(sims.refused, sims.accepted_per_reference, database.attempt_of,
                             database.notificaties),
        ]  # fmt: skip
        if failure:
            verdicts.insert(0, checks.Verdict("every phase finished in time", count=1,
                                              examples=[failure]))  # fmt: skip
        self._print_summary(database, sims, send_log, verdicts, seconds)
        return checks.exit_code(verdicts)

    def _restart_answers(self) -> dict[str, int] | None:
        """The intake answers from the shutdown until RECOVERY_S after the start (a request
        that waited for a connection, or met a pooled connection the shutdown broke)."""
        assert self.chaos  # noqa: S101
        window = self.chaos.figures.postgres_restart_window
        if window is None:
            return None
        return self.counts.between("intake", window[0], window[1] + RECOVERY_S)

    def _postgres_log(self) -> Path:
        return EmbeddedCluster(self.stack.settings).log_file

    def _print_summary(self, database, sims, send_log, verdicts, seconds: float) -> None:
        assert self.work and self.intake and self.chaos  # noqa: S101
        out, f = self.display.out, self.chaos.figures
        self.display.close()
        finals = Counter((r.status, r.reden or "-") for r in database.notificaties.values())
        out.write(f"\nChaos soak: {self.options.count} notifications, {len(workload.DVS)} DVs, "
                  f"{self.options.workers} workers, {seconds:.0f} s "
                  f"({', '.join(self.timeline)})\n\n")  # fmt: skip
        rows = [(s, r, str(n)) for (s, r), n in sorted(finals.items())]
        out.write(table(("final status", "reden", "count"), rows, right=(2,)) + "\n\n")
        out.write(table(("scenario", "n", "final statuses"), self._per_scenario(database),
                        right=(1,)) + "\n\n")  # fmt: skip
        restart = (f"{f.postgres_restart_s:.1f} s" if f.postgres_restart_s is not None
                   else f"FAILED ({f.postgres_restart_error})")  # fmt: skip
        feed_errors = Counter()
        for consumer in self.consumers.values():
            feed_errors.update(consumer.errors)
        lines = [
            f"intake: {self.intake.accepted} accepted; answers "
            f"{_figures(self.counts.of('intake'))}; {self.intake.resubmits} resubmitted; "
            f"{_figures(self.intake.outcomes)}",
            f"chaos: {f.kills} workers killed (SIGKILL) and {f.restarts} parts restarted; "
            f"{f.outages} Profielservice outages; clock moved {f.clock_moves}x past the lease, "
            f"+{_duration(f.clock_moved)} in all; phase jumps {', '.join(f.jumps)}"
            + (f"; {f.skips}x to a deferred send's due, +{_duration(f.skipped)} in all"
               if f.skips else "")
            + (f"; {f.clock_errors} NotifyNL clock moves uncertain" if f.clock_errors else ""),
            f"PostgreSQL restart (fast shutdown, {self.chaos.plan.postgres_down_s:.0f} s down, "
            f"start): {restart}",
            f"NotifyNL refusals switched on: {', '.join(f.refusal_windows) or 'none'}; "
            f"{sum(1 for k in sims.refused.values() if 'team-only' in k)} attempts refused "
            "for a team-only key, "
            f"{sum(1 for k in sims.refused.values() if 'missing-personalisation' in k)} as "
            "Missing personalisation",
            f"NotifyNL: {sum(sims.send_answers.values())} send calls, answers "
            f"{_figures(sims.send_answers)}; {sims.lookups} lookups by reference; "
            f"{sum(sims.accepted_per_reference.values())} e-mails accepted for "
            f"{len(sims.accepted_per_reference)} attempts",
            f"callbacks: {_figures(sims.callbacks)}; {sims.duplicated_callbacks} receipts sent "
            f"twice; {database.duplicate_ids} duplicate NotifyNL ids recorded on attempts",
            f"Profielservice: answers {_figures(sims.profielservice_answers)}",
            "feed: " + "; ".join(
                f"{c.oin[-3:]}: {c.events} events in {c.pages} acknowledged pages, "
                f"{c.skipped} skipped, {c.restarts} snapshot restarts (410)"
                for c in self.consumers.values()
            ) + (f"; poll errors {_figures(feed_errors)}" if feed_errors else ""),
            f"feed answers: {_figures(self.counts.of('feed'))}",
            f"tasks: {_figures(Counter({f'{s}/{st}': n for s, st, n in database.tasks}))}",
            f"worker logs: {len(send_log.calls)} send calls, {send_log.unreadable_lines} lines "
            "cut off by a SIGKILL",
        ]  # fmt: skip
        out.write("".join(f"  {line}\n" for line in lines) + "\n")
        checks.write_verdicts(out, verdicts)

    def _per_scenario(self, database) -> list[tuple[str, str, str]]:
        assert self.work and self.intake  # noqa: S101
        outcomes: dict[str, Counter] = {s.key: Counter() for s in workload.SCENARIOS}
        for n in self.work.notificaties:
            row = database.notificaties.get(self.intake.id_by_serial.get(n.serial, ""))
            outcomes[n.scenario.key][row.status if row else "-"] += 1
        return [
            (key, str(sum(c.values())), ", ".join(f"{s} {k}" for s, k in c.most_common()))
            for key, c in outcomes.items()
        ]

    # ------------------------------------------------------------------ stopping

    def stop_everything(self) -> None:
        if not self._stopped:
            self._stopped = True
            self.stack.stop()

    def shut_down(self) -> None:
        """Whatever still runs (after an error or Ctrl-C): threads, then every process."""
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            if self.chaos:
                self.chaos.stop()
            for consumer in self.consumers.values():
                consumer.stop()
            if self.intake:
                self.intake.close()
            self.stop_everything()
        finally:
            signal.signal(signal.SIGINT, previous)

    def _token(self, oin: str) -> str:
        if oin not in self.tokens:
            self.tokens[oin] = self.stack.dv_token(oin, ttl_s=TOKEN_TTL_S)
        return self.tokens[oin]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _figures(counts) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


def _duration(delta: timedelta) -> str:
    hours = delta.total_seconds() / 3600
    return f"{hours:.1f} h" if hours >= 1 else f"{delta.total_seconds() / 60:.0f} min"
