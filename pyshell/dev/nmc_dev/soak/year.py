"""`nmc soak --year`: a simulated year of continuous traffic in the shape the project ships,
to prove the NMC's own upkeep (maintenance as tasks, run by every worker) keeps it healthy.

1. A LocalStack on a cluster of its own ($NMC_HOME/year, a free port), with the workers
   docker-compose.yml runs (as many, its `nmc worker` arguments and NMC_* settings, read
   from the file: nmc_dev.soak.yearmeter) and the shipped settings, but for what the simulation
   scales: the retention term (`--term`; the full run keeps the shipped year), the width of
   the event partitions (to the xids the simulation hands out, nmc.set_event_partitie_breedte)
   with the partition job looking as often as the workers poll, and the cluster's
   autovacuum_naptime (a simulated day passes in about two seconds).
2. Five DVs (nmc_dev.soak.yeardv): three read the feed (one keeps up, one stops for longer than
   its max cursor age and resumes, one stops early and polls once more at the end), two take
   a webhook (one fails for three weeks and then asks to resume, one fails for longer than
   its max cursor age). Every outcome the simulators give (nmc_dev.soak.workload's scenarios),
   both regies, singles and batches, every day.
3. The clock walks a day at a time: each day's notifications over the real API, then until
   nothing of the lifecycle is due; then the day is measured (tables, partitions, what is
   past its term, sizes). Mid-year the KEK is rotated as an operator would (the new KEK into
   every ring, then active, each a rolling restart); maintenance re-wraps the keys by itself.
   In the first and the last month a throughput probe times intake, send and feed, each
   phase on its own, with the CPU the NMC's processes spent on it.
4. After the last day: a few quiet days until every notification is final, the DVs catch up,
   everything stops; the checks (nmc_dev.soak.yearchecks) and the figures are printed (and the
   day-by-day figures written to $NMC_HOME/year/year.json); exit 1 on any violation.
"""

import json
import signal
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

import httpx
import psycopg
from psycopg import sql

from nmc.adapters.webhook_validatie import ALLOWED_NETWORKS_ENV, Adresbeleid
from nmc.admin import onboarding as admin
from nmc.admin import operations as admin_ops
from nmc.config import Settings
from nmc.crypto.kek_ring import new_kek_ring
from nmc.errors import NmcError
from nmc.feed.cloudevents import event_source
from nmc_client import NmcClient
from nmc_dev.demo.display import Display
from nmc_dev.embedded_db import EmbeddedCluster, Status
from nmc_dev.interrupt import EXIT_INTERRUPTED, raise_interrupt
from nmc_dev.pg_binaries import server_bindir
from nmc_dev.queries import QUERIES
from nmc_dev.sim.server import start_in_thread
from nmc_dev.soak import evidence, privacy, proofs, workload, yearchecks, yearstatements
from nmc_dev.soak.checks import Verdict, exit_code
from nmc_dev.soak.consumer import RETRY
from nmc_dev.soak.httpcount import HttpCounts, counting_client
from nmc_dev.soak.intake import API_BASE, CLIENT_TIMEOUT_S, Intake
from nmc_dev.soak.run import _free_port
from nmc_dev.soak.yeardv import YEAR_DVS, FeedDv, WebhookDv, receiver_app
from nmc_dev.soak.yearmeter import CpuSample, WorkerShape, compose_worker_shape, sample_cpu
from nmc_dev.stack import LocalStack
from nmc_dev.stack.local import NMC_OIN, SIMULATORS

DATABASE = "nmc_year"
DAY = timedelta(days=1)
MONTH_DAYS = 30
TAIL_DAYS_MAX = 16  # after the last day of traffic: settlement (8 days) and erasure need it
INTAKE_THREADS = 4
POLL_S = 0.1
PROGRESS_EVERY = 10  # days between progress lines
TOKEN_TTL_S = 24 * 3600
KEK_NEW = "kek-jaar-2"  # the KEK the mid-year rotation brings in
# A notification is final within 9 days (settlement 7 days and 30 minutes after delivery,
# reconciliation for NotifyNL's 7 days, a resend), and a done task goes 7 days after it: the
# tables are in their steady state once the first term and that life have passed.
LIFE_DAYS = 10
TASK_STEADY_DAYS = 17
# The partition job looks every 5 minutes of the NMC clock, which is ample where 20% of a
# range of 2^24 xids lasts for hours. Here a day's xids go by in two seconds of that clock
# and a throughput probe hands out several hundred xids a second, so with ranges narrowed to
# the simulation the job has to look as often as the workers poll.
PARTITION_JOB_EVERY = "0.5 seconds"
LOOPBACK_NETWORK = "127.0.0.0/8"
AUTOVACUUM_NAPTIME = "1s"
FEED_READS = 5  # the probe reads its events this often: the fastest, the mean CPU
PROBE_SINGLES = 300
PROBE_BATCH = 175
PROBE_SPAN = (0.1, 0.9)  # of the probe's sends: the rate in between
IDLE_MEASURE_S = 1.0
VACUUM_WAIT_S = 10.0


@dataclass(frozen=True)
class YearOptions:
    days: int = 400
    per_day: int = 100
    term: str = "1 year"  # the delivery-proof retention (instellingen.bewijs_bewaartermijn)
    partition_width: int | None = None  # xids per event partition; default from per_day
    probe: int = 1000  # notifications per throughput probe (below one send-budget window)
    # The last month's throughput against the first's. A five-week run on a shared machine
    # does not resolve 10% (one probe to the next differs by more): its CI size guards
    # against a collapse with 0.7, the full run holds 0.9.
    throughput_share: float = yearchecks.THROUGHPUT_SHARE
    seed: int | None = None
    tty: bool = True
    step_timeout_s: float = 120.0

    @property
    def width(self) -> int:
        """About ten days of the run's xids (a notification takes about 4.5 in a day's mix),
        so a term holds several ranges; at least 4096, so the 20% left when the next range
        is made outlasts the half second between two looks of the partition job even while
        a probe hands out xids at its fastest."""
        if self.partition_width:
            return self.partition_width
        return max(4096, 1 << round(self.per_day * 45).bit_length() - 1)


@dataclass
class Schedule:
    """The simulated days on which things happen, scaled to the run's length and term.

    The DVs' troubles (a webhook down for weeks, one down past its max cursor age, a feed
    reader that pauses past its own) come after the first month's probes and end before the
    steady-state window: a webhook that fails holds the log back for as long as its position
    is live, which is meant, but not a state to measure table sizes in. The last month's
    probes come after that window (a burst of one DV's rows), so the window is
    [steady_from, steady_until]."""

    days: int
    term_days: float = 365.0
    stop_day: int = field(init=False)  # the `stops` DV goes quiet
    fail_long: tuple[int, int] = field(init=False)  # the `fails-long` webhook is down
    fail_weeks: tuple[int, int] = field(init=False)  # the `fails-weeks` webhook is down
    pause: tuple[int, int] = field(init=False)  # the `pauses` DV does not poll
    rotation_day: int = field(init=False)
    probe_days: tuple[int, ...] = field(init=False)
    steady_from: int = field(init=False)

    def __post_init__(self) -> None:
        n = self.days
        self.probe_days = (2, 4, n - 6, n - 3)
        self.stop_day = 3
        first = 5
        steady = max(int(self.term_days) + LIFE_DAYS, TASK_STEADY_DAYS)
        last = min(n - 12, max(steady, first + 20) - 3)  # the troubles end by this day
        # Down 3 days longer than its 14-day max cursor age: its position stops holding the
        # log back, and it resumes from it before the oldest of its events is dropped.
        self.fail_long = self._within(n * 15 // 100, 17, first, last)
        weeks = 21 if last - first >= 21 else 14
        self.fail_weeks = self._within(n * 30 // 100, weeks, first, last)
        self.pause = self._within(n * 45 // 100, 16, first, last)  # past its 7 days
        self.steady_from = max(steady, self.fail_long[1], self.fail_weeks[1], self.pause[1]) + 3
        self.rotation_day = n // 2

    @staticmethod
    def _within(start: int, length: int, first: int, last: int) -> tuple[int, int]:
        start = max(first, min(start, last - length))
        return start, start + length

    def steady_until(self) -> int:
        """The last day of the steady-state window: before the last month's probes."""
        return min(d for d in self.probe_days if d in self.last_month()) - 1

    def first_month(self) -> range:
        return range(1, min(MONTH_DAYS, self.days) + 1)

    def last_month(self) -> range:
        return range(max(1, self.days - MONTH_DAYS + 1), self.days + 1)


class StepTimeout(NmcError):
    pass


def run(settings: Settings, options: YearOptions, out: TextIO = sys.stdout) -> int:
    if settings.database_url:
        raise NmcError("nmc soak --year runs a cluster of its own: unset NMC_DATABASE_URL")
    if server_bindir() is None:
        raise NmcError("nmc soak --year needs the PostgreSQL server programs (see `nmc demo`)")
    if options.days < 30 or options.per_day * options.days < len(workload.SCENARIOS) * 5:
        raise NmcError("--days must be at least 30 and --per-day large enough for every scenario")
    shape = compose_worker_shape(settings.root / "docker-compose.yml")
    home = settings.home / "year"
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o755)  # as root the cluster runs as `postgres`, which must enter it
    own = replace(settings, home=home, db_port=_free_port(), database_url=None)
    if EmbeddedCluster(own).status() is Status.RUNNING:
        EmbeddedCluster(own).stop()  # a killed run's: it is the year run's own
    dvs = tuple(d.dv for d in YEAR_DVS)
    stack = LocalStack(
        own,
        workers=shape.replicas,
        state_dir=home / "stack",
        database=DATABASE,
        worker_args=shape.args,
        # The compose workers' settings, and (wiring, as the URLs are) the webhook DVs'
        # receiver on this machine's loopback, which a webhook may not point at otherwise.
        child_env={**shape.settings, ALLOWED_NETWORKS_ENV: LOOPBACK_NETWORK},
        notify_templates=admin.notify_templates(*(dv.document() for dv in dvs)),
        preload=yearstatements.STATEMENTS_PRELOAD,  # what each statement costs, and its plan
    )
    display = Display(out, tty=options.tty)
    year = Year(stack, shape, options, display)
    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        return year.run()
    except KeyboardInterrupt:
        display.note("interrupted")
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
        display.close()
        year.shut_down()


class Year:
    def __init__(
        self, stack: LocalStack, shape: WorkerShape, options: YearOptions, display: Display
    ) -> None:
        self.stack = stack
        self.shape = shape
        self.options = options
        self.display = display
        self.schedule = Schedule(options.days)  # again with the term, once it is set
        self.counts = HttpCounts()
        self.tokens: dict[str, str] = {}
        self.evidence = yearchecks.YearEvidence()
        self.conn: psycopg.Connection | None = None  # the harness's one measuring connection
        self.backend_pid: int | None = None
        self.intake: Intake | None = None
        self.feed_dvs: dict[str, FeedDv] = {}
        self.webhook_dvs: dict[str, WebhookDv] = {}
        self.receiver = None
        self.work: workload.Workload | None = None
        self.jobs: list[list[list[workload.Notificatie]]] = []
        self.cpu_marks: dict[str, CpuSample] = {}
        self.mark_times: dict[str, float] = {}  # time.monotonic() of each CPU mark
        self.plan_day: yearstatements.PlanDay | None = None
        self.truth_since: datetime | None = None
        self.proofs_checked: set[str] = set()  # the ids whose proof was checked on a last day
        self.unexpected_exits: list[str] = []
        self._stopped = False

    # ------------------------------------------------------------------ the run

    def run(self) -> int:
        note, options, stack = self.display.note, self.options, self.stack
        started = time.monotonic()
        note(f"starting a cluster of its own ({stack.settings.home}), the simulators, the API "
             f"and {self.shape.replicas} workers as docker-compose.yml runs them "
             f"(`nmc worker {' '.join(self.shape.args)}`) …")  # fmt: skip
        stack.start(workers=False)
        self._connect()
        self._configure()
        self._onboard()
        # The workers start once the DVs are there: their first round gives each webhook its
        # position before the first notification (a new webhook starts at the watermark).
        stack.start_workers()
        note(f"up in {time.monotonic() - started:.0f} s; {options.days} days of "
             f"{options.per_day} notifications, term {self.evidence.term_text}, event "
             f"partitions {options.width} xids wide; logs in {stack.log_dir}")  # fmt: skip
        failure = None
        try:
            self._walk()
        except StepTimeout as timeout:
            failure = str(timeout)
            note(failure)
        self.evidence.seconds = time.monotonic() - started
        return self._verdict(failure)

    def _walk(self) -> None:
        schedule, options = self.schedule, self.options
        plan_days = yearstatements.plan_days(schedule.first_month(), schedule.last_month(),
                                             options.days)  # fmt: skip
        yearstatements.reset(self.conn)
        self._mark("start")
        for day in range(1, options.days + 1):
            started = time.monotonic()
            self._plans_before(day, plan_days)
            self._events_before(day)
            self._advance(DAY)
            accepted = self._submit(self.jobs[day - 1])
            submitted = time.monotonic()
            self._until_quiet(f"day {day}")
            quiet_s = time.monotonic() - submitted
            self._measure(day, accepted, time.monotonic() - started)
            self.evidence.steps[-1].quiet_s = quiet_s
            self._proofs_last_day(day)
            if day in schedule.probe_days:
                self._probe(day)
            self._forget()
            self._plans_after(day, plan_days)
            if day == schedule.first_month()[-1]:
                self._mark("first_end")
            if day == schedule.last_month()[0] - 1:
                self._mark("last_start")
            self._progress(day)
        self._mark("last_end")
        self.evidence.statements.evicted = yearstatements.evicted(self.conn)
        for tail in range(1, TAIL_DAYS_MAX + 1):  # no more traffic: every notification ends
            self._plans_before(options.days + tail, plan_days)
            self._advance(DAY)
            self._until_quiet(f"day {options.days + tail}")
            self._measure(options.days + tail, 0, 0.0, tail=True)
            self._proofs_last_day(options.days + tail)
            self._plans_after(options.days + tail, plan_days)
            if self._all_final():
                break
        self._catch_up()
        kept = self._all("year_kept")
        self.evidence.proofs_at_end = self._verify_proofs(kept, "at the end")

    def _mark(self, name: str) -> None:
        """The NMC's CPU and every statement's counters at a month's start or end."""
        self.cpu_marks[name] = self._cpu()
        self.mark_times[name] = time.monotonic()
        self.evidence.statements.marks[name] = yearstatements.snapshot(self.conn)

    def _plans_before(self, day: int, plan_days: dict[str, int]) -> None:
        if day in plan_days.values():
            self.plan_day = yearstatements.PlanDay(self.stack.postgres.cluster.log_file)
            self.plan_day.start(self.conn)

    def _plans_after(self, day: int, plan_days: dict[str, int]) -> None:
        for month, plan_day in plan_days.items():
            if day == plan_day and self.plan_day:
                self.evidence.statements.plans[month] = self.plan_day.end(self.conn)
                self.plan_day = None
                self.display.note(f"day {day}: the plans of "
                                  f"{len(self.evidence.statements.plans[month]):,} statements "
                                  f"logged for the {month} month")  # fmt: skip

    # ------------------------------------------------------------------ setup

    def _connect(self) -> None:
        self.conn = psycopg.connect(self.stack.admin_url, autocommit=True)
        self.backend_pid = self._one("year_backend_pid")["pid"]
        # This cluster is the run's own: its autovacuum looks as often as the simulated days
        # go by (PostgreSQL's default of a minute would be once a month of the year).
        self.conn.execute(sql.SQL("ALTER SYSTEM SET autovacuum_naptime = {}").format(
            sql.Literal(AUTOVACUUM_NAPTIME)))  # fmt: skip
        self.conn.execute("SELECT pg_catalog.pg_reload_conf()")
        yearstatements.untrack(self.conn)
        yearstatements.configure(self.conn)

    def _configure(self) -> None:
        settings = self._one("year_settings", termijn=self.options.term)
        self._one("year_partition_width", breedte=self.options.width)
        self._one("year_partition_job", herhaal_na=PARTITION_JOB_EVERY)
        self.schedule = Schedule(self.options.days, settings["termijn_dagen"])
        self.evidence.term_text = settings["termijn"]
        self.evidence.throughput_share = self.options.throughput_share
        self.evidence.width = self.options.width
        self.evidence.shape = self.shape

    def _onboard(self) -> None:
        stack = self.stack
        dvs = tuple(d.dv for d in YEAR_DVS)
        marker = workload.new_marker()
        self.work = workload.build(
            self.options.per_day * self.options.days,
            marker=marker,
            seed=self.options.seed or 17,
            dvs=dvs,
        )
        per_day = self.options.per_day
        self.jobs = [
            _day_jobs(self.work.notificaties[d * per_day : (d + 1) * per_day])
            for d in range(self.options.days)
        ]
        self._start_receiver()
        hook_base = self.receiver.url
        for year_dv in YEAR_DVS:
            path = stack.state_dir / f"dv-{year_dv.oin}.json"
            document = year_dv.document(hook_base)
            path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
            admin.onboard_dv(stack.admin_settings, path,
                             beleid=Adresbeleid.parse(LOOPBACK_NETWORK),
                             notify_environ=stack.notify_environ())  # fmt: skip
        # The probes time the NMC's own throughput and the simulator limits nothing: its
        # services get a pace far above a probe's sends (NotifyNL's real pace is the budget
        # tests' and the peak day's).
        for service in admin_ops.list_notify_services(stack.admin_settings):
            admin_ops.set_notify_service(
                stack.admin_settings, service["code"], per_minuut=1_000_000, burst=1000
            )
        # The proof checks fetch a day's (and at the end every kept) proof at once: the
        # per-DV proof call rate is lifted for them, as for the soak's verdict.
        evidence.lift_proof_call_rate(stack.admin_url)
        with httpx.Client(timeout=120) as http:
            response = http.post(stack.profielservice_url + "/_sim/parties", json=self.work.parties)
            response.raise_for_status()
        self.evidence.dv_ids = {row["oin"]: row["dv_id"] for row in self._all("year_dv_ids")}
        self.evidence.roles = {d.oin: d.role for d in YEAR_DVS}
        self.intake = Intake(stack.api_url, self._token, self.counts, clock=self._now, dvs=dvs)
        for year_dv in YEAR_DVS:
            if year_dv.way == "feed":
                consumer = FeedDv(year_dv, stack.api_url, self._token, self.counts)
                self.feed_dvs[year_dv.oin] = consumer
                consumer.start()

    def _start_receiver(self) -> None:
        for year_dv in YEAR_DVS:
            if year_dv.way == "webhook":
                self.webhook_dvs[year_dv.oin] = WebhookDv(
                    year_dv, self.stack.api_url, self._token, self.counts
                )
        self.receiver = start_in_thread(receiver_app(self.webhook_dvs))

    def _ring_file(self) -> Path:
        """The KEK ring every NMC process reads at its start (the stack's NMC_KEK_FILE)."""
        return Path(self.stack.secrets["NMC_KEK_FILE"])

    def _add_to_ring(self, kek_id: str, *, active: bool) -> str:
        """Put `kek_id` into the ring (made when missing), active or not; returns the KEK
        that was active before."""
        ring = json.loads(self._ring_file().read_text())
        before = ring["active"]
        if kek_id not in ring["keys"]:
            ring["keys"][kek_id] = new_kek_ring(kek_id)["keys"][kek_id]
        if active:
            ring["active"] = kek_id
        self._ring_file().write_text(json.dumps(ring))
        return before

    # ------------------------------------------------------------------ one day

    def _events_before(self, day: int) -> None:
        schedule, note = self.schedule, self.display.note
        for oin, consumer in self.feed_dvs.items():
            role = consumer.year_dv.role
            if role == "stops" and day == schedule.stop_day:
                consumer.pause()
                note(f"day {day}: DV {oin[-3:]} stops reading its feed (max cursor age 7 days)")
            if role == "pauses" and day == schedule.pause[0]:
                consumer.pause()
                note(f"day {day}: DV {oin[-3:]} stops reading its feed for "
                     f"{schedule.pause[1] - schedule.pause[0]} days")  # fmt: skip
            if role == "pauses" and day == schedule.pause[1]:
                # It reads again after this day's retention ran: what that deleted it missed.
                self.evidence.resumed_at[oin] = self._now() + DAY
                consumer.resume()
                note(f"day {day}: DV {oin[-3:]} reads its feed again (expect a 410)")
        for oin, hook in self.webhook_dvs.items():
            window = (
                schedule.fail_long if hook.year_dv.role == "fails-long" else schedule.fail_weeks
            )
            if day == window[0]:
                hook.failing = True
                note(f"day {day}: DV {oin[-3:]}'s webhook answers 500 for "
                     f"{window[1] - window[0]} days")  # fmt: skip
            if day == window[1]:
                if hook.year_dv.role == "fails-weeks":
                    hook.resume()  # the DV asks the NMC to end the pause
                else:
                    hook.failing = False  # the paused webhook comes back on its own backoff
                note(f"day {day}: DV {oin[-3:]}'s webhook is back")
        if day == schedule.rotation_day:
            self._rotate_kek(day)

    def _rotate_kek(self, day: int) -> None:
        """As docs/production.md has it: the new KEK into every ring, roll; then active, roll.
        Maintenance then re-wraps the data keys by itself."""
        before = self._kek_status()
        old = self._add_to_ring(KEK_NEW, active=False)
        self._roll()
        self._add_to_ring(KEK_NEW, active=True)
        self._roll()
        self.evidence.kek_before = before
        self.evidence.kek_old, self.evidence.kek_new = old, KEK_NEW
        self.evidence.rotation_day = day
        self.display.note(
            f"day {day}: KEK rotated ({KEK_NEW} in every ring, then active; two rolling "
            f"restarts); live keys before: {_kek_text(before)}"
        )

    def _roll(self) -> None:
        for name in ["api", *self.stack.worker_names]:
            self.stack.restart(name)

    def _advance(self, delta: timedelta) -> None:
        self._one("year_advance_clock", duur=f"{delta.total_seconds()} seconds")
        response = httpx.post(
            f"{self.stack.notifynl_url}/_sim/clock", json={"advance_s": delta.total_seconds()}
        )
        response.raise_for_status()

    def _submit(self, jobs: list[list[workload.Notificatie]]) -> int:
        assert self.intake  # noqa: S101
        before = self.intake.accepted
        self.intake.submit_all(jobs, threads=INTAKE_THREADS, min_seconds=0)
        return self.intake.accepted - before

    def _until_quiet(self, what: str) -> None:
        deadline = time.monotonic() + self.options.step_timeout_s
        streak = 0
        while streak < 2:
            if time.monotonic() > deadline:
                raise StepTimeout(f"gave up after {self.options.step_timeout_s:.0f} s waiting "
                                  f"for {what} to be quiet")  # fmt: skip
            streak = streak + 1 if self._quiet() else 0
            if streak < 2:
                time.sleep(POLL_S)

    def _quiet(self) -> bool:
        if not self._one("year_quiet")["stil"]:
            return False
        answer = httpx.get(self.stack.notifynl_url + "/_sim/callbacks?summary=1", timeout=30)
        return answer.json()["pending_tasks"] == 0

    # ------------------------------------------------------------------ measuring

    def _measure(self, day: int, accepted: int, seconds: float, tail: bool = False) -> None:
        ev = self.evidence
        self._update_truth()
        step = self._one("year_step")
        ev.term = step["nu"] - step["bewijs_grens"]
        within = sum(
            1
            for row in ev.truth.values()
            if row.terminaal_op is None or row.terminaal_op > step["bewijs_grens"]
        )
        sizes = {r["tabel"]: yearchecks.TableSize(r["bytes"], r["levend"], r["dood"],
                                                  r["autovacuums"], r["verwijderd"])
                 for r in self._all("year_sizes")}  # fmt: skip
        rows = {r["tabel"]: r["rijen"] for r in self._all("year_rows")} if day % 2 == 0 else None
        ev.steps.append(
            yearchecks.StepRecord(
                day=day, nu=step["nu"], tail=tail, accepted=accepted, seconds=seconds,
                default_rows=step["default_rijen"], xid_headroom=step["xid_ruimte"],
                over_term={k: step[k] for k in yearchecks.OVER_TERM},
                within_term_db=step["notificaties_binnen_termijn"], within_term_truth=within,
                mislukt=step["mislukt"], sizes=sizes, rows=rows, xid=step["xid"],
            )
        )  # fmt: skip
        if step["sleutels_te_laat"] and len(ev.late_keys) < yearchecks.EXAMPLES:
            ev.late_keys += [
                f"day {day}: {r['id']} {r['status']} since {r['terminaal_op']:%F %T}, wissen "
                f"{r['staat']} due {r['due'] and r['due'].strftime('%F %T')}"
                for r in self._all("year_late_keys")
            ]
        self._measure_partitions(day, step["nu"])
        record = ev.steps[-1]
        record.live = frozenset(n for n, p in ev.partitions.items() if p.dropped_at is None)
        record.held = frozenset(row["naam"] for row in self._all("year_held"))
        record.kept = frozenset(row["naam"] for row in self._all("year_kept_partitions"))
        if day == self.schedule.rotation_day + 1:
            ev.kek_after_a_day = self._kek_status()

    def _update_truth(self) -> None:
        since = (self.truth_since or datetime(2000, 1, 1).astimezone()) - timedelta(hours=1)
        nu = None
        for row in self._all("year_truth", sinds=since):
            self.evidence.truth[row["id"]] = yearchecks.TruthRow(
                row["dv_id"], row["status"], row["reden"], row["versie"], row["terminaal_op"]
            )
        nu = self._now()
        self.truth_since = nu

    def _measure_partitions(self, day: int, nu: datetime) -> None:
        ev = self.evidence
        for row in self._all("year_partitions"):
            record = ev.partitions.get(row["naam"])
            if record is None:
                record = ev.partitions[row["naam"]] = yearchecks.PartitionRecord(
                    row["naam"], row["xid_van"], row["xid_tot"], seen_day=day, seen_at=nu
                )
            record.dropped_at = row["verwijderd_op"]
            if row["gesloten"] and record.dropped_at is None and not record.measured:
                query = sql.SQL(QUERIES["year_partition_youngest"]).format(
                    partitie=sql.Identifier(row["naam"])
                )
                record.youngest = self.conn.execute(query).fetchone()[0]
                record.measured = True

    # ------------------------------------------------------------------ delivery proofs

    def _proofs_last_day(self, day: int) -> None:
        """The proof of every notification on its last day before its term (the next day's
        retention deletes it), as its DV fetches and verifies it: its first events are then
        the oldest of any kept notification, and a partition that went with them shows as a
        gap at sequence 1."""
        rows = [r for r in self._all("year_last_day") if r["id"] not in self.proofs_checked]
        if not rows:
            return
        self.proofs_checked.update(r["id"] for r in rows)
        phase = self._phase()
        self.evidence.proofs_last_day += self._verify_proofs(rows, f"day {day}")
        self.evidence.proof_checks[day] = phase.spent()

    def _verify_proofs(self, rows: list[dict[str, Any]], when: str) -> int:
        """Fetch and verify the proofs of `rows` (id, dv_id), each with its DV's token, with
        the DV client (nmc_client: signature, issuer, id, the chain from sequence 1 to the
        version); a failure is evidence. Returns how many it checked."""
        oin_of = {dv_id: oin for oin, dv_id in self.evidence.dv_ids.items()}
        ids_per_oin: dict[str, list[str]] = {}
        for row in rows:
            ids_per_oin.setdefault(oin_of[row["dv_id"]], []).append(row["id"])
        if not ids_per_oin:
            return 0
        found = proofs.fetch(self.stack.api_url + API_BASE, ids_per_oin,
                             issuer=event_source({"NMC_OIN": NMC_OIN}),
                             token_for=self._token)  # fmt: skip
        if found.failures:
            # The clock runs between the steps too: one that reached its term and went while
            # it was fetched (a 404) was not kept any more.
            kept = {r["id"] for r in self._all("year_still_kept", ids=sorted(found.failures))}
            self.evidence.proof_failures += [
                f"{when}: {notificatie_id}: {reason}"
                for notificatie_id, reason in sorted(found.failures.items())
                if notificatie_id in kept
            ]
        return len(rows)

    def _forget(self) -> None:
        """The simulators drop the history this run does not read, so what a call costs
        them does not grow with the year (they are not the NMC)."""
        for url in (self.stack.notifynl_url, self.stack.ldv_url, self.stack.profielservice_url):
            httpx.post(url + "/_sim/forget", timeout=60).raise_for_status()

    def _cpu(self) -> CpuSample:
        return sample_cpu(self.stack.pids(), self.stack.worker_names, self.backend_pid,
                          SIMULATORS)  # fmt: skip

    def _kek_status(self) -> list[dict]:
        return admin_ops.kek_status(self.stack.admin_settings, None)

    # ------------------------------------------------------------------ the probe

    def _probe(self, day: int) -> None:
        """Intake, send and feed of `probe` notifications of the DV that keeps up, each phase
        on its own, timed, with the CPU the NMC's processes spent on it above their idle
        rounds. Intake: PROBE_SINGLES one by one, the rest in batches, over the API, while the
        workers are held (SIGSTOP: nothing is sent yet). Send: from the workers' release, the
        rate between PROBE_SPAN of NotifyNL's acceptances (their start after the hold and the
        last stragglers are not the rate). Feed: the DV's feed from where it stood before the
        probe, read FEED_READS times without acknowledging (the fastest read counts), once the
        autovacuum after the sends is done."""
        keeper = next(c for c in self.feed_dvs.values() if c.year_dv.role == "keeps-up")
        dv_id = self.evidence.dv_ids[keeper.oin]
        keeper.pause()
        start_cursor = keeper.cursor()
        bodies = self._probe_bodies(day)
        singles, rest = bodies[:PROBE_SINGLES], bodies[PROBE_SINGLES:]
        batches = [rest[i : i + PROBE_BATCH] for i in range(0, len(rest), PROBE_BATCH)]
        batch_ids = [str(uuid.uuid4()) for _ in range(len(batches) + 1)]
        http = counting_client(self.counts, "probe", CLIENT_TIMEOUT_S)
        client = NmcClient(self.stack.api_url + API_BASE, lambda: self._token(keeper.oin),
                           http=http, retry=RETRY)  # fmt: skip
        n = len(bodies)
        try:
            self._until_vacuumed()
            idle = self._idle_cpu()
            self.evidence.idle_rates[day] = idle
            self._hold_workers(signal.SIGSTOP)
            try:
                phase = self._phase()
                for body in singles:  # a single's batch id groups the probe's singles
                    client.submit("decentraal", {**body, "batchId": batch_ids[-1]})
                for batch, batch_id in zip(batches, batch_ids, strict=False):
                    client.submit_batch("decentraal", batch, batch_id)
                intake_s, intake_cpu = phase.end(idle)
            finally:
                self._hold_workers(signal.SIGCONT)
            send_s, send_cpu, send_parts = self._probe_sends(day, dv_id, batch_ids, n, idle)
            self._until_quiet(f"the probe of day {day}")
            # The sends churned the tables and wrote the probe's events: the
            # autovacuum that follows is the send's upkeep, not the feed's work.
            self._until_vacuumed()
            feed_s, phase = float("inf"), self._phase()
            for _ in range(FEED_READS):  # reading does not acknowledge: the same events again
                events, started = 0, time.monotonic()
                cursor = start_cursor
                while True:
                    page = client.read_changes(cursor, 1000)
                    events += len(page.events)
                    cursor = page.cursor
                    if not page.events:
                        break
                feed_s = min(feed_s, time.monotonic() - started)
            feed_cpu = phase.end(idle)[1] / FEED_READS
        finally:
            http.close()
            keeper.resume()
        sent = n * (PROBE_SPAN[1] - PROBE_SPAN[0])
        probe = yearchecks.Probe(
            day, n, n / intake_s, sent / send_s, events, events / feed_s,
            intake_cpu_rate=n / max(intake_cpu, 1e-6), send_cpu_rate=sent / max(send_cpu, 1e-6),
            feed_cpu_rate=events / max(feed_cpu, 1e-6),
        )  # fmt: skip
        self.evidence.probes.append(probe)
        self.evidence.probe_notifications += n
        self.display.note(
            f"day {day}: probe of {n}: intake {probe.intake_rate:,.0f}/s "
            f"({probe.intake_cpu_rate:,.0f} per NMC CPU-second), send {probe.send_rate:,.0f}/s "
            f"({probe.send_cpu_rate:,.0f}), feed {probe.feed_rate:,.0f} events/s "
            f"({probe.feed_cpu_rate:,.0f}); CPU ms a send: api {1000 * send_parts.api / sent:.2f}"
            f", workers {1000 * (send_parts.workers + send_parts.restarted) / sent:.2f}, "
            f"PostgreSQL {1000 * send_parts.postgres / sent:.2f}, simulators "
            f"{1000 * send_parts.simulators / sent:.2f}"
        )

    def _probe_sends(
        self, day: int, dv_id: int, batch_ids: list[str], n: int, idle: float
    ) -> tuple[float, float, CpuSample]:
        """Seconds and CPU from PROBE_SPAN[0] to PROBE_SPAN[1] of the probe's sends."""
        deadline = time.monotonic() + self.options.step_timeout_s
        phase = None
        while True:
            sent = self._one("year_probe_sent", dv_id=dv_id, batches=batch_ids)["verzonden"]
            if phase is None and sent >= n * PROBE_SPAN[0]:
                phase = self._phase()
            if phase is not None and sent >= n * PROBE_SPAN[1]:
                seconds, cpu = phase.end(idle)
                return seconds, cpu, phase.used
            if time.monotonic() > deadline:
                raise StepTimeout(f"the probe of day {day} was not sent in time")
            time.sleep(0.02)

    def _probe_bodies(self, day: int) -> list[dict[str, Any]]:
        marker = self.work.personal.marker
        bodies = []
        for n in range(self.options.probe):
            email = f"bezorgd+{marker}p{day}n{n}@{workload.DOMAIN}"
            self.work.personal.emails.add(email)
            dvref = f"probe-{marker}-{day}-{n}"
            self.work.personal.dvrefs.add(dvref)
            bodies.append({"dvRef": dvref, "berichtType": "herinnering", "emailAdres": email})
        return bodies

    def _until_vacuumed(self) -> None:
        """Until no autovacuum worker runs (bounded): the tables the day's retention and
        sends churned are vacuumed in the seconds after, and a probe measured meanwhile
        would time the vacuum's work (which the month's CPU figure counts) as its own."""
        deadline = time.monotonic() + VACUUM_WAIT_S
        streak = 0
        while streak < 2 and time.monotonic() < deadline:
            streak = streak + 1 if not self._one("year_autovacuum")["bezig"] else 0
            time.sleep(POLL_S)

    def _idle_cpu(self) -> float:
        """The NMC's CPU-seconds per second while nothing but its idle rounds run (the
        workers' polls, the DVs' feed polls, the periodic jobs): a probe phase's own CPU is
        what it used above this."""
        phase = self._phase()
        time.sleep(IDLE_MEASURE_S)  # a measurement interval, not a timer under test
        seconds, cpu = phase.end(0.0)
        return cpu / seconds

    def _phase(self) -> "Phase":
        return Phase(self._cpu, self._cpu(), time.monotonic())

    def _hold_workers(self, sig: int) -> None:
        for name in self.stack.worker_names:
            self.stack.kill(name, sig)

    # ------------------------------------------------------------------ the end

    def _all_final(self) -> bool:
        self._update_truth()
        return all(row.terminaal_op is not None for row in self.evidence.truth.values())

    def _catch_up(self) -> None:
        """The DVs that keep reading hold the final statuses; the one that stopped early
        polls once more (its cursor is stale: a 410, then the snapshot)."""
        stopped = [c for c in self.feed_dvs.values() if c.year_dv.role == "stops"]
        self.evidence.acknowledged = self._acknowledged()  # the stale one, before it polls
        for consumer in stopped:
            consumer.resume()
        truth = self.evidence.truth
        present = self._present_ids()

        def caught_up() -> bool:
            for oin, holder in [*self.feed_dvs.items(), *self.webhook_dvs.items()]:
                dv_id = self.evidence.dv_ids[oin]
                held = holder.held()
                for notificatie_id, row in truth.items():
                    if row.dv_id != dv_id or notificatie_id not in present:
                        continue
                    state = held.get(notificatie_id)
                    if state is None or state.versie != row.versie:
                        return False
            return True

        deadline = time.monotonic() + self.options.step_timeout_s
        while not caught_up() and time.monotonic() < deadline:
            self._advance(timedelta(hours=1))  # a paused webhook's backoff comes due
            time.sleep(0.5)
        for consumer in self.feed_dvs.values():
            consumer.stop()

    def _present_ids(self) -> set[str]:
        return {
            row["id"] for row in self._all("year_truth", sinds=datetime(2000, 1, 1).astimezone())
        }

    def _verdict(self, failure: str | None) -> int:
        ev, stack = self.evidence, self.stack
        self.unexpected_exits = [
            name for name in stack.names if name != "postgres" and not stack.running(name)
        ]
        ev.present = self._present_ids()
        ev.kek_end = self._kek_status()
        ev.erased_early = self._one("year_erased_early")["te_vroeg"]
        ev.held = {oin: c.held() for oin, c in [*self.feed_dvs.items(), *self.webhook_dvs.items()]}
        ev.sequences = {
            oin: c.sequences.copy()
            for oin, c in [*self.feed_dvs.items(), *self.webhook_dvs.items()]
        }
        ev.restarts = {oin: c.restarts for oin, c in self.feed_dvs.items()}
        ev.restarts.update({oin: c.restarts for oin, c in self.webhook_dvs.items()})
        ev.webhook_calls = {oin: (h.calls, h.refused) for oin, h in self.webhook_dvs.items()}
        ev.accepted = self.intake.accepted if self.intake else 0
        ev.cpu = self.cpu_marks
        ev.cpu_seconds = {
            month: self.mark_times[end] - self.mark_times[start]
            for month, (start, end) in yearchecks.MONTH_MARKS.items()
            if start in self.mark_times and end in self.mark_times
        }
        ev.month_notifications = self._month_notifications()
        for name in [*stack.worker_names, "api"]:
            stack.stop_child(name)
        worker_logs = [stack.log_dir / f"{name}.log" for name in stack.worker_names]
        ev.maintenance = read_maintenance_log(worker_logs)
        outputs = evidence.log_texts(sorted(stack.log_dir.glob("*.log")))
        findings = privacy.scan(outputs, self.work.personal) if self.work else []
        self.stop_everything()
        self._save(ev)
        verdicts = yearchecks.all_checks(ev, self.schedule)
        verdicts.append(yearchecks.privacy_verdict(findings, len(outputs)))
        verdicts.append(yearchecks.processes_verdict(self.unexpected_exits))
        if failure:
            verdicts.insert(0, Verdict("every day finished in time", count=1, examples=[failure]))
        yearchecks.print_summary(self.display, ev, self.schedule, self.options, verdicts)
        return exit_code(verdicts)

    def _save(self, ev: yearchecks.YearEvidence) -> None:
        """The day-by-day figures as JSON beside the logs (ids and counts, nothing personal)."""
        days = [
            {
                "day": s.day, "tail": s.tail, "accepted": s.accepted, "seconds": s.seconds,
                "quiet_s": s.quiet_s, "xid": s.xid, "xid_headroom": s.xid_headroom,
                "rows": s.rows, "sizes": {t: list(v.__dict__.values()) for t, v in s.sizes.items()},
            }
            for s in ev.steps
        ]  # fmt: skip
        partitions = [
            {"naam": p.naam, "xid_van": p.xid_van, "xid_tot": p.xid_tot, "seen_day": p.seen_day,
             "youngest": p.youngest and p.youngest.isoformat(),
             "dropped_at": p.dropped_at and p.dropped_at.isoformat()}
            for p in ev.partitions.values()
        ]  # fmt: skip
        path = self.stack.state_dir.parent / "year.json"
        figures = {"days": days, "partitions": partitions,
                   "probes": [p.__dict__ for p in ev.probes],
                   "cpu_marks": {k: v.__dict__ for k, v in ev.cpu.items()},
                   "month_notifications": ev.month_notifications,
                   "cpu_seconds": ev.cpu_seconds,
                   "proof_checks": {str(day): list(v) for day, v in ev.proof_checks.items()},
                   "statements": yearstatements.as_json(ev.statements, ev.month_notifications),
                   "plans": ev.statements.plans}  # fmt: skip
        path.write_text(json.dumps(figures, indent=1))

    def _acknowledged(self) -> dict[str, int]:
        """Per DV the xid its acknowledgement points at (the `stops` DV's is stale)."""
        rows = self.conn.execute(QUERIES["drill_bevestiging"]).fetchall()
        by_id = {dv_id: oin for oin, dv_id in self.evidence.dv_ids.items()}
        return {by_id.get(row[0], str(row[0])): row[1] for row in rows}

    def _month_notifications(self) -> dict[str, int]:
        first, last = self.schedule.first_month(), self.schedule.last_month()
        accepted = {s.day: s.accepted for s in self.evidence.steps if not s.tail}
        probes = Counter(p.day for p in self.evidence.probes)
        size = self.options.probe
        return {
            "first": sum(accepted.get(d, 0) + probes[d] * size for d in first),
            "last": sum(accepted.get(d, 0) + probes[d] * size for d in last),
        }

    def _progress(self, day: int) -> None:
        if day % PROGRESS_EVERY and day != self.options.days:
            return
        ev = self.evidence
        last = ev.steps[-1]
        recent = [s.seconds for s in ev.steps[-PROGRESS_EVERY:]]
        live = sum(1 for p in ev.partitions.values() if p.dropped_at is None)
        dropped = sum(1 for p in ev.partitions.values() if p.dropped_at)
        rows = last.rows or ev.steps[-2].rows or {}
        self.display.note(
            f"day {day}: {self.intake.accepted:,} accepted; {rows.get('notificatie', 0):,} "
            f"notifications and {rows.get('event', 0):,} events in the tables; {live} live "
            f"partitions, {dropped} dropped; {sum(recent) / len(recent):.1f} s a day"
        )

    # ------------------------------------------------------------------ stopping, helpers

    def stop_everything(self) -> None:
        if not self._stopped:
            self._stopped = True
            self.stack.stop()

    def shut_down(self) -> None:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            for consumer in self.feed_dvs.values():
                consumer.stop()
            for hook in self.webhook_dvs.values():
                hook.close()
            if self.receiver:
                self.receiver.stop()
            if self.intake:
                self.intake.close()
            if self.conn:
                self.conn.close()
            self.stop_everything()
        finally:
            signal.signal(signal.SIGINT, previous)

    def _one(self, name: str, **params: Any) -> dict[str, Any]:
        [row] = self._all(name, **params)
        return row

    def _all(self, name: str, **params: Any) -> list[dict[str, Any]]:
        assert self.conn  # noqa: S101
        cursor = self.conn.execute(QUERIES[name], params)
        names = [c.name for c in cursor.description or []]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def _now(self) -> datetime:
        """nmc.now() on the measuring connection (the intake's threads ask it too: psycopg
        serialises the calls)."""
        return self._one("year_now")["nu"]

    def _token(self, oin: str) -> str:
        if oin not in self.tokens:
            self.tokens[oin] = self.stack.dv_token(oin, ttl_s=TOKEN_TTL_S)
        return self.tokens[oin]


@dataclass
class Phase:
    """One timed phase of a probe: its seconds and the NMC CPU it used above the idle rate."""

    sample: Any
    cpu: CpuSample
    started: float

    def spent(self) -> tuple[float, float]:
        """Seconds and NMC CPU-seconds since the start, idle included."""
        self.used = self.sample().minus(self.cpu)
        return time.monotonic() - self.started, self.used.nmc

    def end(self, idle_per_second: float) -> tuple[float, float]:
        seconds, used = self.spent()
        return seconds, max(used - idle_per_second * seconds, 0.1 * used)


def _day_jobs(notificaties: list[workload.Notificatie]) -> list[list[workload.Notificatie]]:
    """One day's submissions: the singles one by one, the rest in one batch per DV and regie."""
    jobs = [[n] for n in notificaties if n.single]
    groups: dict[tuple[str, str], list[workload.Notificatie]] = {}
    for n in notificaties:
        if not n.single:
            groups.setdefault((n.dv.oin, n.scenario.regie), []).append(n)
    return [*groups.values(), *jobs]


def _kek_text(rows: list[dict]) -> str:
    return ", ".join(f"{r['kek_id']} {r['sleutels']}" for r in rows) or "none"


def read_maintenance_log(paths: list[Path]) -> Counter[str]:
    """What maintenance did, summed from the workers' `onderhoud` log lines: rows deleted
    per table, partitions created and dropped, keys re-wrapped."""
    done: Counter[str] = Counter()
    for path in paths:
        for line in path.read_text(errors="replace").splitlines():
            if '"onderhoud"' not in line or not line.startswith("{"):
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("event") != "onderhoud":
                continue
            for key, value in entry.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    done[f"{entry.get('werk')}.{key}"] += value
                elif key == "aangemaakt" and value:
                    done["partities.aangemaakt"] += 1
                elif key == "verwijderd" and isinstance(value, list):
                    done["partities.verwijderd"] += len(value)
    return done
