"""The year run's evidence and verdicts: pure functions over what the run measured, day by
day (nmc_dev.soak.year), so a test can hand them a crafted violation and see each one fail.

Bounds, and why:
* Expiry: a simulated day is one step of the clock and maintenance runs in every step, so
  whatever passes its term during a day is gone at the end of that day's step: a row, key or
  partition may outlive its term by at most one day (DAY_SLACK adds the minutes a step takes).
* Steady state: from the first term plus the longest life of a notification on (and after
  the DVs' troubles: a failing webhook holds the log back while its position is live) as
  much leaves every table each day as comes in (nmc_dev.soak.year.Schedule). Rows then stay
  within ROWS_BOUND of the window's first day, plus one day's churn (measured at the end of a
  day, a table holds its term give or take the day the boundary falls in). Bytes stay within
  BYTES_BOUND of the window's first day: the space of deleted rows is reused once autovacuum
  has passed, and a table that kept growing past that (bloat autovacuum does not keep up
  with) exceeds it. The event log is dropped a whole partition at a time, so it holds between
  a term and a term plus one partition's days of events: its bounds add that share. The
  window ends before the last month's throughput probes (a burst of one DV's rows).
* Throughput: the last month's probe at least THROUGHPUT_SHARE of the first month's by the
  clock (the best of each month's probes: other work on a shared machine only ever slows a
  probe down), or above WALL_SHARE when its rate per NMC CPU-second held (see `throughput`).
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from nmc_dev.soak import yearstatements
from nmc_dev.soak.checks import EXAMPLES, TERMINAL, Verdict, write_verdicts
from nmc_dev.soak.privacy import Finding
from nmc_dev.soak.yearstatements import StatementEvidence

DAY = timedelta(days=1)
DAY_SLACK = timedelta(hours=1)
ROWS_BOUND = 0.10
BYTES_BOUND = 0.25
THROUGHPUT_SHARE = 0.9
WALL_SHARE = 0.7
MIN_STEADY_DAYS = 5
# Past their term by more than a day (nmc.delete_expired's and the erase rule's terms).
OVER_TERM = (
    "notificaties_over_termijn",
    "sleutels_te_laat",
    "taken_over_termijn",
    "budget_over_termijn",
    "quotum_over_termijn",
    "feedaanroep_over_termijn",
    "bewijsaanroep_over_termijn",
)
# The tables whose size the steady-state check bounds (the small registers stay constant).
STEADY_TABLES = (
    "notificatie", "poging", "taak", "event", "receiptgeschiedenis", "vaststelling",
    "verzendbudget", "quotumgebruik", "feedaanroep",
)  # fmt: skip
KEPT_UP = ("keeps-up", "fails-weeks", "fails-long")


@dataclass(frozen=True)
class TableSize:
    bytes: int
    live: int
    dead: int
    autovacuums: int
    deleted: int = 0  # rows deleted since the start (pg_stat_user_tables.n_tup_del)


ZERO = TableSize(0, 0, 0, 0)


@dataclass
class StepRecord:
    day: int
    nu: datetime
    tail: bool
    accepted: int
    seconds: float
    default_rows: int
    xid_headroom: int
    over_term: dict[str, int]
    within_term_db: int
    within_term_truth: int
    mislukt: int
    sizes: dict[str, TableSize]
    rows: dict[str, int] | None = None
    xid: int = 0  # the next xid after the day
    quiet_s: float = 0.0  # of `seconds`: waiting until nothing of the lifecycle was due
    live: frozenset[str] = frozenset()  # the event partitions after the day
    held: frozenset[str] = frozenset()  # of those, the ones a live cursor still needs
    kept: frozenset[str] = frozenset()  # of those, the ones holding a kept notification's event


@dataclass(frozen=True)
class TruthRow:
    dv_id: int
    status: str
    reden: str | None
    versie: int
    terminaal_op: datetime | None


@dataclass
class PartitionRecord:
    naam: str
    xid_van: int
    xid_tot: int
    seen_day: int
    seen_at: datetime
    youngest: datetime | None = None
    measured: bool = False  # closed, and its youngest event read (before any drop)
    dropped_at: datetime | None = None


@dataclass(frozen=True)
class Probe:
    day: int
    notifications: int
    intake_rate: float
    send_rate: float
    events: int
    feed_rate: float
    # The same per CPU-second the NMC's processes (API, workers, PostgreSQL) spent on it.
    intake_cpu_rate: float = 0.0
    send_cpu_rate: float = 0.0
    feed_cpu_rate: float = 0.0


@dataclass
class YearEvidence:
    term_text: str = ""
    term: timedelta = timedelta(days=365)
    width: int = 0
    shape: Any = None
    steps: list[StepRecord] = field(default_factory=list)
    partitions: dict[str, PartitionRecord] = field(default_factory=dict)
    truth: dict[str, TruthRow] = field(default_factory=dict)
    present: set[str] = field(default_factory=set)
    dv_ids: dict[str, int] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    held: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    sequences: dict[str, dict[str, set[int]]] = field(default_factory=dict)
    restarts: dict[str, int] = field(default_factory=dict)
    acknowledged: dict[str, int] = field(default_factory=dict)
    resumed_at: dict[str, datetime] = field(default_factory=dict)  # a paused DV's return
    late_keys: list[str] = field(default_factory=list)  # examples: id, status, times, task
    webhook_calls: dict[str, tuple[int, int]] = field(default_factory=dict)
    kek_before: list[dict] = field(default_factory=list)
    kek_after_a_day: list[dict] = field(default_factory=list)
    kek_end: list[dict] = field(default_factory=list)
    kek_old: str = ""
    kek_new: str = ""
    rotation_day: int | None = None
    probes: list[Probe] = field(default_factory=list)
    probe_notifications: int = 0
    accepted: int = 0
    erased_early: int = 0
    cpu: dict[str, Any] = field(default_factory=dict)
    month_notifications: dict[str, int] = field(default_factory=dict)
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # each month's real seconds
    idle_rates: dict[int, float] = field(default_factory=dict)  # per probe day: the NMC's idle
    statements: StatementEvidence = field(default_factory=StatementEvidence)
    maintenance: Mapping[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    throughput_share: float = THROUGHPUT_SHARE
    # Delivery proofs fetched as the DV does and verified with its client (nmc_client), of
    # each notification on its last day before its term and of every one kept at the end.
    proofs_last_day: int = 0
    proofs_at_end: int = 0
    proof_failures: list[str] = field(default_factory=list)  # "<when> <id>: <reason>"
    # Per day: the real seconds and the NMC CPU-seconds its last-day proof checks took (the
    # year's own verification: only months with notifications at their term have them).
    proof_checks: dict[int, tuple[float, float]] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------
# The event log


def default_partition(steps: list[StepRecord], width: int) -> Verdict:
    verdict = Verdict("the default event partition stays empty: the next partition exists first")
    for step in steps:
        if step.default_rows:
            verdict.violation(
                f"day {step.day}: {step.default_rows} events in the default partition"
            )
        elif step.xid_headroom <= 0:
            verdict.violation(f"day {step.day}: no partition ahead of the next xid")
    least = min((s.xid_headroom for s in steps), default=0)
    most = max((s.default_rows for s in steps), default=0)
    verdict.figure = (f"most {most:,} rows; least headroom {least:,} xids "
                      f"({width:,} per partition)")  # fmt: skip
    return verdict


def partition_drops(
    partitions: Mapping[str, PartitionRecord], term: timedelta, steps: list[StepRecord]
) -> Verdict:
    """Dropped only once the youngest event passed the term; and at the end of a day, none
    is left that passed it more than a day ago unless a live cursor still needs it (SPEC §8:
    an acknowledgement or a webhook position younger than its DV's max cursor age) or it
    holds an event of a notification still kept (SPEC §7: its proof is the whole chain, from
    sequence 1, for as long as it is kept; the `proofs` check verifies those chains), or it
    was needed so at the end of the day before (freed in the day, it is dropped the next)."""
    verdict = Verdict("partitions dropped once their youngest event passed the term, only then")
    dropped = [p for p in partitions.values() if p.dropped_at is not None]
    for p in dropped:
        if not p.measured:
            verdict.violation(f"{p.naam}: dropped before its youngest event could be read")
        elif p.youngest is not None and p.dropped_at < p.youngest + term:
            verdict.violation(f"{p.naam}: dropped {p.youngest + term - p.dropped_at} early")
    late: set[str] = set()
    needed: dict[str, datetime] = {}  # the end of the last day a cursor or a proof held it
    held_days = kept_days = 0
    for step in steps:
        for naam in sorted(step.live):
            p = partitions.get(naam)
            if p is None or not p.measured or p.youngest is None:
                continue
            freed_after = needed.get(naam)
            if naam in step.held or naam in step.kept:
                needed[naam] = step.nu
            if p.youngest + term + DAY + DAY_SLACK >= step.nu:
                continue
            if naam in step.held:
                held_days += 1
            elif naam in step.kept:
                kept_days += 1
            elif freed_after is not None and freed_after + DAY + DAY_SLACK >= step.nu:
                # Freed during the day (its last kept notification deleted after that day's
                # partition job ran): it goes with the next, within a day, as from its term.
                continue
            elif naam not in late:
                late.add(naam)
                verdict.violation(
                    f"{naam}: on day {step.day} kept {step.nu - p.youngest - term} past its "
                    "term, and no live cursor or kept notification needs it"
                )
    if not dropped:
        verdict.violation("no partition was dropped: the run is shorter than its term")
    verdict.figure = (f"{len(partitions) - 1} created, {len(dropped)} dropped; past the term "
                      f"but held by a live cursor: {held_days} partition-days, by a kept "
                      f"notification: {kept_days}")  # fmt: skip
    return verdict


def proofs(ev: YearEvidence) -> Verdict:
    """Every kept notification's delivery proof verifies with the DV client (signature,
    issuer, id, the event chain from sequence 1 to its version without a gap): each on its
    last day before its term (the day the oldest of its events are most at risk of having
    gone with their partition), and every one still kept at the end of the run."""
    verdict = Verdict("every kept notification's proof verifies: its chain from sequence 1")
    for failure in ev.proof_failures:
        verdict.violation(failure)
    if not ev.proofs_last_day:
        verdict.violation("no proof was checked on its last day: the run is shorter than its term")
    verdict.figure = (f"{ev.proofs_last_day:,} on their last day, {ev.proofs_at_end:,} at the "
                      f"end; {len(ev.proof_failures)} failed")  # fmt: skip
    return verdict


def stale_cursors(ev: YearEvidence) -> Verdict:
    """The DV that stopped early keeps a stale acknowledgement: the drops go past it, and its
    last poll is a 410 (then the snapshot); the DV that paused meets a 410 on its return."""
    verdict = Verdict("a stale cursor gets 410 and does not hold the drop back")
    live = [p.xid_van for p in ev.partitions.values() if p.dropped_at is None]
    oldest_live = min(live, default=0)
    for oin, role in sorted(ev.roles.items()):
        if role not in ("stops", "pauses"):
            continue
        if ev.restarts.get(oin, 0) < 1:
            verdict.violation(f"DV {oin[-3:]} ({role}) never got a 410")
    stopped = [oin for oin, role in ev.roles.items() if role == "stops"]
    for oin in stopped:
        acked = ev.acknowledged.get(oin)
        if acked is not None and acked >= oldest_live:
            verdict.violation(f"DV {oin[-3:]}: its stale acknowledgement is still in the log")
    verdict.figure = ", ".join(
        f"{oin[-3:]} {ev.roles[oin]}: {ev.restarts.get(oin, 0)}x 410"
        for oin in sorted(ev.roles)
        if ev.roles[oin] in ("stops", "pauses")
    )
    return verdict


# ---------------------------------------------------------------------------------------
# Keys and rows past their term


def keys(steps: list[StepRecord], erased_early: int, late_keys: list[str] = ()) -> Verdict:
    verdict = Verdict("every data key erased within a day of its term, none before")
    for step in steps:
        late = step.over_term.get("sleutels_te_laat", 0)
        if late:
            verdict.violation(f"day {step.day}: {late} keys kept more than a day past the term")
    for example in list(late_keys)[:EXAMPLES]:
        verdict.examples.append(example)
    if erased_early:
        verdict.violation(f"{erased_early} keys erased before their term")
    verdict.figure = "checked every day"
    return verdict


def retention(steps: list[StepRecord], maintenance: Mapping[str, int]) -> Verdict:
    verdict = Verdict("rows deleted after their term (notification, attempt, task, receipt, "
                      "budget), nothing older remains")  # fmt: skip
    for step in steps:
        for name, count in step.over_term.items():
            if count and name != "sleutels_te_laat":
                verdict.violation(f"day {step.day}: {count} {name}")
        if step.within_term_db < step.within_term_truth:
            verdict.violation(
                f"day {step.day}: {step.within_term_truth - step.within_term_db} notifications "
                "within their term are gone"
            )
    if not maintenance.get("retentie.notificaties"):
        verdict.violation("maintenance deleted no notification")
    deleted = steps[-1].sizes if steps else {}
    verdict.figure = ", ".join(
        f"{table} {size.deleted:,}" for table, size in sorted(deleted.items()) if size.deleted
    )
    return verdict


# ---------------------------------------------------------------------------------------
# Steady state


def steady_window(steps: list[StepRecord], from_day: int, until_day: int) -> list[StepRecord]:
    return [s for s in steps if not s.tail and from_day <= s.day <= until_day]


def partition_days(partitions: Mapping[str, PartitionRecord]) -> float:
    """The days one partition spans: between the first and the last made during the run."""
    days = sorted(p.seen_day for p in partitions.values())[1:]
    return (days[-1] - days[0]) / (len(days) - 1) if len(days) > 1 else 0.0


def steady_sizes(
    steps: list[StepRecord],
    term: timedelta,
    window: tuple[int, int],
    span_days: float = 0.0,
) -> tuple[Verdict, list[tuple]]:
    """The verdict and a row per table: rows and bytes at the window's start, least, most."""
    share = span_days / max(term / DAY, 1.0)
    verdict = Verdict(f"table sizes steady after the first term: rows within {ROWS_BOUND:.0%} "
                      f"and a day's churn, bytes within {BYTES_BOUND:.0%} (the event log "
                      f"+{share:.0%}: a partition)")  # fmt: skip
    window_steps = steady_window(steps, *window)
    report: list[tuple] = []
    if len(window_steps) < MIN_STEADY_DAYS:
        verdict.violation(f"only {len(window_steps)} days in the steady window {window}")
        return verdict, report
    counted = [s for s in window_steps if s.rows]
    for table in STEADY_TABLES:
        rows = [s.rows[table] for s in counted if table in s.rows]
        sizes = [s.sizes.get(table, ZERO) for s in window_steps]
        volume = [size.bytes for size in sizes]
        extra = share if table == "event" else 0.0
        # Measured at the end of a day, a table holds its term's rows give or take the day
        # the retention's boundary falls in: one day's churn (what leaves it in a day).
        daily = (sizes[-1].deleted - sizes[0].deleted) / max(len(window_steps) - 1, 1)
        if rows and rows[0]:
            allowance = rows[0] * (ROWS_BOUND + extra) + daily
            if max(rows) > rows[0] + allowance or min(rows) < rows[0] - allowance:
                verdict.violation(f"{table}: rows {min(rows):,}..{max(rows):,} from {rows[0]:,}")
        if volume and max(volume) > volume[0] * (1 + BYTES_BOUND + extra):
            verdict.violation(f"{table}: {_mb(max(volume))} from {_mb(volume[0])}")
        dead = max((size.dead / max(size.live, 1) for size in sizes), default=0.0)
        vacuums = sizes[-1].autovacuums - sizes[0].autovacuums
        report.append((table, rows[:1] and rows[0], min(rows, default=0), max(rows, default=0),
                       volume[0], min(volume), max(volume), dead, vacuums))  # fmt: skip
    verdict.figure = f"days {window_steps[0].day}..{window_steps[-1].day}"
    return verdict, report


# ---------------------------------------------------------------------------------------
# Throughput and CPU


def best(probes: Iterable[Probe], days: range) -> Probe | None:
    chosen = [p for p in probes if p.day in days]
    if not chosen:
        return None
    return Probe(
        chosen[0].day,
        chosen[0].notifications,
        max(p.intake_rate for p in chosen),
        max(p.send_rate for p in chosen),
        max(p.events for p in chosen),
        max(p.feed_rate for p in chosen),
        max(p.intake_cpu_rate for p in chosen),
        max(p.send_cpu_rate for p in chosen),
        max(p.feed_cpu_rate for p in chosen),
    )


def throughput(
    probes: list[Probe], first: range, last: range, share: float = THROUGHPUT_SHARE
) -> Verdict:
    """The last month's intake, send and feed rates against the first month's (the best of
    each month's probes) by the wall clock: at least `share`. A machine shared with other
    work slows a probe down whatever the NMC does, so a rate below `share` but above
    WALL_SHARE also passes when the NMC spent no more CPU per item on it (its rate per
    CPU-second above its idle rounds is still `share` of the first month's): that slowdown
    was the machine's. A slowdown that costs no CPU (a lock wait) shows only by the clock."""
    floor = min(WALL_SHARE, share)
    verdict = Verdict(
        f"intake, send and feed in the last month at least {share:.0%} of the first "
        f"(by the clock, or per NMC CPU-second above {floor:.0%} by the clock)"
    )
    a, b = best(probes, first), best(probes, last)
    if a is None or b is None:
        verdict.violation("a month without a throughput probe")
        return verdict
    shown = []
    for name in ("intake", "send", "feed"):
        then, now = getattr(a, name + "_rate"), getattr(b, name + "_rate")
        wall = now / max(then, 1e-9)
        cpu = getattr(b, name + "_cpu_rate") / max(getattr(a, name + "_cpu_rate"), 1e-9)
        shown.append(f"{name} {wall:.0%} (per CPU-second {cpu:.0%})")
        if wall < share and (wall < floor or cpu < share):
            verdict.violation(
                f"{name}: {now:,.0f}/s against {then:,.0f}/s in the first month ({wall:.0%}), "
                f"per CPU-second {cpu:.0%}"
            )
    verdict.figure = ", ".join(shown)
    return verdict


MONTH_MARKS = {"first": ("start", "first_end"), "last": ("last_start", "last_end")}


def cpu_per_notification(
    cpu: Mapping[str, Any],
    notifications: Mapping[str, int],
    seconds: Mapping[str, float] | None = None,
    idle: float | None = None,
    proof_checks: Mapping[str, tuple[float, float]] | None = None,
) -> dict:
    """Milliseconds of CPU per notification in the first and the last month, per part; with
    the months' real `seconds` and the NMC's `idle` CPU-seconds per second (its rounds with
    nothing to do), the NMC's also above idle. With each month's `proof_checks` (real
    seconds, NMC CPU-seconds of the year's own proof checks) the NMC's without them too:
    the first month has none (no notification is at its term yet), so only that figure
    compares the months' work."""
    result = {}
    for month, (start, end) in MONTH_MARKS.items():
        if start not in cpu or end not in cpu or not notifications.get(month):
            continue
        used = cpu[end].minus(cpu[start])
        n = notifications[month]
        proof_s, proof_cpu = (proof_checks or {}).get(month, (0.0, 0.0))
        above = above_without = None
        if seconds and month in seconds and idle is not None:
            above = 1000 * max(used.nmc - idle * seconds[month], 0.0) / n
            rest_s = max(seconds[month] - proof_s, 0.0)
            above_without = 1000 * max(used.nmc - proof_cpu - idle * rest_s, 0.0) / n
        result[month] = {
            "nmc": 1000 * used.nmc / n,
            "nmc_above_idle": above,
            "nmc_without_proofs": 1000 * max(used.nmc - proof_cpu, 0.0) / n,
            "nmc_above_idle_without_proofs": above_without,
            "api": 1000 * used.api / n,
            "workers": 1000 * (used.workers + used.restarted) / n,
            "postgres": 1000 * used.postgres / n,
            "simulators": 1000 * used.simulators / n,
            "notifications": n,
        }
    return result


def month_proof_checks(
    checks: Mapping[int, tuple[float, float]], months: Mapping[str, range]
) -> dict[str, tuple[float, float]]:
    """Per month the seconds and NMC CPU-seconds of its days' proof checks, summed."""
    return {
        month: (
            sum(checks[d][0] for d in days if d in checks),
            sum(checks[d][1] for d in days if d in checks),
        )
        for month, days in months.items()
    }


# ---------------------------------------------------------------------------------------
# The DVs


def feeds(ev: YearEvidence) -> Verdict:
    """Every DV that kept up (its webhook came back, or it never stopped) holds each of its
    notifications' final status and was handed every event of each (sequence 1..versie);
    the DV that paused holds every final status too (the snapshot filled its gap); the DV
    that stopped early holds those still in the table after its last poll."""
    verdict = Verdict("every DV that kept up holds each final status and was handed every event")
    by_dv: dict[int, list[str]] = {}
    for notificatie_id, row in ev.truth.items():
        by_dv.setdefault(row.dv_id, []).append(notificatie_id)
    handed = 0
    for oin, role in sorted(ev.roles.items()):
        held = ev.held.get(oin, {})
        seen = ev.sequences.get(oin, {})
        for notificatie_id in by_dv.get(ev.dv_ids.get(oin, -1), []):
            row = ev.truth[notificatie_id]
            if role == "stops" and notificatie_id not in ev.present:
                continue  # deleted before its last poll: it could not learn the end
            back = ev.resumed_at.get(oin)
            gone = row.terminaal_op is not None and row.terminaal_op + ev.term
            if role == "pauses" and back and gone and gone < back:
                continue  # deleted while it did not read: the snapshot no longer had it
            state = held.get(notificatie_id)
            if state is None or (state.status, state.versie, state.reden) != (
                row.status, row.versie, row.reden,
            ):  # fmt: skip
                got = "nothing" if state is None else f"{state.status} v{state.versie}"
                verdict.violation(
                    f"DV {oin[-3:]} ({role}) {notificatie_id}: {got}, final "
                    f"{row.status} v{row.versie}"
                )
            if role in KEPT_UP:
                missing = set(range(1, row.versie + 1)) - seen.get(notificatie_id, set())
                handed += row.versie - len(missing)
                if missing:
                    verdict.violation(
                        f"DV {oin[-3:]} ({role}) {notificatie_id}: never handed sequence "
                        f"{sorted(missing)}"
                    )
    verdict.figure = f"{handed:,} events handed to the DVs that kept up"
    return verdict


def kek_rotation(ev: YearEvidence, rewrapped: int) -> Verdict:
    verdict = Verdict("the KEK rotated mid-year; every key ends under the new one")
    before = {r["kek_id"]: r["sleutels"] for r in ev.kek_before}
    end = {r["kek_id"]: r["sleutels"] for r in ev.kek_end}
    if ev.rotation_day is None:
        verdict.violation("the KEK was never rotated")
    elif not before.get(ev.kek_old):
        verdict.violation(f"no live key under {ev.kek_old} before the rotation")
    for kek, count in end.items():
        if kek != ev.kek_new and count:
            verdict.violation(f"{count} live keys still under {kek}")
    if not rewrapped:
        verdict.violation("maintenance re-wrapped no key")
    verdict.figure = (f"day {ev.rotation_day}: {before.get(ev.kek_old, 0)} live keys under "
                      f"{ev.kek_old}; {rewrapped} re-wrapped by maintenance; at the end "
                      f"{end.get(ev.kek_new, 0)} under {ev.kek_new}")  # fmt: skip
    return verdict


def lifecycle(steps: list[StepRecord], truth: Mapping[str, TruthRow]) -> Verdict:
    verdict = Verdict("no task exhausted (mislukt), every notification final")
    for step in steps:
        if step.mislukt:
            verdict.violation(f"day {step.day}: {step.mislukt} tasks mislukt")
            break
    open_ = [i for i, row in truth.items() if row.status not in TERMINAL]
    for notificatie_id in open_[:5]:
        verdict.violation(f"{notificatie_id}: {truth[notificatie_id].status}")
    verdict.count += max(0, len(open_) - 5)
    verdict.figure = f"{len(truth):,} notifications"
    return verdict


def privacy_verdict(findings: Iterable[Finding], places: int) -> Verdict:
    verdict = Verdict("no personal data in any process's log")
    for finding in findings:
        verdict.violation(str(finding))
    verdict.figure = f"{places} logs scanned"
    return verdict


def processes_verdict(unexpected_exits: Iterable[str]) -> Verdict:
    verdict = Verdict("every part still ran at the end")
    for name in unexpected_exits:
        verdict.violation(f"{name} exited")
    return verdict


def all_checks(ev: YearEvidence, schedule) -> list[Verdict]:
    window = (schedule.steady_from, schedule.steady_until())
    steady, _ = steady_sizes(ev.steps, ev.term, window, partition_days(ev.partitions))
    return [
        default_partition(ev.steps, ev.width),
        partition_drops(ev.partitions, ev.term, ev.steps),
        proofs(ev),
        stale_cursors(ev),
        keys(ev.steps, ev.erased_early, ev.late_keys),
        retention(ev.steps, ev.maintenance),
        steady,
        throughput(ev.probes, schedule.first_month(), schedule.last_month(), ev.throughput_share),
        feeds(ev),
        kek_rotation(ev, ev.maintenance.get("herwrappen.herwrapt", 0)),
        lifecycle(ev.steps, ev.truth),
    ]


# ---------------------------------------------------------------------------------------
# The summary


def print_summary(display, ev: YearEvidence, schedule, options, verdicts: list[Verdict]) -> None:
    from nmc_dev.demo.display import table

    out = display.out
    display.close()
    traffic = [s for s in ev.steps if not s.tail]
    tail = len(ev.steps) - len(traffic)
    dropped = sum(1 for p in ev.partitions.values() if p.dropped_at)
    shape = ev.shape
    out.write(
        f"\nYear run: {len(traffic)} simulated days of traffic and {tail} quiet days after, "
        f"{ev.accepted + ev.probe_notifications:,} notifications ({ev.accepted:,} of "
        f"{options.per_day} a day from {len(ev.roles)} DVs, {ev.probe_notifications:,} in "
        f"throughput probes), term {ev.term_text}, {ev.seconds / 60:.1f} min\n"
        f"  workers as docker-compose.yml runs them: {shape.replicas}x `nmc worker "
        f"{' '.join(shape.args)}` (service {shape.service}; settings "
        f"{', '.join(f'{k}={v}' for k, v in shape.settings.items()) or 'none beyond the wiring'}"
        f"); event partitions {ev.width:,} xids wide\n"
        f"  partitions: {len(ev.partitions) - 1} created, {dropped} dropped; rows deleted: "
        + ", ".join(
            f"{t} {s.deleted:,}" for t, s in sorted(ev.steps[-1].sizes.items()) if s.deleted
        )
        + "\n  maintenance (worker logs): "
        + ", ".join(f"{k} {v:,}" for k, v in sorted(ev.maintenance.items()))
        + "\n\n"
    )  # fmt: skip
    window = (schedule.steady_from, schedule.steady_until())
    steady, report = steady_sizes(ev.steps, ev.term, window, partition_days(ev.partitions))
    if report:
        rows = [
            (t, f"{r0:,}", f"{lo:,}..{hi:,}", _mb(b0), f"{_mb(bl)}..{_mb(bh)}", f"{dead:.2f}",
             str(vac))
            for t, r0, lo, hi, b0, bl, bh, dead, vac in report
        ]  # fmt: skip
        out.write(f"Steady state ({steady.figure}):\n")
        out.write(
            table(
                (
                    "table",
                    "rows at start",
                    "rows",
                    "bytes at start",
                    "bytes",
                    "dead/live max",
                    "autovacuums",
                ),
                rows,
                right=(1, 2, 3, 4, 5, 6),
            )
        )
        out.write("\n\n")  # fmt: skip
    a, b = best(ev.probes, schedule.first_month()), best(ev.probes, schedule.last_month())
    idle = min(ev.idle_rates.values()) if ev.idle_rates else None
    months = {"first": schedule.first_month(), "last": schedule.last_month()}
    cpu = cpu_per_notification(ev.cpu, ev.month_notifications, ev.cpu_seconds, idle,
                               month_proof_checks(ev.proof_checks, months))  # fmt: skip
    lines = []
    if a and b:
        lines += [
            ("intake (API: singles, then batches)", f"{a.intake_rate:,.0f}/s",
             f"{b.intake_rate:,.0f}/s"),
            ("send (to NotifyNL's acceptance)", f"{a.send_rate:,.0f}/s", f"{b.send_rate:,.0f}/s"),
            ("feed (events read)", f"{a.feed_rate:,.0f}/s", f"{b.feed_rate:,.0f}/s"),
            ("intake per NMC CPU-second", f"{a.intake_cpu_rate:,.0f}", f"{b.intake_cpu_rate:,.0f}"),
            ("send per NMC CPU-second", f"{a.send_cpu_rate:,.0f}", f"{b.send_cpu_rate:,.0f}"),
            ("feed events per NMC CPU-second", f"{a.feed_cpu_rate:,.0f}",
             f"{b.feed_cpu_rate:,.0f}"),
        ]  # fmt: skip
    if "first" in cpu and "last" in cpu:
        f, l_ = cpu["first"], cpu["last"]
        lines += [
            ("CPU per notification, NMC (ms)", f"{f['nmc']:.2f}", f"{l_['nmc']:.2f}"),
        ]
        if f["nmc_above_idle"] is not None and l_["nmc_above_idle"] is not None:
            lines.append((f"  above idle ({1000 * idle:.0f} ms of CPU a second, the least "
                          "before a probe)", f"{f['nmc_above_idle']:.2f}",
                          f"{l_['nmc_above_idle']:.2f}"))  # fmt: skip
        lines.append(("  without the year's proof checks (notifications at their term)",
                      f"{f['nmc_without_proofs']:.2f}",
                      f"{l_['nmc_without_proofs']:.2f}"))  # fmt: skip
        if f["nmc_above_idle_without_proofs"] is not None:
            lines.append(("    and above idle", f"{f['nmc_above_idle_without_proofs']:.2f}",
                          f"{l_['nmc_above_idle_without_proofs']:.2f}"))  # fmt: skip
        lines += [
            ("  API", f"{f['api']:.2f}", f"{l_['api']:.2f}"),
            ("  workers", f"{f['workers']:.2f}", f"{l_['workers']:.2f}"),
            ("  PostgreSQL", f"{f['postgres']:.2f}", f"{l_['postgres']:.2f}"),
            ("  simulators (not the NMC)", f"{f['simulators']:.2f}", f"{l_['simulators']:.2f}"),
            ("notifications in the month", f"{f['notifications']:,}", f"{l_['notifications']:,}"),
        ]
    first_steps = [s.seconds for s in traffic if s.day in schedule.first_month()]
    last_steps = [s.seconds for s in traffic if s.day in schedule.last_month()]
    if first_steps and last_steps:
        lines.append(("real seconds per simulated day", f"{_mean(first_steps):.2f}",
                      f"{_mean(last_steps):.2f}"))  # fmt: skip
    if lines:
        out.write(table(("figure", "first month", "last month"), lines, right=(1, 2)) + "\n\n")
    out.write(yearstatements.report(ev.statements, ev.month_notifications) + "\n")
    write_verdicts(out, verdicts)


def _mb(size: int) -> str:
    return f"{size / 1_048_576:.1f} MB"


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)
