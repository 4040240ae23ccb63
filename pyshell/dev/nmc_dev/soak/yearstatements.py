"""What every SQL statement cost the year run, the first month against the last.

The year's own cluster preloads pg_stat_statements and auto_explain (STATEMENTS_PRELOAD).
pg_stat_statements counts every statement, the ones inside the PL/pgSQL functions too
(`track = all`; not utility statements, and not the planning: `track_planning` costs every
call of a hot statement a spinlock more, and a nested statement's planning is inside its
caller's execution time); the harness's own measuring connection is not tracked. The
counters are reset when the traffic starts and read at each month's start and end: a
month's cost of a statement is the difference of the two readings (the CI size's months
overlap, so a reset at the last month's start would lose the first's).

auto_explain stays off but for a plan day of each month, outside the months' windows where
the run is long enough (the day after the first month, the day before the last; else the
first quiet day after the traffic): that day a sample of the calls (a quarter, with the
statements inside them) is logged with its plan, its actual rows and buffers (`log_analyze`,
`log_buffers`; no per-node timing, a clock read per row), so the statements whose cost grew
most are printed with the plan of a representative call (the one of median duration). A plan
is matched to its statement by the statement's text, constants and whitespace aside
(PostgreSQL 15's auto_explain does not log the query id). Quoted constants in a plan are
masked before it is kept: a custom plan may carry a parameter's value.

A statement's cost per notification is its execution time in the month over
the notifications accepted in it; the report ranks the statements by how much that grew.
"""

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from nmc_dev.queries import QUERIES

STATEMENTS_PRELOAD = ("pg_stat_statements", "auto_explain")
SETTINGS = {
    "pg_stat_statements.track": "all",
    # Off: with it every call of a hot statement takes the entry's spinlock once more, and
    # a nested statement's planning is inside its caller's execution time anyway.
    "pg_stat_statements.track_planning": "off",
    "pg_stat_statements.track_utility": "off",
    # auto_explain costs nothing while log_min_duration is -1 (it instruments no statement);
    # on a plan day it logs a sample of the calls, with rows and buffers but not per-node
    # timing (a clock read per row).
    "auto_explain.log_min_duration": "-1",
    "auto_explain.log_analyze": "on",
    "auto_explain.log_buffers": "on",
    "auto_explain.log_timing": "off",
    "auto_explain.log_nested_statements": "on",
    "auto_explain.log_format": "text",
    "auto_explain.sample_rate": "0.25",
}
PLANS_ON = {"auto_explain.log_min_duration": "0"}
PLANS_OFF = {"auto_explain.log_min_duration": "-1"}
TOP = 10  # statements in the report
PLANS_SHOWN = 5  # of those, with their plans
QUERY_WIDTH = 90
PLAN_LINES = 40


@dataclass(frozen=True)
class Stat:
    """pg_stat_statements' counters of one statement (its query id, top level or nested)."""

    query: str
    calls: int = 0
    plans: int = 0
    exec_ms: float = 0.0
    plan_ms: float = 0.0
    rows: int = 0
    hit: int = 0
    read: int = 0

    @property
    def ms(self) -> float:
        return self.exec_ms + self.plan_ms

    def minus(self, earlier: "Stat | None") -> "Stat":
        if earlier is None:
            return self
        return Stat(
            self.query, self.calls - earlier.calls, self.plans - earlier.plans,
            self.exec_ms - earlier.exec_ms, self.plan_ms - earlier.plan_ms,
            self.rows - earlier.rows, self.hit - earlier.hit, self.read - earlier.read,
        )  # fmt: skip


Key = tuple[int, bool]  # (queryid, toplevel)
Snapshot = dict[Key, Stat]


def configure(conn: psycopg.Connection) -> None:
    """The counters' and auto_explain's settings (the cluster's own: a reload applies them),
    and the extension in the run's database."""
    _set_system(conn, SETTINGS)
    conn.execute(QUERIES["year_statements_extension"])


def untrack(conn: psycopg.Connection) -> None:
    """This session's statements are neither counted nor explained (the harness's)."""
    conn.execute(QUERIES["year_statements_untracked"])
    conn.execute(QUERIES["year_statements_no_plans"])


def reset(conn: psycopg.Connection) -> None:
    conn.execute(QUERIES["year_statements_reset"])


def snapshot(conn: psycopg.Connection) -> Snapshot:
    cursor = conn.execute(QUERIES["year_statements"])
    names = [c.name for c in cursor.description or []]
    result: Snapshot = {}
    for values in cursor.fetchall():
        row = dict(zip(names, values, strict=True))
        result[(row["queryid"], row["toplevel"])] = Stat(
            " ".join(row["query"].split()), row["calls"], row["plans"], row["exec_ms"],
            row["plan_ms"], row["rows"], row["hit"], row["read"],
        )  # fmt: skip
    return result


def evicted(conn: psycopg.Connection) -> int:
    return conn.execute(QUERIES["year_statements_evicted"]).fetchone()[0]


def difference(later: Snapshot, earlier: Snapshot) -> Snapshot:
    """A window's counters: what each statement did between the two readings."""
    window = {key: stat.minus(earlier.get(key)) for key, stat in later.items()}
    return {key: stat for key, stat in window.items() if stat.calls > 0}


def _set_system(conn: psycopg.Connection, values: Mapping[str, str]) -> None:
    for name, value in values.items():
        conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(
            sql.Identifier(*name.split(".")), sql.Literal(value)))  # fmt: skip
    conn.execute("SELECT pg_catalog.pg_reload_conf()")


# --------------------------------------------------------------------------------------------
# Plans


@dataclass
class PlanDay:
    """auto_explain on for a day: where the server log stood when it began."""

    log_file: Path
    offset: int = 0

    def start(self, conn: psycopg.Connection) -> None:
        self.offset = self.log_file.stat().st_size if self.log_file.exists() else 0
        _set_system(conn, PLANS_ON)

    def end(self, conn: psycopg.Connection) -> dict[str, str]:
        _set_system(conn, PLANS_OFF)
        with self.log_file.open("rb") as log:
            log.seek(self.offset)
            text = log.read().decode("utf-8", errors="replace")
        return representative_plans(parse_plans(text))


_PLAN_START = re.compile(r"LOG:  duration: ([0-9.]+) ms  plan:$")
_NODE = re.compile(r"\(cost=\d")
_LITERAL = re.compile(r"'(?:[^']|'')*'")
_CONSTANT = re.compile(r"'(?:[^']|'')*'|\$\d+|\b\d+(?:\.\d+)?\b")


def statement_key(query: str) -> str:
    """A statement's text with its constants and parameters as `?`, its whitespace and case
    evened out: the same for pg_stat_statements' text and auto_explain's."""
    return " ".join(_CONSTANT.sub("?", query).lower().split()).rstrip(";").strip()


def parse_plans(text: str) -> dict[str, list[tuple[float, str]]]:
    """Per statement (statement_key), every (duration ms, plan) auto_explain logged in
    `text` (a stderr server log: a message's continuation lines start with a tab; the
    statement's text comes first, then the plan from its first node on)."""
    plans: dict[str, list[tuple[float, str]]] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = _PLAN_START.search(lines[i])
        i += 1
        if not match:
            continue
        body = []
        while i < len(lines) and lines[i].startswith("\t"):
            body.append(lines[i][1:])
            i += 1
        if not body or not body[0].startswith("Query Text:"):
            continue
        start = next((n for n, line in enumerate(body) if _NODE.search(line)), len(body))
        query = " ".join([body[0].removeprefix("Query Text:"), *body[1:start]])
        plan = "\n".join(body[start:])
        plans.setdefault(statement_key(query), []).append((float(match.group(1)), plan))
    return plans


def representative_plans(plans: Mapping[str, list[tuple[float, str]]]) -> dict[str, str]:
    """Per query id the plan of the call of median duration, its constants masked."""
    chosen = {}
    for queryid, calls in plans.items():
        ordered = sorted(calls, key=lambda c: c[0])
        duration, plan = ordered[len(ordered) // 2]
        chosen[queryid] = f"({len(calls)} calls logged; this one {duration:.3f} ms)\n" + mask(plan)
    return chosen


def mask(plan: str) -> str:
    """The plan without quoted constants (a custom plan shows a parameter's value)."""
    return "\n".join(_LITERAL.sub("'…'", line) for line in plan.splitlines() if line.strip())


# --------------------------------------------------------------------------------------------
# The report


@dataclass
class Growth:
    """One statement's cost per notification in the first and the last month."""

    key: Key
    query: str
    first: Stat
    last: Stat
    first_n: int
    last_n: int

    @property
    def first_ms(self) -> float:
        return self.first.ms / self.first_n

    @property
    def last_ms(self) -> float:
        return self.last.ms / self.last_n

    @property
    def grew_ms(self) -> float:
        return self.last_ms - self.first_ms


@dataclass
class StatementEvidence:
    """The readings the year run took (nmc_dev.soak.year) and the plans of its plan days."""

    marks: dict[str, Snapshot] = field(default_factory=dict)
    plans: dict[str, dict[str, str]] = field(default_factory=dict)  # month -> key -> plan
    evicted: int = 0

    def window(self, month: str) -> Snapshot | None:
        start, end = {"first": ("start", "first_end"), "last": ("last_start", "last_end")}[month]
        if start not in self.marks or end not in self.marks:
            return None
        return by_text(difference(self.marks[end], self.marks[start]))


def by_text(window: Snapshot) -> Snapshot:
    """One row per statement text (and level): PostgreSQL gives the same statement another
    query id when a parameter's type differs (psycopg sends a list of small ids as int2[],
    of larger ones as int4[]), so the ids of the first month are not the last's. The key's
    id is then a hash of the text, the same in both months."""
    merged: Snapshot = {}
    for (_, top), stat in window.items():
        key = (int.from_bytes(hashlib.blake2b(stat.query.encode(), digest_size=8).digest(),
                              "big", signed=True), top)  # fmt: skip
        seen = merged.get(key)
        merged[key] = stat if seen is None else Stat(
            stat.query, seen.calls + stat.calls, seen.plans + stat.plans,
            seen.exec_ms + stat.exec_ms, seen.plan_ms + stat.plan_ms, seen.rows + stat.rows,
            seen.hit + stat.hit, seen.read + stat.read,
        )  # fmt: skip
    return merged


def growth(first: Snapshot, last: Snapshot, notifications: Mapping[str, int]) -> list[Growth]:
    """Every statement of either month, most grown cost per notification first."""
    n_first, n_last = max(notifications.get("first", 0), 1), max(notifications.get("last", 0), 1)
    rows = []
    for key in first.keys() | last.keys():
        a = first.get(key) or Stat(last[key].query)
        b = last.get(key) or Stat(a.query)
        rows.append(Growth(key, b.query or a.query, a, b, n_first, n_last))
    return sorted(rows, key=lambda g: g.grew_ms, reverse=True)


def totals(window: Snapshot, notifications: int) -> float:
    """The top-level statements' time per notification (ms): the nested ones are in it."""
    return sum(s.ms for (_, top), s in window.items() if top) / max(notifications, 1)


def _per_call(stat: Stat) -> str:
    if not stat.calls:
        return "-"
    return (f"{stat.ms / stat.calls:.3f} ms, {stat.rows / stat.calls:.1f} rows, "
            f"{stat.hit / stat.calls:.0f}/{stat.read / stat.calls:.1f} blk")  # fmt: skip


def report(ev: StatementEvidence, notifications: Mapping[str, int], top: int = TOP) -> str:
    """The statements whose cost per notification grew most, and the plans of the first few."""
    from nmc_dev.demo.display import table

    first, last = ev.window("first"), ev.window("last")
    if first is None or last is None:
        return "Statements: not measured (the run ended before its last month)\n"
    n_first, n_last = notifications.get("first", 0), notifications.get("last", 0)
    grown = growth(first, last, notifications)[:top]
    out = [
        "Statements (pg_stat_statements, every statement inside the functions too; ms of "
        "execution per notification (a nested statement's planning in its caller's), first "
        "month -> last; per call: ms, rows, shared blocks hit/read):",
        f"  all top-level statements: {totals(first, n_first):.2f} -> "
        f"{totals(last, n_last):.2f} ms per notification"
        + (f"; {ev.evicted} entries evicted (windows incomplete)" if ev.evicted else ""),
    ]
    rows = []
    for g in grown:
        rows.append((
            f"{g.key[0] & 0xFFFFFFFF:08x}", "top" if g.key[1] else "nested",
            f"{g.first_ms:.3f}", f"{g.last_ms:.3f}", f"{g.grew_ms:+.3f}",
            f"{g.first.calls / max(n_first, 1):.2f}", f"{g.last.calls / max(n_last, 1):.2f}",
            _per_call(g.first), _per_call(g.last), _short(g.query),
        ))  # fmt: skip
    out.append(table(("id", "level", "first", "last", "grew", "calls/n first", "calls/n last",
                      "per call first", "per call last", "statement"),
                     rows, right=(2, 3, 4, 5, 6)))  # fmt: skip
    for g in grown[:PLANS_SHOWN]:
        out.append(f"\n  {g.key[0] & 0xFFFFFFFF:08x}: {_short(g.query, 400)}")
        for month in ("first", "last"):
            plan = ev.plans.get(month, {}).get(statement_key(g.query))
            if plan:
                lines = plan.splitlines()
                shown = lines[:PLAN_LINES] + (["…"] if len(lines) > PLAN_LINES else [])
                out.append(f"    plan, {month} month's plan day " + "\n      ".join(shown))
    return "\n".join(out) + "\n"


def _short(query: str, width: int = QUERY_WIDTH) -> str:
    return query if len(query) <= width else query[: width - 1] + "…"


def as_json(ev: StatementEvidence, notifications: Mapping[str, int]) -> list[dict[str, Any]]:
    """The per-statement rows of both months for year.json (statement texts, no values)."""
    first, last = ev.window("first"), ev.window("last")
    if first is None or last is None:
        return []
    return [
        {"queryid": g.key[0], "toplevel": g.key[1], "query": g.query,
         "first": g.first.__dict__, "last": g.last.__dict__,
         "first_ms_per_notification": g.first_ms, "last_ms_per_notification": g.last_ms}
        for g in growth(first, last, notifications)
    ]  # fmt: skip


def plan_days(first_month: Iterable[int], last_month: Iterable[int], days: int) -> dict[str, int]:
    """The day each month's plans are taken: outside both months' windows where they do not
    overlap, else the first quiet day after the traffic (days + 1) for the last month only."""
    first, last = list(first_month), list(last_month)
    if first[-1] + 1 < last[0] - 1:
        return {"first": first[-1] + 1, "last": last[0] - 1}
    return {"last": days + 1}
