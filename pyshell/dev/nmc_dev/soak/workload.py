"""What the soak submits: several DVs, both regies, every outcome the simulators can give.

The soak's mix of the scenarios in nmc_dev.scenarios (each a recipient the simulators treat in
a known way, or a DV action: a cancel right after the intake, a short geldigTot). Under chaos
the end result may differ from the scenario's usual one (a cancel loses the race with the
claim, a duplicate e-mail brings a second receipt), so the soak reports outcomes per scenario
but judges only the invariants.

Every personal value (address, identifying number, dvRef, personalisation) is recorded in
`PersonalData` for the log scan, and every value but the numbers carries the run's marker,
so a leak of any of them is found by the marker alone.
"""

import random
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from nmc_dev import scenarios
from nmc_dev.scenarios import Scenario

DOMAIN = "soak.voorbeeld.nl"
BATCH_SIZE = 100
SINGLE_SHARE = 0.3  # of the notifications, submitted one by one; the rest in batches
# geldigTot of the `kort-geldig` scenario, from the NMC clock at its submission (the clock
# moves during the intake, so it is set then, once: a repeat must carry the same body).
SHORT_VALIDITY = timedelta(minutes=20)


@dataclass(frozen=True)
class Dv:
    oin: str
    naam: str
    max_cursorleeftijd: str = "30 days"

    def document(self) -> dict[str, Any]:
        """The DV as `nmc admin dv apply` takes it (README: the DV document)."""
        return scenarios.dv_document(
            self.oin,
            self.naam,
            template_ids=(
                "b0b0b0b0-0000-4000-8000-000000000001",
                "b0b0b0b0-0000-4000-8000-000000000002",
            ),
            quotum_per_minuut=1_000_000,
            quotum_per_dag=10_000_000,
            feed_aanroepen_per_minuut=6000,
            max_cursorleeftijd=self.max_cursorleeftijd,
        )


# The third DV's cursors expire after a day: the 8-day settlement jump makes its feed reader
# meet a 410 and restart from the snapshot.
DVS = (
    Dv("00000001000000000100", "Gemeente Soakdam"),
    Dv("00000001000000000200", "Waterschap Soakland"),
    Dv("00000001000000000300", "Provincie Soakveen", max_cursorleeftijd="1 day"),
)


# The soak's mix, in percent; a scenario's status is its usual end (reported, not judged).
SCENARIOS = scenarios.mix({
    "bezorgd": 28, "vol-dan-bezorgd": 6, "callback-kwijt": 4, "bounce": 5, "vol": 4,
    "technisch": 3, "stil": 3, "geannuleerd": 3, "kort-geldig": 2, "c-bezorgd": 22,
    "c-vol-dan-bezorgd": 4, "c-bounce": 4, "c-onbekend": 5, "c-geen-email": 3,
})  # fmt: skip
MIN_COUNT = len(SCENARIOS) * len(DVS)


@dataclass
class Notificatie:
    serial: int
    dv: Dv
    scenario: Scenario
    body: dict[str, Any]
    single: bool  # submitted one by one (else in a batch)


@dataclass
class PersonalData:
    """Every personal value handed to the NMC or its simulators in this run."""

    marker: str  # in every address, dvRef and personalisation value
    emails: set[str] = field(default_factory=set)
    numbers: set[str] = field(default_factory=set)
    dvrefs: set[str] = field(default_factory=set)
    personalisation: set[str] = field(default_factory=set)


@dataclass
class Workload:
    notificaties: list[Notificatie]
    parties: list[dict[str, Any]]  # for the Profielservice simulator
    personal: PersonalData

    def batches(self) -> list[list[Notificatie]]:
        """The submissions in order: singles (a list of one) and batches of one DV and one
        regie, interleaved so every DV and both regies are under way at the same time."""
        singles = [[n] for n in self.notificaties if n.single]
        grouped: list[list[Notificatie]] = []
        for dv in DVS:
            for regie in ("decentraal", "centraal"):
                rest = [
                    n
                    for n in self.notificaties
                    if not n.single and n.dv == dv and n.scenario.regie == regie
                ]
                grouped += [rest[i : i + BATCH_SIZE] for i in range(0, len(rest), BATCH_SIZE)]
        jobs: list[list[Notificatie]] = []
        ratio = max(1, len(singles) // max(1, len(grouped)))
        while singles or grouped:  # a batch, then its share of singles, and so on
            if grouped:
                jobs.append(grouped.pop(0))
            jobs += singles[:ratio]
            del singles[:ratio]
        return jobs


def set_short_validity(job: list[Notificatie], now: datetime) -> None:
    """Give the `kort-geldig` notifications of a job their geldigTot, once."""
    for notificatie in job:
        if notificatie.scenario.action == "short-validity":
            notificatie.body.setdefault("geldigTot", scenarios.rfc3339(now + SHORT_VALIDITY))


def new_marker() -> str:
    """A run marker that no id, path or number in a log can contain by chance."""
    return "zq" + secrets.token_hex(4)


def build(count: int, *, marker: str, seed: int = 9, dvs: tuple[Dv, ...] = DVS) -> Workload:
    """`count` notifications split over the scenarios by weight, at least one each per DV."""
    if count < len(SCENARIOS) * len(dvs):
        raise ValueError(f"--count must be at least {len(SCENARIOS) * len(dvs)}")
    dice = random.Random(seed)  # noqa: S311 - test data, not secrets
    numbers = scenarios.identification_numbers(dice, ("BSN", "KVK", "RSIN"))
    personal = PersonalData(marker)
    notificaties: list[Notificatie] = []
    parties: list[dict[str, Any]] = []
    serial = 0
    for scenario, amount in scenarios.shares(count, SCENARIOS, at_least=len(dvs)).items():
        for i in range(amount):
            serial += 1
            dv = dvs[i % len(dvs)]
            address = f"{scenario.local_part}+{marker}n{serial:05d}@{DOMAIN}"
            body: dict[str, Any] = {
                "dvRef": f"soak-{marker}-{serial:05d}",
                "berichtType": "herinnering" if serial % 2 or scenario.regie == "decentraal"
                else "besluit",
                "berichtgegevens": {
                    "naam": f"Bedrijf {marker} {serial}",
                    "zaak": f"Z-{marker}-{serial:05d}",
                },
            }  # fmt: skip
            personal.dvrefs.add(body["dvRef"])
            personal.personalisation.update(body["berichtgegevens"].values())
            fields, party = scenarios.recipient(scenario, address, numbers)
            body.update(fields)
            if "identificatieNummer" in fields:
                personal.numbers.add(fields["identificatieNummer"])
            if scenario.regie == "decentraal" or party:
                personal.emails.add(address)
            if party:
                parties.append(party)
            single = scenario.action == "cancel" or dice.random() < SINGLE_SHARE
            notificaties.append(Notificatie(serial, dv, scenario, body, single))
    dice.shuffle(notificaties)  # a realistic mix in every batch
    return Workload(notificaties, parties, personal)
