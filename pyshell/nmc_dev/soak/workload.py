"""What the soak submits: several DVs, both regies, every outcome the simulators can give.

The outcome of a notification is not faked: a scenario only picks a recipient the
simulators treat in a known way (NotifyNL by the local part of the address, see
nmc_dev.sim.notifynl; the Profielservice by the parties seeded into it) or a DV action (a cancel
right after the intake, a short geldigTot). Under chaos the end result may differ from the
scenario's usual one (a cancel loses the race with the claim, a duplicate e-mail brings a
second receipt), so the soak reports outcomes per scenario but judges only the invariants.

Every personal value (address, identifying number, dvRef, personalisation) is recorded in
`PersonalData` for the log scan, and every value but the numbers carries the run's marker,
so a leak of any of them is found by the marker alone.
"""

import random
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

DOMAIN = "soak.voorbeeld.nl"
BATCH_SIZE = 100
SINGLE_SHARE = 0.3  # of the notifications, submitted one by one; the rest in batches
# geldigTot of the `kort-geldig` scenario, from the NMC clock at its submission (the clock
# moves during the intake, so it is set then, once: a repeat must carry the same body).
SHORT_VALIDITY = timedelta(minutes=20)
Regie = Literal["decentraal", "centraal"]
Party = Literal["email", "unknown", "phone-only"]
Action = Literal["none", "cancel", "short-validity"]


@dataclass(frozen=True)
class Dv:
    oin: str
    naam: str
    max_cursorleeftijd: str = "30 days"

    def document(self) -> dict[str, Any]:
        """The DV as `nmc admin dv apply` takes it (README: the DV document)."""
        return {
            "oin": self.oin,
            "naam": self.naam,
            "quotumPerMinuut": 1_000_000,
            "quotumPerDag": 10_000_000,
            "bevestigingstermijn": "7 days",
            "maxCursorleeftijd": self.max_cursorleeftijd,
            "feedMaxPagina": 1000,
            "feedAanroepenPerMinuut": 6000,
            "actief": True,
            "berichttypen": [
                {
                    "code": "herinnering",
                    "notifynlTemplateId": "b0b0b0b0-0000-4000-8000-000000000001",
                    "regie": ["decentraal", "centraal"],
                    "geldigheidStandaard": "3 days",
                    "geldigheidMax": "30 days",
                },
                {
                    "code": "besluit",
                    "notifynlTemplateId": "b0b0b0b0-0000-4000-8000-000000000002",
                    "notifyService": "besluiten",  # its own NotifyNL service and key
                    "regie": ["centraal"],
                    "geldigheidStandaard": "14 days",
                    "geldigheidMax": "30 days",
                },
            ],
        }


# The third DV's cursors expire after a day: the 8-day settlement jump makes its feed reader
# meet a 410 and restart from the snapshot.
DVS = (
    Dv("00000001000000000100", "Gemeente Soakdam"),
    Dv("00000001000000000200", "Waterschap Soakland"),
    Dv("00000001000000000300", "Provincie Soakveen", max_cursorleeftijd="1 day"),
)


@dataclass(frozen=True)
class Scenario:
    key: str
    regie: Regie
    weight: int  # share of the notifications, in percent
    usual: str  # the final status without interference (reported, not judged)
    local_part: str = "bezorgd"  # NotifyNL simulator rule of the recipient's address
    party: Party = "email"
    action: Action = "none"


SCENARIOS = (
    Scenario("bezorgd", "decentraal", 28, "definitief-bezorgd"),
    Scenario("vol-dan-bezorgd", "decentraal", 6, "definitief-bezorgd",
             local_part="tijdelijk-dan-bezorgd"),
    Scenario("callback-kwijt", "decentraal", 4, "definitief-bezorgd", local_part="verloren"),
    Scenario("bounce", "decentraal", 5, "niet-bezorgbaar", local_part="permanent"),
    Scenario("vol", "decentraal", 4, "niet-bezorgbaar", local_part="tijdelijk"),
    Scenario("technisch", "decentraal", 3, "technisch-mislukt", local_part="technisch"),
    Scenario("stil", "decentraal", 3, "bezorgstatus-onbekend", local_part="stil"),
    Scenario("geannuleerd", "decentraal", 3, "geannuleerd", action="cancel"),
    Scenario("kort-geldig", "decentraal", 2, "definitief-bezorgd", action="short-validity"),
    Scenario("c-bezorgd", "centraal", 22, "definitief-bezorgd"),
    Scenario("c-vol-dan-bezorgd", "centraal", 4, "definitief-bezorgd",
             local_part="tijdelijk-dan-bezorgd"),
    Scenario("c-bounce", "centraal", 4, "niet-bezorgbaar", local_part="permanent"),
    Scenario("c-onbekend", "centraal", 5, "niet-bezorgbaar", party="unknown"),
    Scenario("c-geen-email", "centraal", 3, "niet-bezorgbaar", party="phone-only"),
)  # fmt: skip
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
            notificatie.body.setdefault("geldigTot", _rfc3339(now + SHORT_VALIDITY))


def new_marker() -> str:
    """A run marker that no id, path or number in a log can contain by chance."""
    return "zq" + secrets.token_hex(4)


def shares(count: int, dvs: tuple[Dv, ...] = DVS) -> dict[Scenario, int]:
    """`count` split over the scenarios by weight, at least one each per DV."""
    if count < len(SCENARIOS) * len(dvs):
        raise ValueError(f"--count must be at least {len(SCENARIOS) * len(dvs)}")
    total = sum(s.weight for s in SCENARIOS)
    split = {s: max(len(dvs), round(count * s.weight / total)) for s in SCENARIOS}
    largest = max(SCENARIOS, key=lambda s: s.weight)
    split[largest] += count - sum(split.values())
    return split


def build(count: int, *, marker: str, seed: int = 9, dvs: tuple[Dv, ...] = DVS) -> Workload:
    dice = random.Random(seed)  # noqa: S311 - test data, not secrets
    numbers = _identification_numbers(dice)
    personal = PersonalData(marker)
    notificaties: list[Notificatie] = []
    parties: list[dict[str, Any]] = []
    serial = 0
    for scenario, amount in shares(count, dvs).items():
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
            if scenario.regie == "decentraal":
                body["emailAdres"] = address
                personal.emails.add(address)
            else:
                kind, number = next(numbers)
                body.update(identificatieType=kind, identificatieNummer=number)
                personal.numbers.add(number)
                party = _party(scenario.party, kind, number, address)
                if party:
                    parties.append(party)
                    personal.emails.add(address)
            single = scenario.action == "cancel" or dice.random() < SINGLE_SHARE
            notificaties.append(Notificatie(serial, dv, scenario, body, single))
    dice.shuffle(notificaties)  # a realistic mix in every batch
    return Workload(notificaties, parties, personal)


def _party(kind: Party, id_type: str, number: str, address: str) -> dict[str, Any] | None:
    if kind == "unknown":
        return None
    contact = (
        {"type": "Email", "waarde": address, "isDefault": True}
        if kind == "email"
        else {"type": "Telefoonnummer", "waarde": "0612345678", "isDefault": True}
    )
    return {"identificatieType": id_type, "identificatieNummer": number,
            "contactgegevens": [contact]}  # fmt: skip


def _identification_numbers(dice: random.Random):
    """Distinct fictitious numbers: BSN and RSIN (passing the 11-proef) and KVK, in turn."""
    seen: set[str] = set()
    while True:
        for kind in ("BSN", "KVK", "RSIN"):
            while True:
                number = _kvk(dice) if kind == "KVK" else _elfproef(dice)
                if number and number not in seen:
                    seen.add(number)
                    yield kind, number
                    break


def _elfproef(dice: random.Random) -> str | None:
    digits = [dice.randrange(10) for _ in range(8)]
    digits[0] = dice.randrange(1, 10)
    check = sum(d * w for d, w in zip(digits, range(9, 1, -1), strict=True)) % 11
    return None if check == 10 else "".join(map(str, digits)) + str(check)


def _kvk(dice: random.Random) -> str:
    return str(dice.randrange(10**7, 10**8))


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
