"""What the demo sends, and the final status each notification should reach.

Outcomes are not faked: each scenario only picks a recipient the simulators treat in a
known way (NotifyNL by the address's local part, see nmc_dev.sim.notifynl; the Profielservice by
the parties seeded into it) or a DV action (cancel, a short geldigTot). The NMC's own rules
do the rest, and the demo compares what the feed says with `expected`.
"""

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

DEMO_OIN = "00000001823288444000"
DEMO_NAAM = "Gemeente Voorbeeld"
DOMAIN = "demo.voorbeeld.nl"
MIN_COUNT = 20
BATCH_SIZE = 25
SINGLE_SHARE = 0.3  # of the main wave, submitted one by one; the rest in batches
SHORT_VALIDITY = timedelta(minutes=30)  # geldigTot of the `verlopen` scenario
Regie = Literal["decentraal", "centraal"]
# How a centraal scenario's party is known at the Profielservice.
Party = Literal["email", "unknown", "phone-only"]
Phase = Literal["main", "cancel", "expire"]


@dataclass(frozen=True)
class Scenario:
    key: str
    description: str
    regie: Regie
    weight: int  # share of the notifications, in percent
    status: str  # the expected final status …
    reden: str | None  # … and reason
    local_part: str = "bezorgd"  # NotifyNL simulator rule of the recipient's address
    party: Party = "email"
    phase: Phase = "main"


SCENARIOS = (
    Scenario("bezorgd", "delivered, settled after 7 days", "decentraal", 26,
             "definitief-bezorgd", None),
    Scenario("vol-dan-bezorgd", "mailbox full, delivered on the resend", "decentraal", 6,
             "definitief-bezorgd", None, local_part="tijdelijk-dan-bezorgd"),
    Scenario("callback-kwijt", "delivered, callback lost: reconciliation finds it",
             "decentraal", 6, "definitief-bezorgd", None, local_part="verloren"),
    Scenario("bounce", "bounced (permanent failure)", "decentraal", 6,
             "niet-bezorgbaar", "onbereikbaar", local_part="permanent"),
    Scenario("vol", "mailbox full on both attempts", "decentraal", 4,
             "niet-bezorgbaar", "onbereikbaar", local_part="tijdelijk"),
    Scenario("technisch", "technical failure on both attempts", "decentraal", 3,
             "technisch-mislukt", "technisch", local_part="technisch"),
    Scenario("stil", "never an outcome, NotifyNL's retention ends", "decentraal", 3,
             "bezorgstatus-onbekend", None, local_part="stil"),
    Scenario("c-bezorgd", "address from the Profielservice, delivered", "centraal", 20,
             "definitief-bezorgd", None),
    Scenario("c-vol-dan-bezorgd", "Profielservice address, full, delivered on the resend",
             "centraal", 4, "definitief-bezorgd", None, local_part="tijdelijk-dan-bezorgd"),
    Scenario("c-bounce", "Profielservice address bounced, reported invalid there",
             "centraal", 4, "niet-bezorgbaar", "onbereikbaar", local_part="permanent"),
    Scenario("c-onbekend", "party unknown at the Profielservice", "centraal", 6,
             "niet-bezorgbaar", "geen-contactgegevens", party="unknown"),
    Scenario("c-geen-email", "party without an e-mail address", "centraal", 3,
             "niet-bezorgbaar", "geen-contactgegevens", party="phone-only"),
    Scenario("geannuleerd", "cancelled by the DV before the send (DELETE)", "decentraal", 4,
             "geannuleerd", "geannuleerd", phase="cancel"),
    Scenario("verlopen", "geldigTot passed before a worker took it", "decentraal", 5,
             "verlopen", "verlopen", phase="expire"),
)  # fmt: skip


@dataclass
class Notificatie:
    scenario: Scenario
    body: dict[str, Any]
    id: str | None = None  # the NMC's notificatieId, after intake


@dataclass
class Plan:
    notificaties: list[Notificatie]
    parties: list[dict[str, Any]] = field(default_factory=list)  # for the Profielservice

    def of_phase(self, phase: Phase) -> list[Notificatie]:
        return [n for n in self.notificaties if n.scenario.phase == phase]

    def expected(self) -> dict[tuple[str, str | None], int]:
        counts: dict[tuple[str, str | None], int] = {}
        for n in self.notificaties:
            key = (n.scenario.status, n.scenario.reden)
            counts[key] = counts.get(key, 0) + 1
        return counts


def shares(count: int) -> dict[Scenario, int]:
    """`count` split over the scenarios by weight, at least one each; the rest (or the
    overshoot) goes to the largest."""
    if count < MIN_COUNT:
        raise ValueError(f"--count must be at least {MIN_COUNT}")
    total = sum(s.weight for s in SCENARIOS)
    split = {s: max(1, round(count * s.weight / total)) for s in SCENARIOS}
    largest = max(SCENARIOS, key=lambda s: s.weight)
    split[largest] += count - sum(split.values())
    return split


def build_plan(count: int, run_id: str, *, now: datetime, seed: int = 8) -> Plan:
    """The notifications of one run (dvRefs unique per run), and the parties to seed."""
    dice = random.Random(seed)  # noqa: S311 - test data, not secrets
    numbers = _identification_numbers(dice)
    plan = Plan([])
    serial = 0
    for scenario, amount in shares(count).items():
        for _ in range(amount):
            serial += 1
            address = f"{scenario.local_part}+{run_id}n{serial:04d}@{DOMAIN}"
            body: dict[str, Any] = {
                "dvRef": f"demo-{run_id}-{serial:04d}",
                "berichtType": "herinnering" if scenario.regie == "decentraal" else "besluit",
                "berichtgegevens": {"zaak": f"Z-{serial:04d}"},
            }
            if scenario.regie == "decentraal":
                body["emailAdres"] = address
            else:
                kind, number = next(numbers)
                body.update(identificatieType=kind, identificatieNummer=number)
                party = _party(scenario.party, kind, number, address)
                if party:
                    plan.parties.append(party)
            if scenario.phase == "expire":
                body["geldigTot"] = _rfc3339(now + SHORT_VALIDITY)
            plan.notificaties.append(Notificatie(scenario, body))
    dice.shuffle(plan.notificaties)  # a realistic mix in every batch
    return plan


def batches(notificaties: list[Notificatie]) -> tuple[list[Notificatie], list[list[Notificatie]]]:
    """Split a wave into single submissions and batches of one regie each."""
    singles: list[Notificatie] = []
    grouped: list[list[Notificatie]] = []
    for regie in ("decentraal", "centraal"):
        of_regie = [n for n in notificaties if n.scenario.regie == regie]
        cut = round(len(of_regie) * SINGLE_SHARE)
        singles += of_regie[:cut]
        rest = of_regie[cut:]
        grouped += [rest[i : i + BATCH_SIZE] for i in range(0, len(rest), BATCH_SIZE)]
    return singles, grouped


def dv_document() -> dict[str, Any]:
    """The demo DV as `nmc admin dv apply` takes it (README: the DV document)."""
    return {
        "oin": DEMO_OIN,
        "naam": DEMO_NAAM,
        "quotumPerMinuut": 6000,
        "quotumPerDag": 1000000,
        "bevestigingstermijn": "7 days",
        "maxCursorleeftijd": "30 days",
        "beheerkanaal": "mailto:beheer@voorbeeld.nl",
        "feedMaxPagina": 1000,
        "feedAanroepenPerMinuut": 1200,
        "actief": True,
        "berichttypen": [
            {
                "code": "herinnering",
                "notifynlTemplateId": "a0a0a0a0-0000-4000-8000-000000000001",
                "regie": ["decentraal", "centraal"],
                "geldigheidStandaard": "3 days",
                "geldigheidMax": "30 days",
            },
            {
                "code": "besluit",
                "notifynlTemplateId": "a0a0a0a0-0000-4000-8000-000000000002",
                # A Notify service of its own (its own key and budget; herinnering uses
                # `standaard`).
                "notifyService": "besluiten",
                "regie": ["centraal"],
                "geldigheidStandaard": "14 days",
                "geldigheidMax": "30 days",
            },
        ],
    }


def new_run_id() -> str:
    return uuid.uuid4().hex[:6]


def _party(kind: Party, id_type: str, number: str, address: str) -> dict[str, Any] | None:
    if kind == "unknown":
        return None
    contact = (
        {"type": "Email", "waarde": address, "isDefault": True}
        if kind == "email"
        else {"type": "Telefoonnummer", "waarde": "0612345678", "isDefault": True}
    )
    return {
        "identificatieType": id_type,
        "identificatieNummer": number,
        "contactgegevens": [contact],
    }


def _identification_numbers(dice: random.Random) -> Iterator[tuple[str, str]]:
    """Distinct fictitious numbers, BSN (passing the 11-proef) and KVK in turn."""
    seen: set[str] = set()
    while True:
        for kind in ("BSN", "KVK"):
            while True:
                number = _bsn(dice) if kind == "BSN" else f"{dice.randrange(10**7, 10**8)}"
                if number and number not in seen:
                    seen.add(number)
                    yield kind, number
                    break


def _bsn(dice: random.Random) -> str | None:
    digits = [dice.randrange(10) for _ in range(8)]
    digits[0] = dice.randrange(1, 10)
    check = sum(d * w for d, w in zip(digits, range(9, 1, -1), strict=True)) % 11
    return None if check == 10 else "".join(map(str, digits)) + str(check)


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
