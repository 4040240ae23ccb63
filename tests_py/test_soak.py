"""`nmc soak`: the checker fails on every kind of crafted violation, and a CI-sized
soak (400 notifications, faults, kills, a PostgreSQL restart) passes end to end in its own
NMC_HOME and port (the shared cluster is never touched)."""

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import psycopg
import pytest

from nmc_dev.demo.display import Display
from nmc_dev.soak import checks, evidence, privacy, workload
from nmc_dev.soak import run as soak_run
from nmc_dev.soak.chaos import ChaosFigures
from nmc_dev.soak.evidence import EventRow, NotificatieRow, SendCall, SendLog
from nmc_dev.soak.run import Options, PhaseTimeout, Soak
from stacktest import free_port, needs_server_binaries, private_home, processes_of

SOAK_TIMEOUT_S = 170  # the issue's budget is 3 minutes on this loaded 2-core machine

A, B, C = (f"00000000-0000-4000-8000-00000000000{i}" for i in (1, 2, 3))
ALLOWED = {
    (None, "aangenomen"), ("aangenomen", "in-verzending"), ("in-verzending", "verzonden"),
    ("verzonden", "bezorgd"), ("bezorgd", "definitief-bezorgd"),
    ("verzonden", "bezorgstatus-onbekend"), ("bezorgstatus-onbekend", "bezorgd"),
    ("verzonden", "niet-bezorgbaar"), ("aangenomen", "geannuleerd"),
}  # fmt: skip


def row(notificatie_id: str, status: str, versie: int, reden=None, dv_id=1) -> NotificatieRow:
    return NotificatieRow(notificatie_id, dv_id, status, reden, versie)


def chain(notificatie_id: str, *statuses: str) -> list[EventRow]:
    events, previous = [], None
    for sequence, naar in enumerate(statuses, start=1):
        events.append(EventRow(notificatie_id, sequence, previous, naar))
        previous = naar
    return events


DELIVERED = ("aangenomen", "in-verzending", "verzonden", "bezorgd", "definitief-bezorgd")


def by_name(verdicts: list[checks.Verdict]) -> dict[str, checks.Verdict]:
    return {v.name: v for v in verdicts}


# ---------------------------------------------------------------------------------------
# Intake


def test_intake_checks_pass_on_a_clean_run_and_fail_on_each_violation():
    notificaties = {A: row(A, "definitief-bezorgd", 5), B: row(B, "geannuleerd", 2)}
    clean = checks.intake({"r1": {A}, "r2": {B}}, 2, [], notificaties)
    assert all(v.ok for v in clean)
    assert checks.exit_code(clean) == 0

    # A 202 whose notification is gone, one still under way, a dvRef with two ids, a job
    # given up, and a notification nobody saw.
    notificaties = {A: row(A, "verzonden", 3), C: row(C, "definitief-bezorgd", 5)}
    broken = by_name(checks.intake({"r1": {A}, "r2": {B, C}}, 3, ["intake X (1)"], notificaties))
    accepted = broken["every submission accepted, one id per dvRef"]
    assert accepted.count == 3  # the given-up job, the missing 202, the second id
    final = broken["every accepted notification exists, in a terminal status"]
    assert final.count == 2
    assert any("not in the database" in e for e in final.examples)
    assert any("verzonden" in e for e in final.examples)
    unseen = checks.intake({"r1": {A}}, 1, [], {A: row(A, "verlopen", 2), B: row(B, "verlopen", 2)})
    assert by_name(unseen)["no notification in the database the client never saw"].count == 1
    assert checks.exit_code(broken.values()) == 1


def test_intake_during_the_restart_must_answer_and_never_with_a_500():
    assert checks.intake_during_restart({"202": 9, "503": 3}, {"503": 3}, None).ok
    assert not checks.intake_during_restart({"202": 9, "500": 1}, {"503": 3}, None).ok
    assert not checks.intake_during_restart({"202": 9}, {}, None).ok  # nothing answered
    assert not checks.intake_during_restart({"202": 9}, None, "StackError").ok


# ---------------------------------------------------------------------------------------
# The event log


def test_event_chains_pass_a_late_receipt_after_bezorgstatus_onbekend():
    onbekend_then_delivered = (
        "aangenomen", "in-verzending", "verzonden", "bezorgstatus-onbekend", "bezorgd",
        "definitief-bezorgd",
    )  # fmt: skip
    notificaties = {A: row(A, "definitief-bezorgd", 5), B: row(B, "definitief-bezorgd", 6)}
    events = chain(A, *DELIVERED) + chain(B, *onbekend_then_delivered)
    assert all(v.ok for v in checks.event_chains(notificaties, events, ALLOWED))


@pytest.mark.parametrize(
    ("events", "status", "versie", "failing"),
    [
        # a gap: sequence 3 is missing
        ([e for e in chain(A, *DELIVERED) if e.sequence != 3], "definitief-bezorgd", 5,
         "gap-free"),
        # the table's version is ahead of the events
        (chain(A, *DELIVERED), "definitief-bezorgd", 6, "gap-free"),
        # the last event is not the status
        (chain(A, *DELIVERED[:4]), "definitief-bezorgd", 4, "gap-free"),
        # a pair the trigger should have refused
        (chain(A, "aangenomen", "verzonden"), "verzonden", 2, "allowed"),
        # an allowed pair that does not chain: from bezorgd, but the event before went to
        # in-verzending
        ([*chain(A, "aangenomen", "in-verzending"),
          EventRow(A, 3, "bezorgd", "definitief-bezorgd")], "definitief-bezorgd", 3, "allowed"),
        # an absorbing terminal status left again
        (chain(A, "aangenomen", "geannuleerd", "in-verzending"), "in-verzending", 3, "terminal"),
        # two terminal events
        (chain(A, "aangenomen", "in-verzending", "verzonden", "niet-bezorgbaar",
               "niet-bezorgbaar"), "niet-bezorgbaar", 5, "terminal"),
    ],
)  # fmt: skip
def test_event_chains_fail_on_a_crafted_violation(events, status, versie, failing):
    verdicts = checks.event_chains({A: row(A, status, versie)}, events, ALLOWED)
    broken = [v.name for v in verdicts if not v.ok]
    assert any(failing in name for name in broken), broken


def test_a_notification_without_events_or_events_without_a_notification_fail():
    verdicts = checks.event_chains({A: row(A, "aangenomen", 1)}, chain(B, "aangenomen"), ALLOWED)
    assert verdicts[0].count == 2


# ---------------------------------------------------------------------------------------
# The feed


@dataclass(frozen=True)
class Held:
    status: str
    versie: int
    reden: str | None = None


def test_feed_check_wants_exactly_the_final_state_from_each_dv_consumer():
    notificaties = {
        A: row(A, "definitief-bezorgd", 5),
        B: row(B, "niet-bezorgbaar", 4, "onbereikbaar", dv_id=2),
    }
    good = {"dv1": {A: Held("definitief-bezorgd", 5)},
            "dv2": {B: Held("niet-bezorgbaar", 4, "onbereikbaar")}}  # fmt: skip
    assert checks.feed(notificaties, good).ok

    behind = {"dv1": {A: Held("bezorgd", 4)}, "dv2": good["dv2"]}
    assert checks.feed(notificaties, behind).count == 1
    wrong_reason = {"dv1": good["dv1"], "dv2": {B: Held("niet-bezorgbaar", 4, "technisch")}}
    assert checks.feed(notificaties, wrong_reason).count == 1
    missing = {"dv1": good["dv1"], "dv2": {}}
    assert checks.feed(notificaties, missing).count == 1
    extra = {"dv1": {**good["dv1"], C: Held("bezorgd", 4)}, "dv2": good["dv2"]}
    assert checks.feed(notificaties, extra).count == 1
    leaked = {"dv1": {**good["dv1"], **good["dv2"]}, "dv2": good["dv2"]}
    assert checks.feed(notificaties, leaked).count == 2  # two DVs in one feed, held twice


# ---------------------------------------------------------------------------------------
# The delivery proofs


def proof_of(notificatie_id: str, status: str, versie: int, reden=None, *statuses: str) -> dict:
    """The claims of a verified proof (as nmc_dev.soak.proofs keeps them)."""
    events, previous = [], None
    for sequence, naar in enumerate(statuses, start=1):
        events.append({"sequence": sequence, "van": previous, "naar": naar})
        previous = naar
    return {
        "sub": notificatie_id,
        "definitief": True,
        "notificatie": {"status": status, "reden": reden, "versie": versie},
        "events": events,
    }


def test_proof_check_wants_a_verified_final_proof_agreeing_with_the_log_and_the_feed():
    notificaties = {A: row(A, "definitief-bezorgd", 5), B: row(B, "geannuleerd", 2, "geannuleerd")}
    events = [*chain(A, *DELIVERED), *chain(B, "aangenomen", "geannuleerd")]
    held = {"dv1": {A: Held("definitief-bezorgd", 5), B: Held("geannuleerd", 2, "geannuleerd")}}
    good = {
        A: proof_of(A, "definitief-bezorgd", 5, None, *DELIVERED),
        B: proof_of(B, "geannuleerd", 2, "geannuleerd", "aangenomen", "geannuleerd"),
    }
    assert checks.afleverbewijzen(notificaties, events, good, {}, held).ok

    def count(proofs, failures=None, held=held, notificaties=notificaties) -> int:
        return checks.afleverbewijzen(notificaties, events, proofs, failures or {}, held).count

    assert count({A: good[A]}, {B: "the signature does not verify"}) == 1
    assert count({A: good[A]}) == 1  # no proof at all
    other_chain = proof_of(A, "definitief-bezorgd", 5, None, "aangenomen", "in-verzending",
                           "verzonden", "verzonden", "definitief-bezorgd")  # fmt: skip
    assert count({**good, A: other_chain}) == 1
    not_final = {**good, A: {**good[A], "definitief": False}}
    assert count(not_final) == 1
    other_status = {**good, B: proof_of(B, "verlopen", 2, "verlopen", "aangenomen", "verlopen")}
    assert count(other_status) >= 2  # the database's status and the chain both differ
    feed_behind = {"dv1": {**held["dv1"], A: Held("bezorgd", 4)}}
    assert count(good, held=feed_behind) == 1
    still_open = {**notificaties, C: row(C, "verzonden", 3)}
    assert count(good, notificaties=still_open) == 0  # only terminal notifications


def test_a_final_proof_fetched_twice_must_be_the_same_but_for_its_issue_time():
    first = {
        A: {**proof_of(A, "definitief-bezorgd", 5, None, *DELIVERED), "uitgegevenOp": "t1",
            "iat": 1, "pogingen": [{"nummer": 1, "status": "bezorgd", "receipts": []}]},
        B: proof_of(B, "geannuleerd", 2, "geannuleerd", "aangenomen", "geannuleerd"),
    }  # fmt: skip
    later = {**json.loads(json.dumps(first)), A: {**first[A], "uitgegevenOp": "t2", "iat": 2}}
    verdict = checks.afleverbewijzen_vast(first, later)
    assert verdict.ok and verdict.figure == "2 final proofs fetched twice"

    changed = json.loads(json.dumps(later))
    changed[A]["pogingen"][0]["receipts"].append({"status": "permanent-failure"})
    verdict = checks.afleverbewijzen_vast(first, changed)
    assert verdict.count == 1 and "pogingen" in verdict.examples[0]
    assert checks.afleverbewijzen_vast(first, {**later, B: {**later[B], "extra": 1}}).count == 1
    assert checks.afleverbewijzen_vast(first, {A: later[A]}).count == 1  # B not fetched again
    # Not final yet, or bezorgstatus-onbekend (a late receipt may still correct it): not compared.
    open_one = {C: {**proof_of(C, "verzonden", 3, None, "aangenomen", "in-verzending",
                               "verzonden"), "definitief": False}}  # fmt: skip
    onbekend = {C: proof_of(C, "bezorgstatus-onbekend", 4, None, "aangenomen", "in-verzending",
                            "verzonden", "bezorgstatus-onbekend")}  # fmt: skip
    for unstable in (open_one, onbekend):
        assert checks.afleverbewijzen_vast(unstable, {C: {**unstable[C], "x": 1}}).ok


# ---------------------------------------------------------------------------------------
# Duplicate e-mails


def send_log(*calls: tuple[int, int, str, str | None]) -> SendLog:
    """(taak, epoch, attempt, how that claim ended: committed/abandoned/uncommitted/None)."""
    log = SendLog()
    for taak_id, epoch, poging, end in calls:
        log.calls.append(SendCall(taak_id, epoch, poging))
        if end:
            log.ends[(taak_id, epoch)] = end
    return log


def test_a_duplicate_email_needs_a_call_in_flight_on_that_attempt():
    epochs = {1: 2, 2: 1, 3: 2}
    # Attempt p1: the first claim died mid-call (no end logged) and was claimed again.
    # Attempt p2: one clean send. Attempt p3: a timeout, then a re-claim.
    log = send_log((1, 1, "p1", None), (1, 2, "p1", "committed"), (2, 1, "p2", "committed"),
                   (3, 1, "p3", "abandoned"), (3, 2, "p3", "committed"))  # fmt: skip
    counts = checks.in_flight({"p1": 2, "p2": 1, "p3": 2}, log, epochs)
    assert (sum(counts.duplicates.values()), counts.expiries["p1"], counts.abandoned["p3"]) == (
        2, 1, 1
    )  # fmt: skip
    bound, complete = checks.duplicates(counts, {"p1": 2, "p2": 1, "p3": 2})
    assert bound.ok and complete.ok
    assert "2 duplicate e-mails; 1 lease expiries" in bound.figure

    # The same duplicates when every claim committed its answer: no call was in flight.
    clean = send_log((1, 1, "p1", "committed"), (1, 2, "p1", "committed"),
                     (3, 1, "p3", "committed"), (3, 2, "p3", "committed"))  # fmt: skip
    bound, _ = checks.duplicates(checks.in_flight({"p1": 2, "p3": 2}, clean, epochs), {})
    assert bound.count == 2

    # Uncommitted but never claimed again: no lease expiry was taken over, nothing counts.
    lonely = send_log((2, 1, "p2", "uncommitted"))
    bound, _ = checks.duplicates(checks.in_flight({"p2": 2}, lonely, {2: 1}), {})
    assert not bound.ok


def test_the_duplicate_bound_is_refused_when_the_logs_miss_a_send_call():
    counts = checks.in_flight({"p1": 1}, send_log((1, 1, "p1", "committed")), {1: 1})
    _, complete = checks.duplicates(counts, {"p1": 2})  # NotifyNL saw two calls
    assert complete.count == 1


# ---------------------------------------------------------------------------------------
# NotifyNL's refusals switched on for a while: a team-only key, a template edited


def test_refusal_checks_pass_when_refused_sends_go_out_or_end_technisch_mislukt():
    refused = {"p1": {"team-only"}, "p2": {"team-only"}, "p3": {"missing-personalisation"},
               "p4": {"team-only"}, "p5": {"missing-personalisation"}}  # fmt: skip
    attempts = {"p1": A, "p2": B, "p3": C, "p4": "n4", "p5": "n5"}
    notificaties = {
        A: row(A, "definitief-bezorgd", 5),
        # Sent after the switch back, then NotifyNL's own permanent-failure: the recipient's.
        B: row(B, "niet-bezorgbaar", 4, "onbereikbaar"),
        C: row(C, "technisch-mislukt", 3, "technisch"),
        "n4": row("n4", "verlopen", 3, "verlopen"),  # its geldigTot passed while deferred
        # The refusal's commit was lost; the re-claim sent it after the window: it went out.
        "n5": row("n5", "definitief-bezorgd", 5),
    }
    accepted = {"p1": 1, "p2": 1, "p5": 1}
    verdicts = checks.refusals(refused, accepted, attempts, notificaties)
    assert all(v.ok for v in verdicts), [v.examples for v in verdicts]
    assert (
        "3 sends refused for a team-only key"
        in by_name(verdicts)["a team-only key never makes a notification onbereikbaar"].figure
    )


def test_refusal_checks_fail_on_each_crafted_violation():
    refused = {"p1": {"team-only"}, "p2": {"team-only"}, "p3": {"missing-personalisation"}}
    attempts = {"p1": A, "p2": B, "p3": C}
    notificaties = {
        A: row(A, "niet-bezorgbaar", 3, "onbereikbaar"),  # the refusal made it onbereikbaar
        B: row(B, "technisch-mislukt", 3, "technisch"),  # never went out, not expired
        C: row(C, "niet-bezorgbaar", 3, "onbereikbaar"),  # the edit: not technisch-mislukt
    }
    verdicts = by_name(checks.refusals(refused, {}, attempts, notificaties))
    onbereikbaar = verdicts["a team-only key never makes a notification onbereikbaar"]
    assert (onbereikbaar.count, onbereikbaar.examples) == (
        1,
        [f"{A}: niet-bezorgbaar/onbereikbaar"],
    )
    out = verdicts["the sends a team-only key refused go out after the switch back"]
    assert out.count == 2  # A and B never went out
    edited = verdicts["a template edited after the intake ends its notifications technisch-mislukt"]
    assert (edited.count, edited.examples) == (1, [f"{C}: niet-bezorgbaar/onbereikbaar"])
    # An attempt the database does not know is a violation too (its notification is lost).
    lost = by_name(checks.refusals({"px": {"team-only"}}, {}, {}, {}))
    assert lost["the sends a team-only key refused go out after the switch back"].count == 1


def test_the_worker_log_is_read_into_calls_and_how_their_claims_ended(tmp_path):
    log = tmp_path / "worker-1.log"
    log.write_text(
        "--- nmc worker (started …)\n"
        '{"event": "worker-start", "soorten": ["verzenden"]}\n'
        '{"event": "notifynl-verzenden", "soort": "verzenden", "taak_id": 7, "epoch": 1, '
        '"poging_id": "p7"}\n'
        '{"event": "taak-uitgesteld", "soort": "verzenden", "taak_id": 7, "epoch": 1, '
        '"fout": "notifynl-timeout", "uitkomst": "uitgesteld"}\n'
        '{"event": "notifynl-verzenden", "soort": "verzenden", "taak_id": 7, "epoch": 2, '
        '"poging_id": "p7"}\n'
        '{"event": "taak-klaar", "soort": "verzenden", "taak_id": 7, "epoch": 2, "uitkomst": "v"}\n'
        '{"event": "notifynl-verzenden", "soort": "verzenden", "taak_id": 8, "epoch": 3, '
        '"poging_id": "p8"}\n'
        '{"event": "taak-mislukt", "soort": "verzenden", "taak_id": 8, "epoch": 3, '
        '"fout": "intern-X", "uitkomst": "database-fout"}\n'
        '{"event": "taak-klaar", "soort": "receipt", "taak_id": 9, "epoch": 1}\n'
        '{"event": "notifynl-verzenden", "soort": "verzen'  # cut off by a SIGKILL
    )
    read = evidence.read_send_log([log])
    assert [c.poging_id for c in read.calls] == ["p7", "p7", "p8"]
    assert read.ends == {(7, 1): "abandoned", (7, 2): "committed", (8, 3): "uncommitted"}
    assert read.unreadable_lines == 1


# ---------------------------------------------------------------------------------------
# Personal data


def personal() -> workload.PersonalData:
    work = workload.build(workload.MIN_COUNT, marker="zq1a2b3c4d")
    return work.personal


def test_a_rate_limit_error_of_notifynl_fails_but_an_injected_429_does_not():
    limits = {
        "rate_limit_mode": "bucket", "rate_limit": 3000, "rate_limits": {},
        "admitted": {"svc": 400},
        "refused": {"RateLimitError": {}, "TooManyRequestsError": {"svc": 2}},
        "injected": {"429": 9, "500": 30},
    }  # fmt: skip
    clean = checks.notifynl_limits(limits)
    assert clean.ok
    assert "9x 429" in clean.figure and "2 TooManyRequestsErrors" in clean.figure

    paced_too_fast = dict(limits, refused={"RateLimitError": {"svc": 3, "ander": 0}})
    verdict = checks.notifynl_limits(paced_too_fast)
    assert verdict.count == 1
    assert verdict.examples == ["service svc: 3 RateLimitErrors"]

    unlimited = dict(limits, rate_limit=None)
    assert checks.notifynl_limits(unlimited).count == 1  # a simulator limiting nothing


def test_the_privacy_scan_finds_every_kind_of_value_and_names_no_value():
    data = personal()
    email = sorted(data.emails)[0]
    dvref = sorted(data.dvrefs)[0]
    naam = next(v for v in sorted(data.personalisation) if v.startswith("Bedrijf"))
    number = sorted(data.numbers)[0]
    texts = [
        ("worker-1.log", f'{{"event": "x", "to": "{email}"}}'),
        ("api.log", f"dvRef={dvref}&limiet=5"),
        ("notifynl.log", f"personalisation: naam: {naam}"),
        ("postgres.log", f"DETAIL:  Key (nummer)=({number}) already exists."),
    ]
    findings = privacy.scan(texts, data)
    assert {(f.kind, f.where) for f in findings} == {
        ("e-mail", "worker-1.log"), ("dvRef", "api.log"), ("personalisatie", "notifynl.log"),
        ("identificatienummer", "postgres.log"),
    }  # fmt: skip
    verdict = checks.privacy(findings, len(texts))
    assert verdict.count == 4
    for shown in (str(f) for f in findings):
        assert not any(v in shown for v in (email, dvref, naam, number))


def test_the_privacy_scan_passes_ids_timestamps_and_other_numbers():
    data = personal()
    number = sorted(data.numbers)[0]
    clean = (
        f'{{"ts": "2026-11-30T12:00:00.000+00:00", "taak_id": 12345678, "poging_id": '
        f'"{number[:8]}-1234-4abc-8def-0123456789ab", "pid": {number}1}}'
    )
    assert privacy.scan([("worker-1.log", clean)], data) == []


# ---------------------------------------------------------------------------------------
# The workload


def test_the_workload_covers_every_dv_regie_and_way_in():
    work = workload.build(600, marker=workload.new_marker())
    assert len(work.notificaties) == 600
    assert {n.dv.oin for n in work.notificaties} == {dv.oin for dv in workload.DVS}
    assert {n.scenario.regie for n in work.notificaties} == {"decentraal", "centraal"}
    jobs = work.batches()
    assert sum(len(job) for job in jobs) == 600
    assert any(len(job) == 1 for job in jobs) and any(len(job) > 1 for job in jobs)
    for job in jobs:  # a batch is of one DV and one regie
        assert len({(n.dv.oin, n.scenario.regie) for n in job}) == 1
    # Every personal value but the numbers carries the marker.
    marker = work.personal.marker
    values = work.personal.emails | work.personal.dvrefs | work.personal.personalisation
    assert all(marker in v for v in values)
    # A short geldigTot is set at submission (the NMC clock moves meanwhile), once.
    short = next(job for job in jobs if any(n.scenario.action == "short-validity" for n in job))
    item = next(n for n in short if n.scenario.action == "short-validity")
    assert "geldigTot" not in item.body
    workload.set_short_validity(short, datetime(2030, 1, 1, tzinfo=UTC))
    workload.set_short_validity(short, datetime(2031, 1, 1, tzinfo=UTC))  # a repeat: unchanged
    assert item.body["geldigTot"] == "2030-01-01T00:20:00Z"
    assert len(work.personal.numbers) == sum(1 for n in work.notificaties
                                             if n.scenario.regie == "centraal")  # fmt: skip


# ---------------------------------------------------------------------------------------
# A phase that waits: what keeps the pipeline busy, and a deferred send's backoff


def _tasks(db_url: str, *rows: tuple[str, str, str, str | None, int, int, str | None]) -> list:
    """Tasks as (soort, staat, due from now, lease_tot from now, claim_epoch, uitstellen,
    laatste_fout); their ids."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        return [
            conn.execute(
                "INSERT INTO nmc.taak (soort, dv_id, staat, due, lease_tot, lease_eigenaar, "
                "claim_epoch, uitstellen, laatste_fout, aangemaakt_op) "
                "VALUES (%s, 1, %s, nmc.now() + %s::interval, nmc.now() + %s::interval, "
                "CASE WHEN %s = 'claimed' THEN 'w' END, %s, %s, %s, nmc.now()) RETURNING id",
                (soort, staat, due, lease, staat, epoch, uitstellen, fout),
            ).fetchone()[0]
            for soort, staat, due, lease, epoch, uitstellen, fout in rows
        ]


class _Chaos:
    def __init__(self) -> None:
        self.skips: list[timedelta] = []
        self.figures = ChaosFigures()

    def skip(self, delta: timedelta) -> bool:
        self.skips.append(delta)
        return True


def _soak(db_url: str, timeout_s: float = 0.05) -> Soak:
    stack = SimpleNamespace(admin_url=db_url, notifynl_url="http://sim.invalid")
    soak = Soak(stack, Options(phase_timeout_s=timeout_s), Display(io.StringIO(), tty=False))
    soak.chaos = _Chaos()
    return soak


def test_a_phase_that_times_out_names_each_task_that_keeps_the_pipeline_busy(db_url):
    deferred, expired, melding = _tasks(
        db_url,
        ("verzenden", "open", "600 s", None, 4, 9, "profielservice-timeout"),
        ("verzenden", "claimed", "-5 min", "-10 s", 3, 2, "notifynl-timeout"),
        ("ongeldig-melden", "open", "-5 s", None, 0, 0, None),
    )
    _tasks(db_url, ("vaststellen", "open", "7 days", None, 0, 0, None))  # not busy: a week on

    with pytest.raises(PhaseTimeout) as timeout:
        _soak(db_url)._until(lambda: False, "the sends and receipts to finish")

    message = str(timeout.value)
    assert message.startswith(
        "gave up after 0 s waiting for the sends and receipts to finish; "
        "what keeps the pipeline busy:\n  3 tasks claimed, due or waiting"
    )
    lines = {int(m.group(1)): m.group(0) for m in re.finditer(r"task (\d+) .*", message)}
    assert sorted(lines) == sorted([deferred, expired, melding])
    # Seconds from nmc.now(), which runs on while the test does.
    assert re.match(
        rf"task {deferred} verzenden/open, due in (599|600) s, epoch 4, pogingen 0, "
        r"uitstellen 9, laatste_fout profielservice-timeout, notification -; not claimable, "
        r"the lookout finds work of its kind$",  # the expired lease is the kind's work
        lines[deferred],
    ), lines[deferred]
    assert re.match(
        rf"task {expired} verzenden/claimed, due (300|301) s ago, lease (10|11) s ago, "
        r"epoch 3, pogingen 0, uitstellen 2, laatste_fout notifynl-timeout, notification -; "
        r"claimable, the lookout finds work of its kind$",
        lines[expired],
    ), lines[expired]
    assert re.match(rf"task {melding} ongeldig-melden/open, due [56] s ago", lines[melding])
    assert "vaststellen" not in message
    # Ids, kinds, times, counters and error classes: nothing a person could be found by.
    assert {f.name for f in fields(evidence.BusyTask)} == {
        "taak_id", "soort", "staat", "due_s", "lease_s", "claim_epoch", "pogingen",
        "uitstellen", "laatste_fout", "notificatie_status", "claimbaar", "met_werk", "dicht",
        "totaal",
    }  # fmt: skip


def test_the_busy_list_names_a_send_whose_service_gives_no_token(db_url):
    # A service whose day is used up (NotifyNL said so): its sends wait, due but not claimed.
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO nmc.dienstverlener (dv_id, oin, naam, quotum_per_minuut, quotum_per_dag)"
            " OVERRIDING SYSTEM VALUE VALUES (1, '00000001001001001000', 'DV', 100, 1000)"
        )
        conn.execute(
            "INSERT INTO nmc.berichttype (dv_id, code, notifynl_template_id, regie_toegestaan, "
            "notify_service) VALUES (1, 'aanslag', 'a0a0a0a0-0000-4000-8000-000000000001', "
            "'{decentraal}', 'dicht')"
        )
        conn.execute(
            "INSERT INTO nmc.verzendtempo (notify_service, soort, tat, dag, dag_gebruikt, dag_op) "
            "VALUES ('dicht', 'verzenden', nmc.now(), (nmc.now() AT TIME ZONE 'UTC')::date, 10, "
            "true)"
        )
        conn.execute(
            "INSERT INTO nmc.taak (soort, dv_id, berichttype, due, aangemaakt_op) "
            "VALUES ('verzenden', 1, 'aanslag', nmc.now(), nmc.now())"
        )
    (task,) = evidence.read_busy(db_url, ["verzenden"])
    assert (task.claimbaar, task.met_werk, task.dicht) == (True, True, True)
    assert evidence.describe_busy([task]).endswith(
        "claimable, the lookout finds work of its kind, its (DV, berichttype) gets no token"
    )


def test_when_only_a_deferred_send_waits_the_phase_moves_the_clock_to_its_due(db_url, monkeypatch):
    callbacks = {"pending_tasks": 0}
    monkeypatch.setattr(
        soak_run.httpx, "get", lambda url, timeout: SimpleNamespace(json=lambda: callbacks)
    )
    soak = _soak(db_url)
    _tasks(db_url, ("verzenden", "open", "10 min", None, 6, 12, "notifynl-http-500"))
    _tasks(db_url, ("vaststellen", "open", "7 days", None, 0, 0, None))  # not the pipeline's
    soak._skip_to_next_due()
    assert len(soak.chaos.skips) == 1
    assert timedelta(minutes=10) < soak.chaos.skips[0] <= timedelta(minutes=10, seconds=1)

    # Not while anything else is under way: a callback at NotifyNL, a claimed or a due task.
    callbacks["pending_tasks"] = 1
    soak._skip_to_next_due()
    callbacks["pending_tasks"] = 0
    (claimed,) = _tasks(db_url, ("verzenden", "claimed", "-1 min", "1 min", 1, 0, None))
    soak._skip_to_next_due()
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("DELETE FROM nmc.taak WHERE id = %s", (claimed,))
    _tasks(db_url, ("ongeldig-melden", "open", "0 s", None, 0, 0, None))
    soak._skip_to_next_due()
    assert len(soak.chaos.skips) == 1


# ---------------------------------------------------------------------------------------
# The CI-sized soak, end to end


@needs_server_binaries
def test_a_ci_sized_soak_passes_every_check_and_leaves_nothing_running():
    with private_home() as home:
        env = {key: value for key, value in os.environ.items() if key != "NMC_DATABASE_URL"}
        env.update(NMC_HOME=str(home), NMC_DB_PORT=str(free_port()), PYTHONUNBUFFERED="1")
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "nmc", "soak", "--count", "400", "--no-tty",
             "--phase-timeout", "90", "--seed", "11"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )  # fmt: skip
        try:
            output, _ = process.communicate(timeout=SOAK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGTERM)
            output, _ = process.communicate(timeout=60)
            pytest.fail(f"the soak took longer than {SOAK_TIMEOUT_S} s:\n{output}")
        seconds = time.monotonic() - started
        assert process.returncode == 0, output
        assert "every check passed" in output
        assert re.search(r"\b400 of 400\b", output), output
        # The chaos really happened.
        kills = int(re.search(r"(\d+) workers killed \(SIGKILL\)", output).group(1))
        assert kills >= 3, output
        assert re.search(r"PostgreSQL restart \(fast shutdown, \d+ s down, start\): [\d.]+ s",
                         output), output  # fmt: skip
        assert re.search(r"answers through the restart: .*503 [1-9]", output), output
        assert re.search(r"[1-9]\d* snapshot restarts \(410\)", output), output
        answers = re.search(r"NotifyNL: \d+ send calls, answers (.*?);", output).group(1)
        assert re.search(r"\b50[034] [1-9]", answers), answers  # NotifyNL's 5xx and timeouts
        # NotifyNL refused sends for a team-only key for a while, then a template edit.
        assert re.search(
            r"NotifyNL refusals switched on: team-only [\d.]+ s, missing-personalisation "
            r"[\d.]+ s; [1-9]\d* attempts refused for a team-only key",
            output,
        ), output
        assert processes_of(home) == []
        print(f"soak --count 400 took {seconds:.0f} s")
