"""The scenarios the demo and the soak send, and the final status each one leads to.

Outcomes are not faked: a scenario only picks a recipient the simulators treat in a known way
(NotifyNL by the local part of the address, see nmc_dev.sim.notifynl; the Profielservice by
the parties seeded into it) or a DV action (a cancel, a short geldigTot). The NMC's own rules
do the rest. A mix is a choice of these scenarios, each at a weight; the demo and the soak
each have their own (nmc_dev.demo.scenario, nmc_dev.soak.workload).
"""

import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

Regie = Literal["decentraal", "centraal"]
# How a centraal scenario's party is known at the Profielservice.
Party = Literal["email", "unknown", "phone-only"]
# What the DV does besides the intake: nothing, cancel it, give it a short geldigTot, or
# leave out a field the berichttype's NotifyNL template needs (the intake refuses it).
Action = Literal["none", "cancel", "short-validity", "missing-personalisation"]
IdentificatieType = Literal["BSN", "KVK", "RSIN"]


@dataclass(frozen=True)
class Scenario:
    key: str
    description: str
    regie: Regie
    status: str  # the final status without interference …
    reden: str | None  # … and its reason
    local_part: str = "bezorgd"  # NotifyNL simulator rule of the recipient's address
    party: Party = "email"
    action: Action = "none"
    weight: int = 0  # share of the notifications in a mix, in percent


CATALOGUE = (
    Scenario("bezorgd", "delivered, settled after 7 days", "decentraal",
             "definitief-bezorgd", None),
    Scenario("vol-dan-bezorgd", "mailbox full, delivered on the resend", "decentraal",
             "definitief-bezorgd", None, local_part="tijdelijk-dan-bezorgd"),
    Scenario("callback-kwijt", "delivered, callback lost: reconciliation finds it",
             "decentraal", "definitief-bezorgd", None, local_part="verloren"),
    Scenario("bounce", "bounced (permanent failure)", "decentraal",
             "niet-bezorgbaar", "onbereikbaar", local_part="permanent"),
    Scenario("vol", "mailbox full on both attempts", "decentraal",
             "niet-bezorgbaar", "onbereikbaar", local_part="tijdelijk"),
    Scenario("technisch", "technical failure on both attempts", "decentraal",
             "technisch-mislukt", "technisch", local_part="technisch"),
    Scenario("stil", "never an outcome, NotifyNL's retention ends", "decentraal",
             "bezorgstatus-onbekend", None, local_part="stil"),
    Scenario("sjabloon-gewijzigd", "template edited after the intake: NotifyNL cannot render it",
             "decentraal", "technisch-mislukt", "technisch", local_part="sjabloon-gewijzigd"),
    Scenario("geannuleerd", "cancelled by the DV before the send (DELETE)", "decentraal",
             "geannuleerd", "geannuleerd", action="cancel"),
    # The same short geldigTot, passed (the demo's workers start after it) or not (the soak's
    # are running).
    Scenario("verlopen", "geldigTot passed before a worker took it", "decentraal",
             "verlopen", "verlopen", action="short-validity"),
    Scenario("kort-geldig", "a short geldigTot, sent before it passed", "decentraal",
             "definitief-bezorgd", None, action="short-validity"),
    # Never stored: the intake answers 422 ontbrekende-personalisatie (the template needs a
    # field the berichtgegevens lack); "geweigerd" is that answer, not a status.
    Scenario("zonder-personalisatie", "lacks the template's field: refused at intake (422)",
             "decentraal", "geweigerd", "ontbrekende-personalisatie",
             action="missing-personalisation"),
    Scenario("c-bezorgd", "address from the Profielservice, delivered", "centraal",
             "definitief-bezorgd", None),
    Scenario("c-vol-dan-bezorgd", "Profielservice address, full, delivered on the resend",
             "centraal", "definitief-bezorgd", None, local_part="tijdelijk-dan-bezorgd"),
    Scenario("c-bounce", "Profielservice address bounced, reported invalid there",
             "centraal", "niet-bezorgbaar", "onbereikbaar", local_part="permanent"),
    Scenario("c-onbekend", "party unknown at the Profielservice", "centraal",
             "niet-bezorgbaar", "geen-contactgegevens", party="unknown"),
    Scenario("c-geen-email", "party without an e-mail address", "centraal",
             "niet-bezorgbaar", "geen-contactgegevens", party="phone-only"),
)  # fmt: skip


def mix(weights: dict[str, int]) -> tuple[Scenario, ...]:
    """The scenarios named by key, in that order, each at its weight."""
    by_key = {s.key: s for s in CATALOGUE}
    return tuple(replace(by_key[key], weight=weight) for key, weight in weights.items())


def shares(count: int, scenarios: tuple[Scenario, ...], at_least: int = 1) -> dict[Scenario, int]:
    """`count` split over the scenarios by weight, at least `at_least` each; the rest (or the
    overshoot) goes to the largest."""
    total = sum(s.weight for s in scenarios)
    split = {s: max(at_least, round(count * s.weight / total)) for s in scenarios}
    largest = max(scenarios, key=lambda s: s.weight)
    split[largest] += count - sum(split.values())
    return split


def recipient(
    scenario: Scenario, address: str, numbers: Iterator[tuple[str, str]]
) -> tuple[dict[str, str], dict[str, Any] | None]:
    """The body fields that name the recipient, and the party to seed at the Profielservice
    (None when there is none to seed: a decentraal scenario, or a party unknown there).

    A decentraal notification carries `address`; a centraal one the next identifying number,
    and its party at the Profielservice has `address` (or only a phone number)."""
    if scenario.regie == "decentraal":
        return {"emailAdres": address}, None
    kind, number = next(numbers)
    fields = {"identificatieType": kind, "identificatieNummer": number}
    if scenario.party == "unknown":
        return fields, None
    contact = (
        {"type": "Email", "waarde": address, "isDefault": True}
        if scenario.party == "email"
        else {"type": "Telefoonnummer", "waarde": "0612345678", "isDefault": True}
    )
    party = {"identificatieType": kind, "identificatieNummer": number,
             "contactgegevens": [contact]}  # fmt: skip
    return fields, party


def identification_numbers(
    dice: random.Random, kinds: tuple[IdentificatieType, ...]
) -> Iterator[tuple[str, str]]:
    """Distinct fictitious numbers of the kinds in turn: BSN and RSIN passing the 11-proef,
    KVK of eight digits."""
    seen: set[str] = set()
    while True:
        for kind in kinds:
            while True:
                number = _kvk(dice) if kind == "KVK" else _elfproef(dice)
                if number and number not in seen:
                    seen.add(number)
                    yield kind, number
                    break


def dv_document(
    oin: str,
    naam: str,
    *,
    template_ids: tuple[str, str],
    quotum_per_minuut: int,
    quotum_per_dag: int,
    feed_aanroepen_per_minuut: int,
    max_cursorleeftijd: str = "30 days",
    beheerkanaal: str | None = None,
) -> dict[str, Any]:
    """A DV that sends both berichttypen of the mixes, as `nmc admin dv apply` takes it
    (README: the DV document): herinnering (both regies) and besluit (centraal only, on a
    NotifyNL service of its own: its own key and budget; herinnering uses `standaard`)."""
    herinnering, besluit = template_ids
    document: dict[str, Any] = {
        "oin": oin,
        "naam": naam,
        "quotumPerMinuut": quotum_per_minuut,
        "quotumPerDag": quotum_per_dag,
        "bevestigingstermijn": "7 days",
        "maxCursorleeftijd": max_cursorleeftijd,
    }
    if beheerkanaal is not None:
        document["beheerkanaal"] = beheerkanaal
    document |= {
        "feedMaxPagina": 1000,
        "feedAanroepenPerMinuut": feed_aanroepen_per_minuut,
        "actief": True,
        "berichttypen": [
            {
                "code": "herinnering",
                "notifynlTemplateId": herinnering,
                "regie": ["decentraal", "centraal"],
                "geldigheidStandaard": "3 days",
                "geldigheidMax": "30 days",
            },
            {
                "code": "besluit",
                "notifynlTemplateId": besluit,
                "notifyService": "besluiten",
                "regie": ["centraal"],
                "geldigheidStandaard": "14 days",
                "geldigheidMax": "30 days",
            },
        ],
    }
    return document


def rfc3339(moment: datetime) -> str:
    """A geldigTot as the API takes it: UTC, whole seconds."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _elfproef(dice: random.Random) -> str | None:
    digits = [dice.randrange(10) for _ in range(8)]
    digits[0] = dice.randrange(1, 10)
    check = sum(d * w for d, w in zip(digits, range(9, 1, -1), strict=True)) % 11
    return None if check == 10 else "".join(map(str, digits)) + str(check)


def _kvk(dice: random.Random) -> str:
    return str(dice.randrange(10**7, 10**8))
