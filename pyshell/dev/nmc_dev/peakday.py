"""The peak day of one NotifyNL service (docs/dag-aandeel.md): a service with a day
of D sends and a rate of R a minute; DV A submits 1.6 x D at 08:00 UTC in batches, 20 small
DVs a few a minute each from 08:00 to 18:00. Proves the pace (never more than R in any 60 s),
the day (never more than D a UTC day), the fair share (the small DVs are sent all day, also
after A has used its share) and A's remainder going after 00:00 UTC.

What runs: the claim functions themselves (nmc.claim_verzenden, nmc.finish_verzenden_batch),
driven step by step on the NMC clock, each step one transaction whose now() is the step's
instant (so nmc.now() is exact). No HTTP: a day of 400,000 sends through real workers and the
simulator would take hours of this machine's two shared cores. Instead every send a claim
grants is judged, at the instant it is granted, by the NotifyNL simulator's own limit code
(nmc_dev.sim.notifynl: its rate limit, in both modes, and its daily limit) on the simulator's
clock set to the NMC's, so the 429s counted are the simulator's. A worker would call NotifyNL
a little after its claim; the pace's margin for that is the bucket (1000 tokens upstream) or,
for the fork's window, the worker's own spread of calls, which this run does not model.

Steps: while sends go, one step per token interval (at least a second); when the pace is the
limit, straight to the instant the next token is due; when nothing may be claimed (A's share
used, the day used), a minute at a time or to the next submission, whichever is first.
"""

import json
import statistics
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import psycopg

from nmc_dev.queries import QUERIES as Q
from nmc_dev.sim.notifynl import NotifySim, SimConfig

SERVICE = "standaard"
SIM_SERVICE = str(uuid.UUID(int=25))
HOUR = timedelta(hours=1)


@dataclass
class PeakDay:
    day_limit: int = 250_000  # D
    rate: int = 3_000  # R, sends per 60 s
    heavy_factor: float = 1.6  # A submits heavy_factor x D
    heavy_batches: int = 40  # A's batches, one a minute from 08:00
    small_dvs: int = 20
    small_per_dv: int = 1_800  # each small DV's sends from 08:00 to 18:00 (3 a minute)
    batch: int = 100  # the claim's batch (a worker's)
    idle_s: float = 60.0  # how often a worker looks while nothing may be claimed

    @classmethod
    def ci(cls) -> "PeakDay":
        """The same day scaled down, keeping what the rule sees: the day lasts D/R = 83
        minutes of sending, the small DVs send 14.4% of it from 08:00 to 18:00."""
        return cls(day_limit=1_000, rate=12, heavy_batches=8, small_per_dv=7, batch=20)


@dataclass
class Result:
    config: PeakDay
    start: datetime
    grants: list[tuple[float, int]] = field(default_factory=list)  # (seconds, sends)
    sends: list[tuple[float, int, bool]] = field(default_factory=list)  # (seconds, dv, small)
    small_latency: list[tuple[float, float]] = field(default_factory=list)  # (sent at, s)
    refusals: dict[str, Counter] = field(default_factory=dict)  # mode -> error -> count
    steps: int = 0
    wall_s: float = 0.0
    heavy_dv: int = 0

    def max_in_60s(self, since: float = float("-inf"), until: float = float("inf")) -> int:
        """The most sends granted in any 60-second span (its end within [since, until))."""
        best, total, left = 0, 0, 0
        for t, n in self.grants:
            total += n
            while self.grants[left][0] <= t - 60.0:
                total -= self.grants[left][1]
                left += 1
            if since <= t < until:
                best = max(best, total)
        return best

    def per_day(self) -> Counter:
        return Counter((self.start + timedelta(seconds=t)).date() for t, _, _ in self.sends)

    def heavy_after_midnight(self) -> int:
        midnight = (self.start + timedelta(days=1)).replace(hour=0, minute=0, second=0)
        cut = (midnight - self.start).total_seconds()
        return sum(1 for t, dv, small in self.sends if not small and t >= cut)

    def hours(self) -> list[dict]:
        """Per UTC hour: sends (A, small), sends a minute, the most in any 60 s, the small
        DVs' time from 202 to the send (p50, p99, max)."""
        by_hour: dict[int, list] = defaultdict(lambda: [0, 0, []])
        for t, _, small in self.sends:
            by_hour[int(t // 3600)][1 if small else 0] += 1
        for t, waited in self.small_latency:
            by_hour[int(t // 3600)][2].append(waited)
        rows = []
        for hour in sorted(by_hour):
            heavy, small, waits = by_hour[hour]
            rows.append({
                "hour": (self.start + hour * HOUR).strftime("%d %H:00"),
                "heavy": heavy,
                "small": small,
                "per_minute": (heavy + small) / 60,
                "max_60s": self.max_in_60s(hour * 3600.0, (hour + 1) * 3600.0),
                **latency(waits),
            })  # fmt: skip
        return rows


def latency(waits: list[float]) -> dict:
    if not waits:
        return {"p50": None, "p99": None, "max": None}
    ordered = sorted(waits)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return {"p50": statistics.median(ordered), "p99": p99, "max": ordered[-1]}


class _Sims:
    """The NotifyNL simulator's limit code in both modes (the fork's window, upstream's
    bucket), with its daily limit, each on its own clock set to the NMC's per send."""

    def __init__(self, config: PeakDay) -> None:
        self.sims = {
            mode: NotifySim(SimConfig(
                rate_limit=config.rate, rate_limit_mode=mode, day_limit=config.day_limit
            ))
            for mode in ("window", "bucket")
        }  # fmt: skip
        self.refusals = {mode: Counter() for mode in self.sims}

    def send(self, at: datetime, count: int) -> None:
        for mode, sim in self.sims.items():
            sim.offset_s = at.timestamp() - time.time()
            for _ in range(count):
                refused = sim._rate_limit_refusal(SIM_SERVICE) or sim._day_limit_refusal(
                    SIM_SERVICE
                )
                if refused is not None:
                    error = "RateLimitError" if b"RateLimit" in refused.body else "TooMany"
                    self.refusals[mode][error] += 1


def _onboard(conn: psycopg.Connection, config: PeakDay) -> tuple[int, list[int]]:
    ids = []
    for n in range(1 + config.small_dvs):
        document = {
            "oin": f"{n + 1:020d}",
            "naam": "DV A" if n == 0 else f"Kleine DV {n}",
            "quotumPerMinuut": 100_000_000,
            "quotumPerDag": 100_000_000,
            "berichttypen": [{"code": "aanslag",
                              "notifynlTemplateId": "a0a0a0a0-0000-4000-8000-00000000000a"}],
        }  # fmt: skip
        ids.append(
            conn.execute(Q["apply_dienstverlener"], {"config": json.dumps(document)}).fetchone()[0]
        )
    conn.execute(
        Q["peakday_service"],
        {"code": SERVICE, "per_minuut": config.rate, "dag_limiet": config.day_limit},
    )
    return ids[0], ids[1:]


def _submissions(config: PeakDay, heavy: int, small: list[int]) -> list[tuple[float, int]]:
    """(seconds after 08:00, dv) of every notification, in time order."""
    events: list[tuple[float, int]] = []
    total = round(config.heavy_factor * config.day_limit)
    per_batch = -(-total // config.heavy_batches)
    for b in range(config.heavy_batches):
        events += [(60.0 * b, heavy)] * min(per_batch, total - b * per_batch)
    gap = 10 * 3600.0 / config.small_per_dv
    for i, dv in enumerate(small):
        offset = gap * (i + 1) / (len(small) + 1)
        events += [(offset + k * gap, dv) for k in range(config.small_per_dv)]
    return sorted(events)


def run(url: str, config: PeakDay, start_day: datetime | None = None) -> Result:
    """The peak day on the database at `url` (migrated, empty); returns what was granted."""
    # A day ahead of the real clock (the NMC clock only moves forward).
    day = start_day or datetime.now(UTC).replace(hour=0, minute=0) + timedelta(days=2)
    start = day.replace(hour=8, minute=0, second=0, microsecond=0)
    result = Result(config, start)
    sims = _Sims(config)
    began = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        heavy, small = _onboard(conn, config)
        result.heavy_dv = heavy
        small_set = set(small)
        events = _submissions(config, heavy, small)
        submitted_at: dict[int, list[float]] = defaultdict(list)  # small dv -> times (FIFO)
        total = len(events)
        sent = 0
        nxt = 0
        t = 0.0
        # The send pace as nmc.verzendtempo_kind derives it (no reconciliation share, the
        # burst one second of the rate): a burst, then one send every `interval` seconds.
        burst = min(max(-(-config.rate // 60), 1), max(config.rate - 1, 1), 1000)
        interval = 60.0 / max(config.rate - burst, 1)
        tick = max(1.0, interval)
        while sent < total and t < 3 * 86400.0:  # a day and a half of A's at most
            at = start + timedelta(seconds=t)
            with conn.transaction():
                conn.execute(Q["peakday_at"], {"op": at})
                due = []
                while nxt < total and events[nxt][0] <= t:
                    due.append(events[nxt][1])
                    if events[nxt][1] in small_set:
                        submitted_at[events[nxt][1]].append(events[nxt][0])
                    nxt += 1
                if due:
                    conn.execute(Q["peakday_intake"], {"dvs": due})
                claimed = conn.execute(Q["peakday_claim"], {"batch": config.batch}).fetchall()
                if claimed:
                    conn.execute(Q["peakday_finish"], {
                        "taak_ids": [c[0] for c in claimed],
                        "claim_epochs": [c[1] for c in claimed],
                    })  # fmt: skip
                tat = conn.execute(Q["peakday_tat"], {"code": SERVICE}).fetchone()
            result.steps += 1
            if claimed:
                result.grants.append((t, len(claimed)))
                sims.send(at, len(claimed))
                for _, _, dv in claimed:
                    result.sends.append((t, dv, dv in small_set))
                    if dv in small_set:
                        # Each small DV's sends go in submission order (one task kind, due order).
                        result.small_latency.append((t, t - submitted_at[dv].pop(0)))
                sent += len(claimed)
            next_event = events[nxt][0] if nxt < total else float("inf")
            # GCRA: the next send is granted once tat is within the burst tolerance.
            token_at = (tat[0] - start).total_seconds() - (burst - 1) * interval if tat else t
            if claimed:
                t_next = t + tick
            elif token_at > t + 1e-6:  # the pace is the limit: to its next token
                t_next = token_at
            else:  # nothing may be claimed now: look again in a while
                t_next = t + config.idle_s
            t = min(max(t_next, t + 1e-3), max(next_event, t + 1e-3))
    result.refusals = sims.refusals
    result.wall_s = time.perf_counter() - began
    return result


def report(result: Result) -> str:
    c = result.config
    lines = [
        f"Peak day: D = {c.day_limit:,} sends a UTC day, R = {c.rate:,} a minute; DV A "
        f"{round(c.heavy_factor * c.day_limit):,} at 08:00 in {c.heavy_batches} batches; "
        f"{c.small_dvs} small DVs x {c.small_per_dv:,} from 08:00 to 18:00",
        f"{result.steps:,} steps in {result.wall_s:.0f} s; most sends in any 60 s: "
        f"{result.max_in_60s():,} (R = {c.rate:,})",
        "429s of the simulator: "
        + "; ".join(f"{mode}: {dict(r) or 0}" for mode, r in result.refusals.items()),
        "sends per UTC day: "
        + ", ".join(f"{d}: {n:,}" for d, n in sorted(result.per_day().items())),
        f"A's remainder sent after 00:00 UTC: {result.heavy_after_midnight():,}",
        "small DVs, 202 to the send (s): " + _fmt(latency([w for _, w in result.small_latency])),
        "",
        f"{'hour':>8} {'A':>7} {'small':>6} {'/min':>7} {'max 60s':>7} "
        f"{'p50 s':>6} {'p99 s':>6} {'max s':>6}",
    ]
    for row in result.hours():
        lines.append(
            f"{row['hour']:>8} {row['heavy']:>7,} {row['small']:>6,} {row['per_minute']:>7.1f} "
            f"{row['max_60s']:>7,} {_n(row['p50'])} {_n(row['p99'])} {_n(row['max'])}"
        )
    return "\n".join(lines)


def _n(value) -> str:
    return f"{value:>6.1f}" if value is not None else f"{'-':>6}"


def _fmt(stats: dict) -> str:
    return ", ".join(f"{k} {v:.1f}" if v is not None else f"{k} -" for k, v in stats.items())
