"""What the soak reads after the run: the database, the simulators, the worker logs.

Everything here only reads. The database is read as the admin connection with the soak's
named queries (queries.sql, `soak_…`): the tables themselves, to check what the functions
did. The send calls come from the workers' JSON logs: `notifynl-verzenden` (taak, claim
epoch, attempt) is written just before each NotifyNL send, and `taak-klaar`,
`taak-uitgesteld`, `taak-mislukt`, `taak-overgenomen` (taak, epoch) say how that claim ended.
"""

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx

from nmc.database import connect
from nmc_dev.queries import QUERIES

# How a claim that made a send call ended, as its worker logged it.
CallEnd = Literal["committed", "abandoned", "uncommitted"]
NOT_COMMITTED = frozenset({"database-fout", "overgenomen"})  # the report itself failed
# A deferral for these means the call got no answer: NotifyNL may still process it.
NO_ANSWER = frozenset({"notifynl-timeout", "notifynl-verbinding"})
SEND = "verzenden"


@dataclass(frozen=True)
class NotificatieRow:
    id: str
    dv_id: int
    status: str
    reden: str | None
    versie: int


@dataclass(frozen=True)
class EventRow:
    notificatie_id: str
    sequence: int
    van: str | None
    naar: str


@dataclass
class DatabaseEvidence:
    notificaties: dict[str, NotificatieRow]
    events: list[EventRow]
    allowed: set[tuple[str | None, str]]
    send_epochs: dict[int, int]  # send task -> the claim epoch it ended with
    tasks: list[tuple[str, str, int]]  # (kind, state, count)
    task_errors: list[str]
    duplicate_ids: int  # NotifyNL ids recorded as duplicates on attempts
    attempt_of: dict[str, str] = field(default_factory=dict)  # attempt -> its notification


@dataclass(frozen=True)
class SendCall:
    taak_id: int
    epoch: int
    poging_id: str


@dataclass
class SendLog:
    calls: list[SendCall] = field(default_factory=list)
    ends: dict[tuple[int, int], CallEnd] = field(default_factory=dict)
    unreadable_lines: int = 0


@dataclass
class SimEvidence:
    accepted_per_reference: dict[str, int]  # NotifyNL: accepted sends per attempt id
    send_answers: Counter[str]  # status of every send call NotifyNL received
    sends_per_reference: Counter[str]  # send calls NotifyNL received per attempt id
    lookups: int  # searches by reference (each one a re-claim that reached NotifyNL)
    callbacks: Counter[str]  # per callback copy: delivered, lost, gave-up, …
    duplicated_callbacks: int  # receipts sent more than once
    profielservice_answers: Counter[str]
    ldv_records: list[Any]
    limits: dict[str, Any]  # NotifyNL's refusals per limit and service, injected faults apart
    # Per attempt the refusals switched on at NotifyNL (/_sim/weigering) its sends met.
    refused: dict[str, set[str]] = field(default_factory=dict)


def read_database(url: str) -> DatabaseEvidence:
    with connect(url) as conn:
        notificaties = {
            row[0]: NotificatieRow(*row) for row in conn.execute(QUERIES["soak_notificaties"])
        }
        events = [EventRow(*row) for row in conn.execute(QUERIES["soak_events"])]
        allowed = {(van, naar) for van, naar in conn.execute(QUERIES["soak_allowed_transitions"])}
        send_epochs = dict(conn.execute(QUERIES["soak_send_claims"]).fetchall())
        tasks = [(s, st, int(n)) for s, st, n in conn.execute(QUERIES["soak_tasks"])]
        task_errors = [row[0] for row in conn.execute(QUERIES["soak_task_errors"])]
        attempts = conn.execute(QUERIES["soak_attempts"]).fetchall()
    return DatabaseEvidence(
        notificaties,
        events,
        allowed,
        send_epochs,
        tasks,
        task_errors,
        duplicate_ids=sum(row[2] for row in attempts),
        attempt_of={row[0]: row[1] for row in attempts},
    )


@dataclass(frozen=True)
class BusyTask:
    """A task that keeps the pipeline busy (query soak_bezig): no personal data."""

    taak_id: int
    soort: str
    staat: str
    due_s: float  # seconds from nmc.now(); negative: due since
    lease_s: float | None  # seconds from nmc.now() to the lease's end (claimed only)
    claim_epoch: int
    pogingen: int
    uitstellen: int
    laatste_fout: str | None
    notificatie_status: str | None
    claimbaar: bool  # what the claims would take now
    met_werk: bool  # the worker's lookout sees work of its kind
    dicht: bool  # a send whose (DV, berichttype) gets no token now
    totaal: int  # all such tasks, not only the rows read


def read_busy(url: str, soorten: Iterable[str], limit: int = 10) -> list[BusyTask]:
    """The tasks of these kinds that are claimed or due, and every open send, earliest due
    first (at most `limit`)."""
    with connect(url) as conn:
        rows = conn.execute(
            QUERIES["soak_bezig"], {"soorten": sorted(soorten), "limit": limit}
        ).fetchall()
    return [BusyTask(*row) for row in rows]


def describe_busy(tasks: list[BusyTask]) -> str:
    """One line per task, for a phase that timed out: what keeps the pipeline busy."""
    if not tasks:
        return "no task claimed, due or waiting to send"
    lines = [f"{tasks[0].totaal} tasks claimed, due or waiting to send"
             + (f" (the first {len(tasks)})" if tasks[0].totaal > len(tasks) else "")]  # fmt: skip
    for t in tasks:
        lease = f", lease {_relative(t.lease_s)}" if t.lease_s is not None else ""
        views = [
            "claimable" if t.claimbaar else "not claimable",
            "the lookout finds work of its kind"
            if t.met_werk
            else "the lookout finds no work of its kind",
        ]
        if t.dicht:
            views.append("its (DV, berichttype) gets no token")
        lines.append(
            f"task {t.taak_id} {t.soort}/{t.staat}, due {_relative(t.due_s)}{lease}, "
            f"epoch {t.claim_epoch}, pogingen {t.pogingen}, uitstellen {t.uitstellen}, "
            f"laatste_fout {t.laatste_fout or '-'}, notification {t.notificatie_status or '-'}; "
            + ", ".join(views)
        )
    return "\n  ".join(lines)


def _relative(seconds: float) -> str:
    return f"in {seconds:.0f} s" if seconds > 0 else f"{-seconds:.0f} s ago"


def lift_proof_call_rate(url: str, per_minuut: int = 1_000_000) -> None:
    """Let the verdict fetch every proof at once (the per-DV proof call rate, lifted)."""
    with connect(url) as conn:
        conn.execute(QUERIES["soak_bewijs_aanroeplimiet"], {"per_minuut": per_minuut})


def read_versions(url: str) -> dict[str, int]:
    """Every notification's version (what a caught-up feed consumer holds)."""
    with connect(url) as conn:
        return {row[0]: row[4] for row in conn.execute(QUERIES["soak_notificaties"])}


def read_send_log(paths: Iterable[Path]) -> SendLog:
    log = SendLog()
    for path in paths:
        for line in path.read_text(errors="replace").splitlines():
            if not line.startswith("{"):
                continue  # the supervisor's start markers, a traceback
            try:
                entry = json.loads(line)
            except ValueError:
                log.unreadable_lines += 1  # cut off by a SIGKILL
                continue
            _take(log, entry)
    return log


def _take(log: SendLog, entry: dict[str, Any]) -> None:
    if entry.get("soort") != SEND or "epoch" not in entry:
        return
    name = entry.get("event")
    key = (int(entry["taak_id"]), int(entry["epoch"]))
    if name == "notifynl-verzenden":
        log.calls.append(SendCall(key[0], key[1], str(entry["poging_id"])))
    elif name == "taak-overgenomen" or entry.get("uitkomst") in NOT_COMMITTED:
        log.ends[key] = "uncommitted"
    elif name == "taak-uitgesteld" and entry.get("fout") in NO_ANSWER:
        log.ends[key] = "abandoned"
    elif name in ("taak-klaar", "taak-uitgesteld", "taak-mislukt"):
        log.ends[key] = "committed"


def read_simulators(notifynl_url: str, profielservice_url: str, ldv_url: str) -> SimEvidence:
    with httpx.Client(timeout=120) as http:
        sent = http.get(notifynl_url + "/_sim/sent").json()
        requests = http.get(notifynl_url + "/_sim/requests").json()
        callbacks = http.get(notifynl_url + "/_sim/callbacks").json()["callbacks"]
        limits = http.get(notifynl_url + "/_sim/limits").json()
        profiel = http.get(profielservice_url + "/_sim/requests").json()
        ldv = http.get(ldv_url + "/ldv/v1/records").json()
    sends = [r for r in requests if r["method"] == "POST" and r["path"].endswith("/email")]
    lookups = [r for r in requests if r["method"] == "GET" and r.get("reference")]
    per_notification = Counter(c["notification_id"] for c in callbacks if c["result"] != "lost")
    refused: dict[str, set[str]] = {}
    for r in sends:
        if r.get("weigering") and r.get("reference"):
            refused.setdefault(r["reference"], set()).add(r["weigering"])
    return SimEvidence(
        accepted_per_reference={k: int(v) for k, v in sent["per_reference"].items() if k},
        send_answers=Counter(str(r["status"]) for r in sends),
        sends_per_reference=Counter(r["reference"] for r in sends if r.get("reference")),
        lookups=len(lookups),
        callbacks=Counter(c["result"] for c in callbacks),
        duplicated_callbacks=sum(1 for n in per_notification.values() if n > 1),
        profielservice_answers=Counter(str(r["status"] or "hung") for r in profiel),
        ldv_records=ldv if isinstance(ldv, list) else ldv.get("records", []),
        refused=refused,
        limits=limits,
    )


def log_texts(paths: Iterable[Path]) -> list[tuple[str, str]]:
    """(name, text) of every log file that exists."""
    return [(p.name, p.read_text(errors="replace")) for p in paths if p.exists()]
