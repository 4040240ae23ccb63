"""The soak's verdicts: pure functions over what the run left behind (nmc_dev.soak.evidence).

Each check returns a `Verdict`: a figure for the summary, the number of violations and a few
examples (notification or attempt ids and statuses, never a personal value). They are pure
so that a test can hand them a crafted violation and see each one fail.
"""

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from nmc_dev.demo.display import table
from nmc_dev.soak.evidence import EventRow, NotificatieRow, SendLog
from nmc_dev.soak.privacy import Finding

TERMINAL = frozenset({
    "definitief-bezorgd", "niet-bezorgbaar", "technisch-mislukt", "bezorgstatus-onbekend",
    "verlopen", "geannuleerd",
})  # fmt: skip
# SPEC §4: terminal statuses absorb, except bezorgstatus-onbekend (a late receipt may still
# move it to bezorgd or niet-bezorgbaar).
ABSORBING = TERMINAL - {"bezorgstatus-onbekend"}
EXAMPLES = 5


@dataclass
class Verdict:
    name: str
    figure: str = ""
    count: int = 0  # violations
    examples: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.count == 0

    def violation(self, example: str) -> None:
        self.count += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(example)


class HeldStatus(Protocol):
    status: str
    versie: int
    reden: str | None


# ---------------------------------------------------------------------------------------
# Intake: every 202 the client saw


def intake(
    ids_by_dvref: Mapping[str, set[str]],
    submitted: int,
    failed_jobs: Iterable[str],
    notificaties: Mapping[str, NotificatieRow],
) -> list[Verdict]:
    accepted = Verdict("every submission accepted, one id per dvRef")
    for job in failed_jobs:
        accepted.violation(f"given up: {job}")
    missing = submitted - len(ids_by_dvref)
    for _ in range(max(0, missing)):
        accepted.violation("a notification without a 202")
    for ids in ids_by_dvref.values():
        if len(ids) > 1:  # the dvRef itself is personal: name the ids
            accepted.violation(f"one dvRef, {len(ids)} ids: {', '.join(sorted(ids))}")
    seen = {i for ids in ids_by_dvref.values() for i in ids}
    accepted.figure = f"{len(seen)} ids seen in 202s for {submitted} notifications"

    final = Verdict("every accepted notification exists, in a terminal status")
    for notificatie_id in sorted(seen):
        row = notificaties.get(notificatie_id)
        if row is None:
            final.violation(f"{notificatie_id}: not in the database")
        elif row.status not in TERMINAL:
            final.violation(f"{notificatie_id}: {row.status} (versie {row.versie})")
    final.figure = f"{len(seen) - final.count} of {len(seen)}"

    unseen = Verdict("no notification in the database the client never saw")
    for notificatie_id in sorted(set(notificaties) - seen):
        unseen.violation(f"{notificatie_id}: {notificaties[notificatie_id].status}")
    unseen.figure = f"{len(notificaties)} in the database"
    return [accepted, final, unseen]


def intake_during_restart(
    answers: Mapping[str, int], during: Mapping[str, int] | None, restart_error: str | None
) -> Verdict:
    """The API kept answering intake through the PostgreSQL restart (`during`: from the
    shutdown until shortly after the start): 503s (the client retries them; intake is
    idempotent), never a 500 (a refusal as if the request were wrong). No answer at all in
    that time means the restart missed the intake: the soak did not test what it claims."""
    verdict = Verdict("intake answered through the PostgreSQL restart: 503s, never a 500")
    if restart_error or during is None:
        verdict.violation(f"PostgreSQL was not restarted ({restart_error or 'never due'})")
    elif not during:
        verdict.violation("no intake call was answered through the restart")
    for status, count in sorted(answers.items()):
        if status.isdigit() and int(status) >= 500 and status != "503":
            verdict.violation(f"{count} intake answers {status}")
    shown = ", ".join(f"{k} {v}" for k, v in sorted((during or {}).items())) or "none"
    verdict.figure = f"answers through the restart: {shown}"
    return verdict


# ---------------------------------------------------------------------------------------
# The event log


def event_chains(
    notificaties: Mapping[str, NotificatieRow],
    events: Iterable[EventRow],
    allowed: set[tuple[str | None, str]],
) -> list[Verdict]:
    chains: dict[str, list[EventRow]] = defaultdict(list)
    for event in events:
        chains[event.notificatie_id].append(event)
    gapless = Verdict("every event chain gap-free: sequence 1..versie, ending in the status")
    pairs = Verdict("every (van, naar) allowed and chained to the event before")
    terminal = Verdict("no notification with two terminal events")
    total = 0
    for notificatie_id, chain in sorted(chains.items()):
        chain.sort(key=lambda e: e.sequence)
        total += len(chain)
        row = notificaties.get(notificatie_id)
        sequences = [e.sequence for e in chain]
        if row is None:
            gapless.violation(f"{notificatie_id}: events of a notification not in the table")
        elif sequences != list(range(1, row.versie + 1)) or chain[-1].naar != row.status:
            gapless.violation(
                f"{notificatie_id}: sequences {_short(sequences)} for versie {row.versie}, "
                f"last {chain[-1].naar} for status {row.status}"
            )
        previous: str | None = None
        for event in chain:
            if (event.van, event.naar) not in allowed:
                pairs.violation(f"{notificatie_id} #{event.sequence}: {event.van} -> {event.naar}")
            elif event.van != previous:
                pairs.violation(
                    f"{notificatie_id} #{event.sequence}: from {event.van}, "
                    f"but the event before went to {previous}"
                )
            previous = event.naar
        absorbed = [e for e in chain if e.naar in ABSORBING]
        if len(absorbed) > 1 or (absorbed and chain[-1] is not absorbed[0]):
            path = " -> ".join(e.naar for e in chain)
            terminal.violation(f"{notificatie_id}: {path}")
    for notificatie_id in sorted(set(notificaties) - set(chains)):
        gapless.violation(f"{notificatie_id}: no events at all")
    gapless.figure = f"{total} events of {len(chains)} notifications"
    pairs.figure = f"{len(allowed)} allowed pairs"
    terminal.figure = "bezorgstatus-onbekend may be left (SPEC §4)"
    return [gapless, pairs, terminal]


# ---------------------------------------------------------------------------------------
# The DV's feed


def feed(
    notificaties: Mapping[str, NotificatieRow],
    held_per_consumer: Mapping[str, Mapping[str, HeldStatus]],
) -> Verdict:
    """Every notification held by exactly one consumer (its DV's), at its final status and
    version; nothing held that the database does not have."""
    verdict = Verdict("the feed consumers hold exactly the final status of every notification")
    holder: dict[str, str] = {}
    for consumer, held in sorted(held_per_consumer.items()):
        dv_ids = {notificaties[i].dv_id for i in held if i in notificaties}
        if len(dv_ids) > 1:
            verdict.violation(f"consumer {consumer} holds notifications of {len(dv_ids)} DVs")
        for notificatie_id, state in held.items():
            if notificatie_id in holder:
                verdict.violation(f"{notificatie_id}: held by two consumers")
            holder[notificatie_id] = consumer
            row = notificaties.get(notificatie_id)
            if row is None:
                verdict.violation(f"{notificatie_id}: held, but not in the database")
            elif (state.status, state.versie, state.reden) != (row.status, row.versie, row.reden):
                verdict.violation(
                    f"{notificatie_id}: feed {state.status}/{state.reden} v{state.versie}, "
                    f"database {row.status}/{row.reden} v{row.versie}"
                )
    for notificatie_id in sorted(set(notificaties) - set(holder)):
        verdict.violation(f"{notificatie_id}: never seen in the feed")
    verdict.figure = f"{len(holder)} held by {len(held_per_consumer)} consumers"
    return verdict


# ---------------------------------------------------------------------------------------
# The delivery proofs (nmc_dev.soak.proofs)


def afleverbewijzen(
    notificaties: Mapping[str, NotificatieRow],
    events: Iterable[EventRow],
    proofs: Mapping[str, Mapping],
    failures: Mapping[str, str],
    held_per_consumer: Mapping[str, Mapping[str, HeldStatus]],
) -> Verdict:
    """Every terminal notification has a proof that verified (nmc_client: signature, issuer,
    id, a whole chain), is final, names the database's status, reason and version, carries
    exactly the event log's chain, and agrees with what its DV's feed consumer holds."""
    verdict = Verdict(
        "every terminal notification's proof verifies, agrees with its event chain and the feed"
    )
    chains: dict[str, list[tuple[int, str | None, str]]] = defaultdict(list)
    for event in events:
        chains[event.notificatie_id].append((event.sequence, event.van, event.naar))
    held: dict[str, HeldStatus] = {}
    for states in held_per_consumer.values():
        held.update(states)
    checked = 0
    for notificatie_id, row in sorted(notificaties.items()):
        if row.status not in TERMINAL:
            continue
        checked += 1
        if notificatie_id in failures:
            verdict.violation(f"{notificatie_id}: the proof does not verify: "
                              f"{failures[notificatie_id]}")  # fmt: skip
            continue
        claims = proofs.get(notificatie_id)
        if claims is None:
            verdict.violation(f"{notificatie_id}: no proof")
            continue
        stated = claims["notificatie"]
        said = (stated["status"], stated["reden"], stated["versie"])
        if not claims["definitief"] or said != (row.status, row.reden, row.versie):
            verdict.violation(
                f"{notificatie_id}: proof {said[0]}/{said[1]} v{said[2]}, database "
                f"{row.status}/{row.reden} v{row.versie}"
            )
        chain = [(e["sequence"], e["van"], e["naar"]) for e in claims["events"]]
        if chain != sorted(chains.get(notificatie_id, [])):
            verdict.violation(f"{notificatie_id}: the proof's chain is not the event log's")
        state = held.get(notificatie_id)
        if state is None or (state.status, state.reden, state.versie) != said:
            verdict.violation(f"{notificatie_id}: the proof says {said[0]} v{said[2]}, the "
                              f"feed consumer {state.status if state else 'nothing'}")  # fmt: skip
    verdict.figure = f"{len(proofs)} proofs verified for {checked} terminal notifications"
    return verdict


# The members that tell when a proof was issued: the NMC's clock and the signer's.
ISSUE_TIME = frozenset({"uitgegevenOp", "iat"})


def afleverbewijzen_vast(first: Mapping[str, Mapping], later: Mapping[str, Mapping]) -> Verdict:
    """Every final proof fetched twice (first while the workers still ran, late receipts,
    reconciliation and settlement going on; later once nothing moves) is the same but for its
    issue time. bezorgstatus-onbekend is left out: a late receipt may still correct it."""
    verdict = Verdict("every final proof fetched twice is the same but for its issue time")
    compared = 0
    for notificatie_id, claims in sorted(first.items()):
        if not claims.get("definitief") or claims["notificatie"]["status"] not in ABSORBING:
            continue
        compared += 1
        again = later.get(notificatie_id)
        if again is None:
            verdict.violation(f"{notificatie_id}: not fetched again")
            continue
        differ = sorted(
            key
            for key in (set(claims) | set(again)) - ISSUE_TIME
            if claims.get(key) != again.get(key)
        )
        if differ:
            verdict.violation(f"{notificatie_id}: the final proof changed: {', '.join(differ)}")
    verdict.figure = f"{compared} final proofs fetched twice"
    return verdict


# ---------------------------------------------------------------------------------------
# Duplicate e-mails


@dataclass(frozen=True)
class InFlight:
    duplicates: Counter[str]  # attempt -> e-mails NotifyNL accepted beyond the first
    expiries: Counter[str]  # attempt -> leases that ran out with a send call in flight
    abandoned: Counter[str]  # attempt -> send calls given up without an answer (timeout)
    logged_calls: Counter[str]  # attempt -> send calls the workers logged


def in_flight(
    accepted_per_reference: Mapping[str, int],
    send_log: SendLog,
    send_epochs: Mapping[int, int],
) -> InFlight:
    """Count both sides per attempt.

    A lease expiry with a call in flight: a claim that made a send call (worker log) and
    never committed its outcome (killed, fenced off, database gone) while its task was
    claimed again later (the task's epoch in the database is higher). Abandoned: a claim
    that gave the call up on a timeout or a broken connection and deferred the task."""
    expiries: Counter[str] = Counter()
    abandoned: Counter[str] = Counter()
    logged: Counter[str] = Counter()
    for call in send_log.calls:
        logged[call.poging_id] += 1
        end = send_log.ends.get((call.taak_id, call.epoch), "uncommitted")
        if end == "uncommitted" and send_epochs.get(call.taak_id, 0) > call.epoch:
            expiries[call.poging_id] += 1
        elif end == "abandoned":
            abandoned[call.poging_id] += 1
    duplicates = Counter({r: n - 1 for r, n in accepted_per_reference.items() if n > 1})
    return InFlight(duplicates, expiries, abandoned, logged)


def duplicates(counts: InFlight, sends_per_reference: Mapping[str, int]) -> list[Verdict]:
    """A second e-mail for one attempt needs a re-claim whose lookup by reference missed an
    earlier send of that attempt, so that earlier claim ended without the call's answer:
    its lease ran out (the issue's bound) or it gave up on a timeout. Judged per attempt."""
    total_d = sum(counts.duplicates.values())
    total_e = sum(counts.expiries.values())
    total_t = sum(counts.abandoned.values())
    bound = Verdict("e-mails accepted twice for one attempt <= calls in flight at the re-claim")
    for reference, extra in sorted(counts.duplicates.items()):
        in_flight_here = counts.expiries[reference] + counts.abandoned[reference]
        if extra > in_flight_here:
            bound.violation(
                f"attempt {reference}: {extra + 1} e-mails accepted, {in_flight_here} calls "
                "in flight"
            )
    bound.figure = (
        f"{total_d} duplicate e-mails; {total_e} lease expiries with a send call in flight "
        f"(+ {total_t} send calls abandoned on a timeout)"
    )
    # The count above is only sound if the logs show every send call NotifyNL received.
    complete = Verdict("every send call NotifyNL received is in a worker log")
    for reference, received in sorted(sends_per_reference.items()):
        if received > counts.logged_calls[reference]:
            complete.violation(
                f"attempt {reference}: {received} calls received, "
                f"{counts.logged_calls[reference]} logged"
            )
    complete.figure = (
        f"{sum(sends_per_reference.values())} received, {sum(counts.logged_calls.values())} logged"
    )
    return [bound, complete]


# ---------------------------------------------------------------------------------------
# NotifyNL's limits


def notifynl_limits(limits: Mapping[str, Any]) -> Verdict:
    """No RateLimitError caused by the NMC's own pace: the simulator limits every service as
    NotifyNL does (its /_sim/limits counts each refusal per service); the 429s the soak
    injects as faults are counted apart there and are no violation. A simulator that limited
    nothing would prove nothing, so that fails too."""
    verdict = Verdict("no RateLimitError of NotifyNL caused by the NMC's own pace")
    rate, mode = limits.get("rate_limit"), limits.get("rate_limit_mode")
    if rate is None and not limits.get("rate_limits"):
        verdict.violation("the simulator applied no rate limit")
    refused = limits.get("refused", {})
    for service, count in sorted(refused.get("RateLimitError", {}).items()):
        if count:
            verdict.violation(f"service {service}: {count} RateLimitErrors")
    admitted = sum(limits.get("admitted", {}).values())
    injected = limits.get("injected", {})
    verdict.figure = (
        f"{admitted} sends within NotifyNL's rate limit ({mode}, {rate} per 60 s); "
        f"{sum(refused.get('TooManyRequestsError', {}).values())} TooManyRequestsErrors; "
        f"injected apart: {', '.join(f'{n}x {c}' for c, n in sorted(injected.items())) or 'none'}"
    )
    return verdict


# ---------------------------------------------------------------------------------------
# Personal data and processes


# ---------------------------------------------------------------------------------------
# NotifyNL's refusals switched on for a while (nmc_dev.soak.chaos): a team-only key is our
# configuration (the sends wait and go out after the switch back, never onbereikbaar); a
# template edited after the intake (Missing personalisation) ends its notifications
# technisch-mislukt.

TEAM_ONLY = "team-only"
TEMPLATE_EDIT = "missing-personalisation"


def refusals(
    refused: Mapping[str, set[str]],
    accepted_per_reference: Mapping[str, int],
    attempt_of: Mapping[str, str],
    notificaties: Mapping[str, NotificatieRow],
) -> list[Verdict]:
    """`refused`: per attempt (NotifyNL's reference) the refusals NotifyNL answered its sends
    with. An attempt NotifyNL accepted later went out: whatever its outcome, it is NotifyNL's
    verdict on the e-mail (a refusal whose commit was lost is sent again by the re-claim)."""
    onbereikbaar = Verdict("a team-only key never makes a notification onbereikbaar")
    out = Verdict("the sends a team-only key refused go out after the switch back")
    edited = Verdict("a template edited after the intake ends its notifications technisch-mislukt")
    team = edit = 0
    for reference, kinds in sorted(refused.items()):
        if accepted_per_reference.get(reference):
            team += TEAM_ONLY in kinds
            edit += TEMPLATE_EDIT in kinds
            continue
        row = notificaties.get(attempt_of.get(reference, ""))
        final = f"{row.status}/{row.reden or '-'}" if row else "not in the database"
        where = f"{row.id}: {final}" if row else f"attempt {reference}: {final}"
        if TEAM_ONLY in kinds:
            team += 1
            if row is not None and (row.status, row.reden) == ("niet-bezorgbaar", "onbereikbaar"):
                onbereikbaar.violation(where)
            # Expired while deferred, or refused again in the template's window after it.
            ended = row is not None and (
                row.status == "verlopen"
                or (TEMPLATE_EDIT in kinds and row.status == "technisch-mislukt")
            )
            if not ended:
                out.violation(where)
        if TEMPLATE_EDIT in kinds:
            edit += 1
            if row is None or (row.status, row.reden) not in (
                ("technisch-mislukt", "technisch"),
                ("verlopen", "verlopen"),
            ):
                edited.violation(where)
    onbereikbaar.figure = f"{team} sends refused for a team-only key"
    out.figure = f"{team - out.count} of {team} went out (or expired while deferred)"
    edited.figure = f"{edit} sends refused as Missing personalisation, {edited.count} not final"
    return [onbereikbaar, out, edited]


def privacy(findings: Iterable[Finding], places: int) -> Verdict:
    verdict = Verdict("no personal data in any process's log (nor LDV, metrics, task errors)")
    for finding in findings:
        verdict.violation(str(finding))
    verdict.figure = f"{places} outputs scanned"
    return verdict


def processes(unexpected_exits: Iterable[str], restart_failures: int) -> Verdict:
    verdict = Verdict("no part exited unless killed")
    for exit_ in unexpected_exits:
        verdict.violation(exit_)
    verdict.figure = f"{restart_failures} failed restarts (tried again)"
    return verdict


def write_verdicts(out: TextIO, verdicts: list[Verdict]) -> None:
    """The checks' table, each violation's examples, and the one-line outcome (the soak's, the
    drills' and the year's report end alike)."""
    rows = [(v.name, v.figure, "ok" if v.ok else f"VIOLATED ({v.count})") for v in verdicts]
    out.write(table(("check", "figure", "result"), rows) + "\n")
    for verdict in verdicts:
        for example in verdict.examples:
            out.write(f"    {verdict.name}: {example}\n")
    failed = sum(1 for v in verdicts if not v.ok)
    out.write(f"\n{'every check passed' if not failed else f'{failed} checks VIOLATED'}\n")
    out.flush()


def exit_code(verdicts: Iterable[Verdict]) -> int:
    """0 when every check holds, else 1 (the soak's exit code)."""
    return 0 if all(v.ok for v in verdicts) else 1


def _short(sequences: list[int]) -> str:
    return str(sequences) if len(sequences) <= 8 else f"{sequences[:8]}…"
