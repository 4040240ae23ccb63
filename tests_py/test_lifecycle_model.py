"""A stateful model test of the notification lifecycle (SPEC §4-§6).

A hypothesis RuleBasedStateMachine drives the real SQL functions, as the superuser, through
random operations: intake (decentraal), send claims and their commits (verzonden,
ongeldig-adres, geen-contactgegevens, verlopen), deferrals, internal failures, worker
deaths (a claim never finished: its lease runs out, the next claim re-claims it with a
higher epoch and the dead worker's commit is fenced off with NM011), NotifyNL receipts of
every kind (stored, duplicated, reordered, late, with the attempt's own NotifyNL id or a
duplicate one, before or after the send commit), reconciliation answers, cancel, the
watchdog, settlement and clock moves from minutes to days.

Next to it runs `Model`: a small reference model of SPEC §4-§6 written in Python from the
SPEC text, not from the SQL. Per notification it keeps the status, reason and version, the
attempts (status, NotifyNL id and duplicate ids, newest outcome time), the open tasks (kind,
due, lease, claim epoch, failure and deferral counters) and the stored receipts, and it
predicts the reaction to every operation: which claims a claim round returns, which
refusal (SQLSTATE) a call meets, which transitions happen. After every step the database
must equal the model (status, reason, version, attempts, open tasks) and satisfy the
invariants of test_receipt_properties (gap-free events, allowed pairs, terminal statuses
absorb, at most two attempts, terminaal_op), plus liveness: a `verzonden` notification
always has an attempt that runs or a resend it can still make (SPEC §1, promise 1).

Where the SPEC leaves a choice open, the model follows the SQL function's COMMENT and says
so in a comment marked "Keuze". Where the SPEC is clear, the model keeps the SPEC: four
disagreements found that way were SQL bugs, since fixed; the minimal examples at the end
of this module pin them.

The clock: the model reads nmc.now() before every step and computes every due time from
that reading, as the SQL does from its own transaction time; the two differ by the
milliseconds between the reading and the call, far below the smallest clock move.

The machine has one rule, `stap`, that runs a weighted operation drawn as a tuple (name,
arguments); the failing example prints as a list of those tuples. Each example starts with
one or two notifications and decides per notification whether NotifyNL loses its callbacks
(never, sometimes, always), so that reconciliation gets work too.

Isolation: one database per test run; every example starts an hour later on the NMC clock,
removes the previous example's notifications (their tasks and attempts go with them) and
onboards a new DV with a random OIN.
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import psycopg
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from test_receipt_properties import (
    VerzendClaim,
    aannemen,
    claim_verzenden,
    controleer_invarianten,
    nieuwe_dv,
    notifynl_id_van,
    nu,
    pogingen_van,
    receipt_opslaan,
    receipts_verwerken,
    status_van,
    toegestane_overgangen,
    verzonden_melden,
)

# --- SPEC §4: the vocabulary and the transition table ------------------------------------------

NIET_TERMINAAL = ("aangenomen", "in-verzending", "verzonden", "bezorgd")
TERMINAAL = frozenset(
    {
        "definitief-bezorgd",
        "niet-bezorgbaar",
        "technisch-mislukt",
        "bezorgstatus-onbekend",
        "verlopen",
        "geannuleerd",
    }
)
# An attempt is running while verzonden or onbekend.
LOPEND = frozenset({"verzonden", "onbekend"})
# The final NotifyNL statuses and the attempt status each gives.
DEFINITIEF = {
    "delivered": "bezorgd",
    "permanent-failure": "permanent-mislukt",
    "temporary-failure": "tijdelijk-mislukt",
    "technical-failure": "technisch-mislukt",
}
MISLUKT = ("temporary-failure", "permanent-failure")

# The pairs the SPEC's transition table implies, row by row.
SPEC_OVERGANGEN = frozenset(
    {
        (None, "aangenomen"),
        ("aangenomen", "in-verzending"),
        ("in-verzending", "verzonden"),
        ("verzonden", "verzonden"),
        ("aangenomen", "geannuleerd"),
        ("verzonden", "bezorgd"),
        ("bezorgstatus-onbekend", "bezorgd"),
        ("bezorgd", "definitief-bezorgd"),
        ("bezorgd", "verzonden"),
        ("bezorgd", "niet-bezorgbaar"),
        ("bezorgd", "verlopen"),
        ("verzonden", "niet-bezorgbaar"),
        ("in-verzending", "niet-bezorgbaar"),
        ("bezorgstatus-onbekend", "niet-bezorgbaar"),
        ("in-verzending", "technisch-mislukt"),
        ("verzonden", "technisch-mislukt"),
        *((van, "verlopen") for van in NIET_TERMINAAL),
        ("verzonden", "bezorgstatus-onbekend"),
    }
)


# --- the reference model ------------------------------------------------------------------------


class Geweigerd(Exception):
    """A refusal the model expects from the database, by SQLSTATE."""

    def __init__(self, sqlstate: str):
        super().__init__(sqlstate)
        self.sqlstate = sqlstate


@dataclass(frozen=True)
class Instellingen:
    """The configured terms (SPEC names them; their values are config)."""

    lease_duur: timedelta
    max_pogingen: int
    uitstel_basis: timedelta
    uitstel_max: timedelta
    vaststellingstermijn: timedelta
    callback_venster: timedelta
    bewaartermijn: timedelta

    def uitstel(self, keer: int) -> timedelta:
        """Growing backoff: the base doubled per earlier try, capped."""
        return min(self.uitstel_basis * 2 ** min(keer, 30), self.uitstel_max)


@dataclass(eq=False)
class Poging:
    nummer: int
    status: str = "gepland"
    referentie: uuid.UUID | None = None  # the attempt id = NotifyNL reference
    notifynl_id: uuid.UUID | None = None
    duplicaten: list[uuid.UUID] = field(default_factory=list)
    verzonden_op: datetime | None = None
    afgerond_op: datetime | None = None  # completed_at of its newest outcome
    laatste_receipt_op: datetime | None = None


@dataclass(eq=False)
class Taak:
    soort: str  # verzenden, reconciliëren or vaststellen
    due: datetime
    poging: Poging | None = None
    staat: str = "open"
    epoch: int = 0
    lease_tot: datetime | None = None
    fouten: int = 0  # failures inside the NMC
    uitstellen: int = 0  # deferrals after an outage
    db_id: int | None = None  # the task row, learned from its first claim


@dataclass(eq=False)
class Notificatie:
    id: uuid.UUID
    geldig_tot: datetime
    status: str = "aangenomen"
    reden: str | None = None
    versie: int = 1
    pogingen: list[Poging] = field(default_factory=list)
    # The open or claimed tasks: one per kind, for reconciliation one per attempt.
    taken: dict[tuple[str, Poging | None], Taak] = field(default_factory=dict)
    mislukte_taken: list[Taak] = field(default_factory=list)  # exhausted, for an operator
    wissen_gepland: bool = False  # erasure task after a terminal status (SPEC §8)

    @property
    def poging(self) -> Poging | None:
        return self.pogingen[-1] if self.pogingen else None


@dataclass(eq=False)
class Receipt:
    notificatie: Notificatie
    poging: Poging
    notifynl_id: uuid.UUID
    status: str
    completed_at: datetime


@dataclass(eq=False)
class Claim:
    """What a worker holds after a claim: the task at one epoch."""

    taak: Taak
    notificatie: Notificatie
    epoch: int
    poging: Poging | None
    herclaim: bool = False
    mag_verzenden: bool = True


class Model:
    """SPEC §4-§6 in Python. `nu` is set by the machine before every operation."""

    def __init__(self, instellingen: Instellingen):
        self.inst = instellingen
        self.nu = datetime.min
        self.notificaties: list[Notificatie] = []
        self.wachtrij: list[Receipt] = []  # stored receipts, in arrival order
        self.receipt_sleutels: set[tuple] = set()

    # -- bookkeeping

    def overgang(self, n: Notificatie, naar: str, reden: str | None = None) -> None:
        assert (n.status, naar) in SPEC_OVERGANGEN, f"model: {n.status} -> {naar}"
        n.status, n.reden, n.versie = naar, reden, n.versie + 1
        if naar in TERMINAAL:
            n.wissen_gepland = True

    @staticmethod
    def sleutel(soort: str, poging: Poging | None = None) -> tuple[str, Poging | None]:
        """One open or claimed task per notification and kind (SPEC §5, uniqueness). Keuze
        (schema, taak_uniek_navraag): reconciliation is one per attempt, since an answer
        concerns the attempt it asked about."""
        return soort, poging if soort == "reconciliëren" else None

    def taak(self, n: Notificatie, soort: str, poging: Poging | None = None) -> Taak | None:
        return n.taken.get(self.sleutel(soort, poging))

    def plan(
        self,
        n: Notificatie,
        soort: str,
        due: datetime,
        poging: Poging | None = None,
        bijwerken: bool = False,
    ) -> None:
        taak = self.taak(n, soort, poging)
        if taak is None:
            n.taken[self.sleutel(soort, poging)] = Taak(soort, due, poging)
        elif bijwerken:
            taak.due, taak.poging = due, poging

    def sluit(self, n: Notificatie, taak: Taak) -> None:
        taak.staat, taak.lease_tot = "done", None
        if self.taak(n, taak.soort, taak.poging) is taak:
            del n.taken[self.sleutel(taak.soort, taak.poging)]

    def heeft_taak(self, n: Notificatie) -> bool:
        return bool(
            n.taken
            or n.mislukte_taken
            or n.wissen_gepland
            or any(r.notificatie is n for r in self.wachtrij)
        )

    def verouderd(self, claim: Claim) -> bool:
        return claim.taak.staat != "claimed" or claim.taak.epoch != claim.epoch

    def afscherming(self, claim: Claim) -> None:
        """Every commit carries the claim epoch; a stale one is refused (SPEC §5)."""
        if self.verouderd(claim):
            raise Geweigerd("NM011")

    def claimbaar(self, taak: Taak) -> bool:
        if taak.staat == "claimed":
            return taak.lease_tot < self.nu  # the lease ran out: the worker died
        return taak.staat == "open" and taak.due <= self.nu

    def claim(self, taak: Taak) -> None:
        taak.staat, taak.epoch = "claimed", taak.epoch + 1
        taak.lease_tot = self.nu + self.inst.lease_duur

    # -- intake and cancel (SPEC §4, §7)

    def aannemen(self, notificatie_id: uuid.UUID, geldig_tot: datetime) -> Notificatie:
        n = Notificatie(notificatie_id, geldig_tot)
        self.plan(n, "verzenden", self.nu)
        self.notificaties.append(n)
        return n

    def annuleren(self, n: Notificatie) -> None:
        if n.status != "aangenomen":
            raise Geweigerd("NM006")
        self.overgang(n, "geannuleerd", "geannuleerd")
        self.sluit(n, self.taak(n, "verzenden"))

    # -- sending (SPEC §4 table, §5)

    def claim_verzenden(self) -> list[Claim]:
        claims = []
        for n in self.notificaties:
            taak = self.taak(n, "verzenden")
            if taak is not None and self.claimbaar(taak):
                self.claim(taak)
                claim = self.verzendclaim(n, taak)
                if claim is not None:
                    claims.append(claim)
        return claims

    def verzendclaim(self, n: Notificatie, taak: Taak) -> Claim | None:
        p = n.poging
        if n.status == "in-verzending" or (n.status == "verzonden" and p.status == "gepland"):
            # A re-claim (expired lease, deferral, failure): no transition, the same attempt.
            # Keuze (claim_verzenden COMMENT): no geldig_tot check here; the worker learns
            # mag_verzenden and, finding nothing at NotifyNL, commits verlopen.
            mag_verzenden = self.nu <= n.geldig_tot
            return Claim(taak, n, taak.epoch, p, herclaim=True, mag_verzenden=mag_verzenden)
        eerste = n.status == "aangenomen"
        # Keuze: a resend only while no attempt runs and fewer than two were made;
        # otherwise the task closes (a running attempt is judged by its receipt).
        herhaling = n.status == "verzonden" and p.status not in LOPEND and p.nummer < 2
        if not (eerste or herhaling):
            self.sluit(n, taak)  # terminal, bezorgd or running: nothing to send
            return None
        if self.nu > n.geldig_tot:
            self.overgang(n, "verlopen", "verlopen")
            self.sluit(n, taak)
            return None
        self.overgang(n, "in-verzending" if eerste else "verzonden")
        poging = Poging(len(n.pogingen) + 1)
        n.pogingen.append(poging)
        return Claim(taak, n, taak.epoch, poging)

    def verzending_afronden(
        self, claim: Claim, uitkomst: str, notifynl_id: uuid.UUID | None = None
    ) -> None:
        self.afscherming(claim)
        n, p = claim.notificatie, claim.notificatie.poging
        if uitkomst == "verlopen" and self.nu <= n.geldig_tot:
            raise Geweigerd("NM014")
        if uitkomst == "verzonden":
            was_gepland = p.status == "gepland"
            self.neem_notifynl_id(p, notifynl_id)
            if was_gepland:
                p.status = "verzonden"
            p.verzonden_op = p.verzonden_op or self.nu
            if n.status == "in-verzending":
                self.overgang(n, "verzonden")
            if was_gepland:
                # Keuze (finish_verzenden): the commit that takes the attempt from
                # gepland plans its reconciliation; after a receipt committed the send on the
                # worker's behalf, the watchdog plans it.
                self.plan(n, "reconciliëren", self.nu + timedelta(hours=1), p)
        elif uitkomst == "ongeldig-adres":
            p.status, p.afgerond_op = "permanent-mislukt", self.nu
            self.overgang(n, "niet-bezorgbaar", "onbereikbaar")
        else:  # geen-contactgegevens, verlopen: no attempt was made
            if p.status == "gepland":
                n.pogingen.remove(p)
            if uitkomst == "geen-contactgegevens":
                self.overgang(n, "niet-bezorgbaar", "geen-contactgegevens")
            else:
                self.overgang(n, "verlopen", "verlopen")
        self.sluit(n, claim.taak)
        if (
            uitkomst == "verzonden"
            and n.status == "verzonden"
            and p.nummer == 1
            and p.status in ("tijdelijk-mislukt", "technisch-mislukt")
        ):
            # A receipt failed attempt 1 between the 201 and this commit; its resend met
            # this task, still claimed. The commit that comes second plans it.
            self.plan(n, "verzenden", self.nu)

    def neem_notifynl_id(self, p: Poging, notifynl_id: uuid.UUID) -> None:
        if p.notifynl_id is None:
            p.notifynl_id = notifynl_id
        elif notifynl_id != p.notifynl_id and notifynl_id not in p.duplicaten:
            p.duplicaten.append(notifynl_id)

    # -- deferral and failure (SPEC §5)

    def uitstellen(self, claim: Claim) -> None:
        self.afscherming(claim)
        n, taak = claim.notificatie, claim.taak
        due = self.nu + self.inst.uitstel(taak.uitstellen)
        # Only geldig_tot bounds the wait of a send. Keuze (defer_taak COMMENT): whatever the
        # status, as long as the table allows verlopen from it (bezorgd too).
        if (
            taak.soort == "verzenden"
            and due > n.geldig_tot
            and (n.status, "verlopen") in SPEC_OVERGANGEN
        ):
            self.overgang(n, "verlopen", "verlopen")
            self.sluit(n, taak)
            return
        taak.staat, taak.due, taak.lease_tot = "open", due, None
        taak.uitstellen += 1

    def interne_fout(self, claim: Claim) -> None:
        self.afscherming(claim)
        n, taak = claim.notificatie, claim.taak
        if taak.fouten + 1 < self.inst.max_pogingen:
            taak.staat, taak.lease_tot = "open", None
            taak.due = self.nu + self.inst.uitstel(taak.fouten)
            taak.fouten += 1
            return
        taak.fouten += 1
        if taak.soort == "verzenden":
            # Keuze (fail_taak COMMENT): technisch-mislukt where the table allows it.
            if (n.status, "technisch-mislukt") in SPEC_OVERGANGEN:
                self.overgang(n, "technisch-mislukt", "technisch")
            self.sluit(n, taak)
        else:
            taak.staat, taak.lease_tot = "mislukt", None
            del n.taken[self.sleutel(taak.soort, taak.poging)]
            n.mislukte_taken.append(taak)

    # -- receipts (SPEC §4 notes, §6)

    def receipt_opslaan(
        self, n: Notificatie, p: Poging, notifynl_id: uuid.UUID, status: str, op: datetime
    ) -> str:
        sleutel = (p.referentie, op, status)
        if sleutel in self.receipt_sleutels:
            return "dubbel"
        self.receipt_sleutels.add(sleutel)
        self.wachtrij.append(Receipt(n, p, notifynl_id, status, op))
        return "opgeslagen"

    def receipts_verwerken(self) -> int:
        # Ordered by their own completed_at, not by arrival. Keuze: equal completed_at in
        # arrival order (the SQL orders by task id), the later one wins.
        rij = sorted(self.wachtrij, key=lambda r: r.completed_at)
        self.wachtrij = []
        for r in rij:
            self.oordeel(r.notificatie, r.poging, r.notifynl_id, r.status, r.completed_at)
        return len(rij)

    def oordeel(
        self,
        n: Notificatie,
        p: Poging,
        notifynl_id: uuid.UUID | None,
        status: str,
        completed_at: datetime | None,
    ) -> None:
        """Judge one NotifyNL outcome for attempt p: a receipt, or (without id) a
        reconciliation answer, which is processed exactly like a receipt."""
        c = min(completed_at or self.nu, self.nu)  # capped at the NMC clock
        # Final (bezorgstatus-onbekend excepted): the delivery proof is final too, so nothing
        # on any attempt changes any more; the outcome is recorded beside it (apply_receipt).
        vast = n.status in TERMINAAL - {"bezorgstatus-onbekend"}
        if notifynl_id is not None:
            if p.notifynl_id is None and vast:
                pass  # an attempt still running when it became final keeps its missing id
            elif p.notifynl_id is None:
                # The worker died between the 201 and its commit: commit on its behalf.
                p.notifynl_id = notifynl_id
                if p.status == "gepland":
                    p.status = "verzonden"
                p.verzonden_op = p.verzonden_op or self.nu
                if n.status == "in-verzending":
                    self.overgang(n, "verzonden")
            else:
                self.neem_notifynl_id(p, notifynl_id)
        if status not in DEFINITIEF:
            return  # not final yet, or a status the NMC does not know: recorded, no transition
        if p.laatste_receipt_op is not None and c < p.laatste_receipt_op:
            return  # an older receipt never overrides a newer one
        telt = self.telt(n, p, status, c)
        # A settled outcome is never rewritten (ADR: the delivered completed_at is the
        # delivery proof's time): a delivered attempt the receipt does not fail, and every
        # attempt of a terminal notification (bezorgstatus-onbekend excepted), also one still
        # running when it became terminal: its final proof stays as it was. Keuze
        # (apply_receipt COMMENT): such a receipt is recorded beside the outcome, which keeps
        # its status and time; so does the ordering of later receipts.
        vastgelegd = (
            not telt
            and not (status == "delivered" and n.status in ("verzonden", "bezorgstatus-onbekend"))
            and (p.status == "bezorgd" or vast)
        )
        if not vastgelegd:
            p.status, p.afgerond_op, p.laatste_receipt_op = DEFINITIEF[status], c, c
        # A processed receipt ends the attempt's reconciliation. Keuze: only one that waits;
        # an answer in flight finishes itself.
        navraag = self.taak(n, "reconciliëren", p)
        if navraag is not None and navraag.staat == "open":
            self.sluit(n, navraag)
        if status == "delivered":
            # On any attempt; the settlement waits the term plus NotifyNL's callback window.
            if n.status in ("verzonden", "bezorgstatus-onbekend"):
                self.overgang(n, "bezorgd")
                due = c + self.inst.vaststellingstermijn + self.inst.callback_venster
                self.plan(n, "vaststellen", due, p, bijwerken=True)
            return
        if not telt:
            return  # recorded on the attempt only
        if n.status == "bezorgd":
            # Within the term on the attempt bezorgd rests on: as if it were still running;
            # the open settlement is called off.
            vaststellen = self.taak(n, "vaststellen")
            if vaststellen is not None and vaststellen.staat == "open":
                self.sluit(n, vaststellen)
            # Keuze (apply_receipt): another attempt was delivered too; bezorgd now
            # rests on that one, with its own term.
            bezorgd = [q for q in n.pogingen if q is not p and q.status == "bezorgd"]
            if bezorgd:
                ander = max(bezorgd, key=lambda q: q.afgerond_op)
                termijn = self.inst.vaststellingstermijn + self.inst.callback_venster
                self.plan(n, "vaststellen", ander.afgerond_op + termijn, ander)
                return
        tweede = n.pogingen[1] if len(n.pogingen) > 1 else None
        if status == "permanent-failure":
            self.overgang(n, "niet-bezorgbaar", "onbereikbaar")
        elif n.status == "bezorgstatus-onbekend":
            pass  # a late temporary/technical failure there is only recorded: no resend
        elif p.nummer == 2:
            if status == "temporary-failure":
                self.overgang(n, "niet-bezorgbaar", "onbereikbaar")
            else:
                self.overgang(n, "technisch-mislukt", "technisch")
        elif tweede is not None:
            # Attempt 1 failed while an attempt 2 exists (bezorgd rested on a late delivered
            # on attempt 1). Keuze (apply_receipt): no third attempt; the outcome
            # rests on attempt 2: still running, or its own failure decides.
            if tweede.status in ("gepland", "verzonden", "onbekend"):
                if n.status == "bezorgd":
                    self.overgang(n, "verzonden")
            elif tweede.status == "technisch-mislukt":
                self.overgang(n, "technisch-mislukt", "technisch")
            else:
                self.overgang(n, "niet-bezorgbaar", "onbereikbaar")
        elif self.nu > n.geldig_tot:
            self.overgang(n, "verlopen", "verlopen")
        else:
            if n.status == "bezorgd":
                self.overgang(n, "verzonden")
            self.plan(n, "verzenden", self.nu)

    def telt(self, n: Notificatie, p: Poging, status: str, c: datetime) -> bool:
        """Does a failure on p move the notification (SPEC §4 table and notes)?"""
        if n.status == "bezorgd":
            # Keuze (apply_receipt): bezorgd rests on the attempt its settlement task
            # names (a failure recorded on it meanwhile does not change that); the term ends
            # the callback window before the task's due.
            vaststellen = self.taak(n, "vaststellen")
            return (
                status in MISLUKT
                and vaststellen is not None
                and vaststellen.poging is p
                and c <= vaststellen.due - self.inst.callback_venster
            )
        if n.status in ("in-verzending", "verzonden", "bezorgstatus-onbekend"):
            return p.status in LOPEND or p.status == "gepland"
        return False  # any other terminal status absorbs

    # -- reconciliation (SPEC §6)

    def claim_navraag(self) -> list[Claim]:
        claims = []
        for n in self.notificaties:
            for taak in list(n.taken.values()):
                if taak.soort == "reconciliëren" and self.claimbaar(taak):
                    self.claim(taak)
                    claims.append(Claim(taak, n, taak.epoch, taak.poging))
        return claims

    def volgende_navraag(self, verzonden_op: datetime) -> datetime | None:
        """After 1, 6 and 24 h, then daily, until NotifyNL's retention has passed: the last
        ask is when it ends, and only after that is silence a dead end."""
        einde = verzonden_op + self.inst.bewaartermijn
        stappen = [timedelta(hours=1), timedelta(hours=6)]
        stappen += [timedelta(days=d) for d in range(1, 400)]
        for stap in stappen:
            moment = verzonden_op + stap
            if moment >= einde:
                break
            if moment > self.nu:
                return moment
        return einde if einde > self.nu else None

    def navraag_afronden(
        self,
        claim: Claim,
        antwoord: str,
        status: str | None = None,
        completed_at: datetime | None = None,
    ) -> None:
        """antwoord: gevonden (status final or not) or 404."""
        self.afscherming(claim)
        n, taak, p = claim.notificatie, claim.taak, claim.poging
        if antwoord == "gevonden" and status in DEFINITIEF:
            self.sluit(n, taak)
            self.oordeel(n, p, None, status, completed_at)
            return
        volgende = self.volgende_navraag(p.verzonden_op)
        if antwoord == "gevonden" and volgende is not None:
            taak.staat, taak.due, taak.lease_tot = "open", volgende, None
            return
        # 404, or the retention ends without an outcome: a dead end.
        self.sluit(n, taak)
        if p.status != "verzonden":
            # The attempt got its outcome meanwhile: the answer changes nothing. Keuze
            # (finish_navraag): nor for an attempt that is onbekend already.
            return
        if n.status in TERMINAAL - {"bezorgstatus-onbekend"}:
            return  # of a final notification the attempt stays as it was (its final proof)
        p.status = "onbekend"
        # Keuze (finish_navraag COMMENT): not while another attempt is planned or sent.
        ander_loopt = any(q is not p and q.status in ("gepland", "verzonden") for q in n.pogingen)
        if n.status == "verzonden" and not ander_loopt:
            self.overgang(n, "bezorgstatus-onbekend")

    # -- settlement and watchdog (SPEC §4, §5)

    def vaststellen(self) -> int:
        aantal = 0
        for n in self.notificaties:
            taak = self.taak(n, "vaststellen")
            if taak is not None and taak.staat == "open" and taak.due <= self.nu:
                if n.status == "bezorgd":
                    self.overgang(n, "definitief-bezorgd")
                    aantal += 1
                self.sluit(n, taak)
        return aantal

    def controle(self) -> int:
        """Every live notification without an open or failed task gets the missing one.
        Keuze: any task counts, also a receipt still to process or the erasure task."""
        aantal = 0
        for n in self.notificaties:
            if n.status in TERMINAAL or self.heeft_taak(n):
                continue
            lopend = [p for p in n.pogingen if p.status in LOPEND]
            if n.status == "bezorgd":
                bezorgd = [p for p in n.pogingen if p.status == "bezorgd"]
                laatste = max(bezorgd, key=lambda p: p.afgerond_op, default=None)
                due = self.nu
                if laatste is not None:
                    termijn = self.inst.vaststellingstermijn + self.inst.callback_venster
                    due = max(due, laatste.afgerond_op + termijn)
                self.plan(n, "vaststellen", due, laatste)
            elif n.status == "verzonden" and lopend:
                self.plan(n, "reconciliëren", self.nu, lopend[-1])
            else:
                self.plan(n, "verzenden", self.nu)  # in-verzending: a re-claim
            aantal += 1
        return aantal

    # -- what the database must show

    def beeld(self) -> dict:
        """Per notification: (status, reden, versie), its attempts and its open, claimed
        and mislukt tasks, in the shape the database query gives (ids as text)."""

        def tekst(waarde: uuid.UUID | None) -> str | None:
            return None if waarde is None else str(waarde)

        return {
            str(n.id): (
                (n.status, n.reden, n.versie),
                [
                    [
                        p.nummer,
                        p.status,
                        tekst(p.referentie),
                        tekst(p.notifynl_id),
                        [str(d) for d in p.duplicaten],
                    ]
                    for p in n.pogingen
                ],
                sorted(
                    (
                        [t.soort, t.staat, t.epoch, tekst(t.poging and t.poging.referentie)]
                        for t in [*n.taken.values(), *n.mislukte_taken]
                    ),
                    key=str,
                ),
            )
            for n in self.notificaties
        }


# --- the operations ---------------------------------------------------------------------------

WERKER = "modeltest"
MAX_NOTIFICATIES = 3
GELDIGHEDEN = (
    timedelta(days=3),
    timedelta(days=20),
    timedelta(days=1),
    timedelta(hours=2),
    timedelta(minutes=10),
)
KLOKSTAPPEN = (
    timedelta(hours=1),
    timedelta(minutes=3),
    timedelta(minutes=1),
    timedelta(minutes=10),
    timedelta(hours=6),
    timedelta(days=1),
    timedelta(days=3),
    timedelta(days=8),
)
LEEFTIJDEN = (0, 1, 30, 600, 3600, 86400, 6 * 86400, 8 * 86400, -60)  # seconds before now
RECEIPT_STATUSSEN = (*DEFINITIEF, "delivered", "temporary-failure", "sending", "unknown-status")
# What a worker does with a send claim: commit an outcome, or defer, fail, die, hold on.
VERZENDACTIES = (
    *["verzonden"] * 8,
    "ongeldig-adres",
    "geen-contactgegevens",
    "verlopen",
    "uitstel",
    "uitstel",
    "fout",
    "fout",
    "sterft",
    "sterft-na-201",
    "vasthouden",
    "vasthouden",
)
# What a worker does with a reconciliation claim: NotifyNL's answer, or the same choices.
NAVRAAGACTIES = (
    *["definitief"] * 4,
    "lopend",
    "lopend",
    "onbekend",
    "404",
    "404",
    "uitstel",
    "fout",
    "sterft",
    "vasthouden",
    "vasthouden",
    "vasthouden",
)

# One operation per step: (name, arguments…). The machine has a single rule that runs
# them, so that Hypothesis' swarm testing (switching whole rules off per example) does not
# starve the sends and receipts every deep path needs; the weights play that part instead.
OPERATIES = {
    "aanname": st.tuples(st.just("aanname"), st.sampled_from(GELDIGHEDEN)),
    "annuleren": st.tuples(st.just("annuleren"), st.integers(0, 5)),
    "verzendronde": st.tuples(
        st.just("verzendronde"), st.lists(st.sampled_from(VERZENDACTIES), min_size=3, max_size=3)
    ),
    "navraagronde": st.tuples(
        st.just("navraagronde"),
        st.lists(st.sampled_from(NAVRAAGACTIES), min_size=2, max_size=2),
        st.sampled_from(list(DEFINITIEF)),
        st.sampled_from(LEEFTIJDEN),
    ),
    "vastgehouden_claim": st.tuples(
        st.just("vastgehouden_claim"),
        st.integers(0, 5),
        st.sampled_from([a for a in VERZENDACTIES if a != "vasthouden"]),
        st.sampled_from([a for a in NAVRAAGACTIES if a != "vasthouden"]),
        st.sampled_from(list(DEFINITIEF)),
        st.sampled_from(LEEFTIJDEN),
    ),
    "verouderde_claim": st.tuples(
        st.just("verouderde_claim"),
        st.integers(0, 50),
        st.sampled_from(["afronden", "uitstel", "fout"]),
    ),
    "receipt": st.tuples(
        st.just("receipt"),
        st.integers(0, 5),  # notification
        st.sampled_from(["eerste", "laatste"]),  # attempt
        st.sampled_from(RECEIPT_STATUSSEN),
        st.sampled_from(LEEFTIJDEN),
        st.sampled_from(["eigen", "eigen", "nieuw", "dubbel"]),  # NotifyNL id
        st.booleans(),  # lost, for a notification whose callbacks NotifyNL sometimes loses
        st.booleans(),  # processed at once
    ),
    "receipt_herhalen": st.tuples(st.just("receipt_herhalen"), st.integers(0, 50)),
    "receipts_verwerken": st.tuples(st.just("receipts_verwerken")),
    "klok_verzetten": st.tuples(st.just("klok_verzetten"), st.sampled_from(KLOKSTAPPEN)),
    "vaststellen": st.tuples(st.just("vaststellen")),
    "controle": st.tuples(st.just("controle")),
}
# Hypothesis favours the first entries of a sampled list: the busiest operations come first.
WEGING = {
    "receipt": 4,
    "verzendronde": 4,
    "navraagronde": 4,
    "klok_verzetten": 3,
    "vastgehouden_claim": 3,
    "receipts_verwerken": 1,
    "vaststellen": 1,
    "controle": 1,
    "verouderde_claim": 1,
    "receipt_herhalen": 1,
    "annuleren": 1,
    "aanname": 1,
}
operatie = st.sampled_from([naam for naam, gewicht in WEGING.items() for _ in range(gewicht)])
operatie = operatie.flatmap(OPERATIES.__getitem__)


def instellingen(conn: psycopg.Connection) -> Instellingen:
    row = conn.execute(
        "SELECT lease_duur, max_pogingen, uitstel_basis, uitstel_max, vaststellingstermijn,"
        " callback_venster, notifynl_bewaartermijn FROM nmc.instellingen"
    ).fetchone()
    return Instellingen(*row)


def sqlstate_van(handeling: Callable[[], object]) -> tuple[object, str | None]:
    try:
        return handeling(), None
    except psycopg.Error as fout:
        return None, fout.sqlstate


class Levenscyclus(RuleBasedStateMachine):
    """The real functions and the model, operation by operation."""

    def __init__(self, conn: psycopg.Connection, toegestaan: frozenset):
        super().__init__()
        self.db = conn
        self.toegestaan = toegestaan
        self.dv_id = nieuwe_dv(conn)
        # The model has no send budget: a pace far above what its few notifications take.
        conn.execute("SELECT nmc.set_notify_service('standaard', 1000000, 0.1, 1000)")
        self.model = Model(instellingen(conn))
        self.claims: list[Claim] = []  # every claim made: live, dead or finished
        self.dood: list[Claim] = []  # claims whose worker died
        # NotifyNL's side: the message ids it holds per attempt reference (the first is the
        # message it accepted; more come from a resend after a lost commit).
        self.notifynl: dict[uuid.UUID, list[uuid.UUID]] = {}
        self.verstuurd: list[tuple] = []  # receipts as NotifyNL sent them, for its retries
        self.verlies: list[str] = []  # per notification: does NotifyNL lose callbacks?
        self.geabsorbeerd: dict = {}

    @initialize(
        geldigheden=st.lists(st.sampled_from(GELDIGHEDEN), min_size=1, max_size=2),
        verlies=st.lists(
            st.sampled_from(["soms", "nooit", "altijd"]),
            min_size=MAX_NOTIFICATIES,
            max_size=MAX_NOTIFICATIES,
        ),
    )
    def eerste_aannames(self, geldigheden, verlies):
        """The first notifications, and per notification whether NotifyNL loses its
        callbacks (sometimes, never, always), so that reconciliation has work to do."""
        self.verlies = verlies
        for geldigheid in geldigheden:
            self.aanname(geldigheid)

    @rule(operatie=operatie)
    def stap(self, operatie):
        naam, *argumenten = operatie
        self.tik()
        getattr(self, naam)(*argumenten)

    # -- helpers

    def tik(self) -> None:
        """The model reads the NMC clock before every operation."""
        self.model.nu = self.db.execute("SELECT nmc.now()").fetchone()[0]

    def sql(self, query: str, *parameters) -> list[tuple]:
        return self.db.execute(query, parameters).fetchall()

    def kies(self, lijst: list, keuze: int):
        return lijst[keuze % len(lijst)]

    def levend(self) -> list[Claim]:
        return [c for c in self.claims if c not in self.dood and not self.model.verouderd(c)]

    def notifynl_ids(self, p: Poging) -> list[uuid.UUID]:
        return self.notifynl.setdefault(p.referentie, [])

    def notifynl_accepteert(self, p: Poging) -> list[uuid.UUID]:
        ids = self.notifynl_ids(p)
        if not ids:
            ids.append(uuid.uuid4())
        return ids

    def beide(self, model_handeling: Callable, db_handeling: Callable) -> None:
        """Run the model and the database; they must agree on a refusal (SQLSTATE)."""
        try:
            model_handeling()
            model_fout = None
        except Geweigerd as fout:
            model_fout = fout.sqlstate
        _, db_fout = sqlstate_van(db_handeling)
        assert db_fout == model_fout, f"database {db_fout}, model {model_fout}"

    def leer_taak(self, claim: Claim, taak_id: int) -> None:
        if claim.taak.db_id is None:
            claim.taak.db_id = taak_id
        assert claim.taak.db_id == taak_id, "the database claimed another task"

    # -- intake and cancel

    def aanname(self, geldigheid: timedelta) -> None:
        if len(self.model.notificaties) >= MAX_NOTIFICATIES:
            return
        self.tik()
        geldig_tot = self.model.nu + geldigheid
        notificatie_id = aannemen(self.db, self.dv_id, geldig_tot)
        self.model.aannemen(notificatie_id, geldig_tot)

    def annuleren(self, keuze: int) -> None:
        n = self.kies(self.model.notificaties, keuze)
        self.beide(
            lambda: self.model.annuleren(n),
            lambda: self.sql("SELECT * FROM nmc.cancel_notificatie(%s, %s)", self.dv_id, n.id),
        )

    # -- workers: a claim round, then per claim what the worker does with it

    def verzendronde(self, acties: list[str]) -> None:
        """claim_verzenden, then per claim: a commit, a deferral, an internal failure, a
        death (before or after NotifyNL's 201), or hold on to it for a later step."""
        verwacht = self.model.claim_verzenden()
        rijen = self.sql(
            "SELECT notificatie_id, claim_epoch, poging_nummer, herclaim, mag_verzenden,"
            " taak_id, poging_id FROM nmc.claim_verzenden(%s)",
            WERKER,
        )
        assert sorted(r[:5] for r in rijen) == sorted(
            (c.notificatie.id, c.epoch, c.poging.nummer, c.herclaim, c.mag_verzenden)
            for c in verwacht
        )
        ids = {r[0]: r[5:] for r in rijen}
        for claim in verwacht:
            taak_id, poging_id = ids[claim.notificatie.id]
            self.leer_taak(claim, taak_id)
            if claim.poging.referentie is None:
                claim.poging.referentie = poging_id
            assert claim.poging.referentie == poging_id, "a re-claim took another attempt"
        self.claims.extend(verwacht)
        for volgnummer, claim in enumerate(verwacht):
            self.verzendclaim_afhandelen(claim, acties[volgnummer % len(acties)])

    def navraagronde(self, acties: list[str], status: str, leeftijd: int) -> None:
        """claim_navraag, then per claim NotifyNL's answer, or what a worker may do."""
        verwacht = self.model.claim_navraag()
        rijen = self.sql(
            "SELECT notificatie_id, claim_epoch, poging_id, notifynl_id, taak_id"
            " FROM nmc.claim_navraag_v2(%s)",
            WERKER,
        )
        assert sorted(r[:4] for r in rijen) == sorted(
            (c.notificatie.id, c.epoch, c.poging.referentie, c.poging.notifynl_id) for c in verwacht
        )
        # Per attempt: one round may claim the reconciliation of both attempts of one
        # notification (attempt 1's answer still due while attempt 2's comes due).
        taak_ids = {(r[0], r[2]): r[4] for r in rijen}
        for claim in verwacht:
            self.leer_taak(claim, taak_ids[claim.notificatie.id, claim.poging.referentie])
        self.claims.extend(verwacht)
        for volgnummer, claim in enumerate(verwacht):
            self.navraagclaim_afhandelen(claim, acties[volgnummer % len(acties)], status, leeftijd)

    def vastgehouden_claim(
        self, keuze: int, verzendactie: str, navraagactie: str, status: str, leeftijd: int
    ) -> None:
        """A worker that held on to its claim while other things happened goes on."""
        if not self.levend():
            return
        claim = self.kies(self.levend(), keuze)
        if claim.taak.soort == "verzenden":
            self.verzendclaim_afhandelen(claim, verzendactie)
        else:
            self.navraagclaim_afhandelen(claim, navraagactie, status, leeftijd)

    def verzendclaim_afhandelen(self, claim: Claim, uitkomst: str) -> None:
        if uitkomst in ("vasthouden", "uitstel", "fout", "sterft", "sterft-na-201"):
            self.werker(claim, uitkomst)
            return
        if self.notifynl_ids(claim.poging):
            uitkomst = "verzonden"  # NotifyNL accepted this attempt: found by reference
        notifynl_id = None
        if uitkomst == "verzonden":
            notifynl_id = self.notifynl_accepteert(claim.poging)[0]
        self.beide(
            lambda: self.model.verzending_afronden(claim, uitkomst, notifynl_id),
            lambda: self.sql(
                "SELECT nmc.finish_verzenden(%s, %s, %s, %s)",
                claim.taak.db_id,
                claim.epoch,
                uitkomst,
                notifynl_id,
            ),
        )

    def navraagclaim_afhandelen(
        self, claim: Claim, antwoord: str, status: str, leeftijd: int
    ) -> None:
        if antwoord in ("vasthouden", "uitstel", "fout", "sterft"):
            self.werker(claim, antwoord)
            return
        gevonden = antwoord != "404"
        status = {"definitief": status, "lopend": "sending", "onbekend": "unknown-status"}.get(
            antwoord
        )
        completed_at = None
        if antwoord == "definitief":
            completed_at = self.model.nu - timedelta(seconds=leeftijd)
        args = (claim, "gevonden" if gevonden else "404", status, completed_at)
        self.beide(
            lambda: self.model.navraag_afronden(*args),
            lambda: self.sql(
                "SELECT nmc.finish_navraag(%s, %s, %s, %s, %s)",
                claim.taak.db_id,
                claim.epoch,
                gevonden,
                status,
                completed_at,
            ),
        )

    def werker(self, claim: Claim, actie: str) -> None:
        """Besides a commit: defer after an outage, count an internal failure, die (after
        NotifyNL's 201 with sterft-na-201), or hold on."""
        if actie == "uitstel":
            self.beide(
                lambda: self.model.uitstellen(claim),
                lambda: self.sql(
                    "SELECT nmc.defer_taak(%s, %s, 'http-503')", claim.taak.db_id, claim.epoch
                ),
            )
        elif actie == "fout":
            self.beide(
                lambda: self.model.interne_fout(claim),
                lambda: self.sql(
                    "SELECT nmc.fail_taak(%s, %s, 'intern')", claim.taak.db_id, claim.epoch
                ),
            )
        elif actie.startswith("sterft"):
            self.dood.append(claim)
            if actie == "sterft-na-201":
                self.notifynl_accepteert(claim.poging)

    def verouderde_claim(self, keuze: int, handeling: str) -> None:
        """A worker commits after its claim was taken over or finished: fenced, NM011."""
        verouderd = [c for c in self.claims if self.model.verouderd(c)]
        if not verouderd:
            return
        claim = self.kies(verouderd, keuze)
        taak_id = claim.taak.db_id
        if handeling == "uitstel":
            query, parameters = "SELECT nmc.defer_taak(%s, %s)", (taak_id, claim.epoch)
        elif handeling == "fout":
            query, parameters = "SELECT nmc.fail_taak(%s, %s)", (taak_id, claim.epoch)
        elif claim.taak.soort == "verzenden":
            query = "SELECT nmc.finish_verzenden(%s, %s, 'verzonden', %s)"
            parameters = (taak_id, claim.epoch, uuid.uuid4())
        else:
            query, parameters = "SELECT nmc.finish_navraag(%s, %s, false)", (taak_id, claim.epoch)
        _, fout = sqlstate_van(lambda: self.sql(query, *parameters))
        assert fout == "NM011"

    # -- receipts

    def receipt(
        self,
        keuze: int,
        welke: str,
        status: str,
        leeftijd: int,
        id_keuze: str,
        verloren: bool,
        verwerken: bool,
    ) -> None:
        """NotifyNL calls back for an attempt it holds (for an attempt still gepland: it
        accepted the send before the worker committed). Processed at once, or left for a
        later run so that receipts arrive out of order."""
        kandidaten = [
            [p for p in n.pogingen if p.status == "gepland" or self.notifynl_ids(p)]
            for n, verlies in zip(self.model.notificaties, self.verlies, strict=False)
            if verlies == "nooit" or (verlies == "soms" and not verloren)
        ]
        kandidaten = [pogingen for pogingen in kandidaten if pogingen]
        if kandidaten:
            pogingen = self.kies(kandidaten, keuze)
            p = pogingen[0 if welke == "eerste" else -1]
            n = next(n for n in self.model.notificaties if p in n.pogingen)
            ids = self.notifynl_accepteert(p)
            if id_keuze == "nieuw":
                ids.append(uuid.uuid4())  # a second message for the same reference
            notifynl_id = ids[0] if id_keuze == "eigen" else ids[-1]
            completed_at = self.model.nu - timedelta(seconds=leeftijd)
            self.receipt_versturen(n, p, notifynl_id, status, completed_at)
        if verwerken:
            self.receipts_verwerken()

    def receipt_herhalen(self, keuze: int) -> None:
        """NotifyNL retries a callback: the same attempt, completed_at and status."""
        if self.verstuurd:
            self.receipt_versturen(*self.kies(self.verstuurd, keuze))

    def receipt_versturen(self, n, p, notifynl_id, status, completed_at) -> None:
        self.verstuurd.append((n, p, notifynl_id, status, completed_at))
        verwacht = self.model.receipt_opslaan(n, p, notifynl_id, status, completed_at)
        echt = receipt_opslaan(self.db, p.referentie, notifynl_id, status, completed_at)
        assert echt == verwacht

    def receipts_verwerken(self) -> None:
        verwacht = self.model.receipts_verwerken()
        assert self.sql("SELECT nmc.process_receipts(1000)")[0][0] == verwacht
        [(mislukt,)] = self.sql(
            "SELECT count(*) FROM nmc.taak WHERE dv_id = %s AND soort = 'receipt'"
            " AND laatste_fout IS NOT NULL",
            self.dv_id,
        )
        assert mislukt == 0, "a receipt failed inside the NMC"

    # -- the clock, settlement, watchdog

    def klok_verzetten(self, duur: timedelta) -> None:
        self.db.execute("SELECT nmc.advance_clock(%s)", [duur])

    def vaststellen(self) -> None:
        verwacht = self.model.vaststellen()
        assert self.sql("SELECT nmc.process_vaststellingen(1000)")[0][0] == verwacht

    def controle(self) -> None:
        self.db.execute("SELECT nmc.ensure_controle()")
        rijen = self.sql("SELECT taak_id, claim_epoch FROM nmc.claim_taken('controle', %s)", WERKER)
        if not rijen:
            return  # the watchdog ran less than its interval ago
        [(taak_id, epoch)] = rijen
        verwacht = self.model.controle()
        assert self.sql("SELECT nmc.run_controle(%s, %s)", taak_id, epoch)[0][0] == verwacht

    # -- after every step

    @invariant()
    def database_volgt_model(self):
        assert self.database_beeld() == self.model.beeld()
        controleer_invarianten(self.db, self.dv_id, self.toegestaan, self.geabsorbeerd)

    @invariant()
    def verzonden_kan_verder(self):
        """Promise 1: a verzonden notification has a running or planned attempt, or may
        still make its resend (at most two attempts)."""
        for n in self.model.notificaties:
            if n.status == "verzonden":
                statussen = [p.status for p in n.pogingen]
                verder = len(statussen) < 2 or any(s in {*LOPEND, "gepland"} for s in statussen)
                assert verder, f"{n.id} is stranded in verzonden with attempts {statussen}"

    def database_beeld(self) -> dict:
        """What model.beeld() describes, read from the database in one query."""
        rijen = self.sql(
            """
            SELECT n.id, n.status::text, n.reden::text, n.versie,
                (SELECT coalesce(json_agg(json_build_array(
                    p.nummer, p.status, p.id, p.notifynl_id, p.duplicaat_ids
                ) ORDER BY p.nummer), '[]') FROM nmc.poging AS p WHERE p.notificatie_id = n.id),
                (SELECT coalesce(json_agg(json_build_array(
                    t.soort, t.staat, t.claim_epoch, t.poging_id
                )), '[]') FROM nmc.taak AS t
                WHERE t.notificatie_id = n.id AND t.staat IN ('open', 'claimed', 'mislukt')
                    AND t.soort IN ('verzenden', 'reconciliëren', 'vaststellen'))
            FROM nmc.notificatie AS n WHERE n.dv_id = %s
            """,
            self.dv_id,
        )
        return {
            str(notificatie_id): ((status, reden, versie), pogingen, sorted(taken, key=str))
            for notificatie_id, status, reden, versie, pogingen, taken in rijen
        }


# 200 examples of 40 steps: about 22 s against the embedded cluster (at least 200 by design).
MODEL_INSTELLINGEN = settings(
    max_examples=200,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def test_the_models_transition_table_is_the_databases(conn):
    assert toegestane_overgangen(conn) == SPEC_OVERGANGEN


def test_lifecycle_follows_the_model(conn):
    toegestaan = toegestane_overgangen(conn)
    run_state_machine_as_test(lambda: Levenscyclus(conn, toegestaan), settings=MODEL_INSTELLINGEN)


# --- former bugs: minimal examples of where the SQL once left the SPEC --------------------------
# The model found these; the SQL was fixed, and each test below states the SPEC's outcome and
# pins the fix.


def klok(conn: psycopg.Connection, duur: str) -> None:
    conn.execute("SELECT nmc.advance_clock(%s::interval)", [duur])


def verzonden_notificatie(conn: psycopg.Connection) -> tuple[uuid.UUID, VerzendClaim]:
    """A new notification whose attempt 1 NotifyNL accepted and the worker committed."""
    notificatie_id = aannemen(conn, nieuwe_dv(conn), None)
    [claim] = claim_verzenden(conn)
    verzonden_melden(conn, claim)
    return notificatie_id, claim


def receipt(conn: psycopg.Connection, claim: VerzendClaim, status: str, op: datetime) -> None:
    """One receipt for the claim's attempt, with its NotifyNL id, processed at once."""
    notifynl_id = notifynl_id_van(conn, claim.poging_id)
    receipt_opslaan(conn, claim.poging_id, notifynl_id, status, op)
    receipts_verwerken(conn)


def navraag_claimen(conn: psycopg.Connection) -> tuple[int, int, uuid.UUID]:
    [(taak_id, epoch, poging_id)] = conn.execute(
        "SELECT taak_id, claim_epoch, poging_id FROM nmc.claim_navraag_v2(%s)", [WERKER]
    ).fetchall()
    return taak_id, epoch, poging_id


def poging_statussen(conn: psycopg.Connection, notificatie_id: uuid.UUID) -> list[str]:
    return [status for _, _, status, _, _ in pogingen_van(conn, notificatie_id)]


def test_a_reconciliation_answer_concerns_the_attempt_it_asked_about(conn):
    """Was: the resend commit re-pointed the claimed reconciliation task to attempt 2, and
    the answer about attempt 1 was applied to attempt 2 (niet-bezorgbaar)."""
    notificatie_id, eerste = verzonden_notificatie(conn)
    klok(conn, "61 minutes")
    taak_id, epoch, gevraagd = navraag_claimen(conn)
    assert gevraagd == eerste.poging_id
    # While NotifyNL is asked about attempt 1, its temporary failure arrives: a resend.
    receipt(conn, eerste, "temporary-failure", nu(conn))
    [tweede] = claim_verzenden(conn)
    verzonden_melden(conn, tweede)
    # NotifyNL answers what it was asked: attempt 1 failed temporarily.
    conn.execute(
        "SELECT nmc.finish_navraag(%s, %s, true, 'temporary-failure', %s)",
        [taak_id, epoch, nu(conn)],
    )
    # Nothing is known about attempt 2 yet: it still runs.
    assert poging_statussen(conn, notificatie_id) == ["tijdelijk-mislukt", "verzonden"]
    assert status_van(conn, notificatie_id) == ("verzonden", None)


def test_a_stale_404_does_not_end_a_notification_whose_attempt_has_an_outcome(conn):
    """Was: bezorgstatus-onbekend while the attempt was tijdelijk-mislukt, and the planned
    resend was dropped at its claim."""
    notificatie_id, eerste = verzonden_notificatie(conn)
    klok(conn, "61 minutes")
    taak_id, epoch, _ = navraag_claimen(conn)
    receipt(conn, eerste, "temporary-failure", nu(conn))  # a resend is planned
    conn.execute("SELECT nmc.finish_navraag(%s, %s, false)", [taak_id, epoch])  # 404
    # The processed receipt ended the attempt's reconciliation: the answer changes nothing.
    assert status_van(conn, notificatie_id) == ("verzonden", None)
    [herhaling] = claim_verzenden(conn)
    assert herhaling.poging_nummer == 2


def werkronde(conn: psycopg.Connection) -> None:
    """Eight days on, then everything a worker would do: watchdog, sends, reconciliation
    (NotifyNL has forgotten: 404), settlement."""
    klok(conn, "8 days")
    conn.execute("SELECT nmc.ensure_controle()")
    for taak_id, epoch in conn.execute(
        "SELECT taak_id, claim_epoch FROM nmc.claim_taken('controle', %s)", [WERKER]
    ).fetchall():
        conn.execute("SELECT nmc.run_controle(%s, %s)", [taak_id, epoch])
    for claim in claim_verzenden(conn):
        verzonden_melden(conn, claim)
    for taak_id, epoch in conn.execute(
        "SELECT taak_id, claim_epoch FROM nmc.claim_navraag_v2(%s)", [WERKER]
    ).fetchall():
        conn.execute("SELECT nmc.finish_navraag(%s, %s, false)", [taak_id, epoch])
    conn.execute("SELECT nmc.process_vaststellingen()")


def test_a_late_failure_on_attempt_1_does_not_strand_a_delivered_notification(conn):
    """Was: back to verzonden for a third attempt that never comes; the watchdog's send
    task closed without sending, round after round (SPEC §1, promise 1)."""
    notificatie_id, eerste = verzonden_notificatie(conn)
    begin = nu(conn)
    receipt(conn, eerste, "temporary-failure", begin)
    [tweede] = claim_verzenden(conn)
    verzonden_melden(conn, tweede)
    receipt(conn, eerste, "delivered", begin + timedelta(seconds=10))  # a late delivered
    receipt(conn, tweede, "delivered", begin + timedelta(seconds=20))
    assert status_van(conn, notificatie_id) == ("bezorgd", None)
    receipt(conn, eerste, "temporary-failure", begin + timedelta(seconds=30))
    for _ in range(3):
        werkronde(conn)
    assert status_van(conn, notificatie_id)[0] in TERMINAAL


def test_a_bounce_within_the_term_counts_after_a_recorded_technical_failure(conn):
    """Was: the recorded technical failure hid the attempt bezorgd rested on, the bounce
    was only recorded and the notification settled as definitief-bezorgd."""
    notificatie_id, claim = verzonden_notificatie(conn)
    begin = nu(conn)
    receipt(conn, claim, "delivered", begin)
    receipt(conn, claim, "technical-failure", begin + timedelta(hours=1))  # recorded only
    assert status_van(conn, notificatie_id) == ("bezorgd", None)
    receipt(conn, claim, "permanent-failure", begin + timedelta(hours=2))
    assert status_van(conn, notificatie_id) == ("niet-bezorgbaar", "onbereikbaar")
