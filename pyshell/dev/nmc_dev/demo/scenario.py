"""What the demo sends, and the final status each notification should reach.

The demo's mix of the scenarios in nmc_dev.scenarios (each a recipient the simulators treat in
a known way, or a DV action); the demo compares what the feed says with `expected`.
"""

import random
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from nmc_dev import scenarios
from nmc_dev.scenarios import Action, Scenario

DEMO_OIN = "00000001823288444000"
DEMO_NAAM = "Gemeente Voorbeeld"
DOMAIN = "demo.voorbeeld.nl"
MIN_COUNT = 30
BATCH_SIZE = 25
SINGLE_SHARE = 0.3  # of the main wave, submitted one by one; the rest in batches
SHORT_VALIDITY = timedelta(minutes=30)  # geldigTot of the `verlopen` scenario
# The demo's mix, in percent. The cancelled and the short-lived ones go in before any worker
# runs (nmc_dev.demo.run), so they end as geannuleerd and verlopen.
SCENARIOS = scenarios.mix({
    "bezorgd": 25, "vol-dan-bezorgd": 6, "callback-kwijt": 6, "bounce": 6, "vol": 4,
    "technisch": 3, "sjabloon-gewijzigd": 2, "stil": 3, "c-bezorgd": 16, "c-vol-dan-bezorgd": 6,
    "c-bounce": 4,
    "c-onbekend": 6, "c-geen-email": 3, "geannuleerd": 4, "verlopen": 5,
    "zonder-personalisatie": 1,
})  # fmt: skip
# The placeholder the demo's NotifyNL templates ask for (set in the simulator before the
# onboarding reads them); the `zonder-personalisatie` scenario leaves it out.
TEMPLATE_FIELD = "zaak"
TEMPLATE_SUBJECT = f"Nieuws over uw zaak (({TEMPLATE_FIELD}))"
TEMPLATE_BODY = f"Beste ontvanger,\n\nEr is nieuws over uw zaak (({TEMPLATE_FIELD}))."


@dataclass
class Notificatie:
    scenario: Scenario
    body: dict[str, Any]
    id: str | None = None  # the NMC's notificatieId, after intake
    refusal: tuple[str, str | None] | None = None  # ("geweigerd", problem slug): not taken


@dataclass
class Plan:
    notificaties: list[Notificatie]
    parties: list[dict[str, Any]] = field(default_factory=list)  # for the Profielservice

    def with_action(self, action: Action) -> list[Notificatie]:
        return [n for n in self.notificaties if n.scenario.action == action]

    def expected(self) -> dict[tuple[str, str | None], int]:
        """The final statuses the feed should show (a notification refused at intake has
        none)."""
        counts: dict[tuple[str, str | None], int] = {}
        for n in self.notificaties:
            if n.scenario.action == "missing-personalisation":
                continue
            key = (n.scenario.status, n.scenario.reden)
            counts[key] = counts.get(key, 0) + 1
        return counts


def build_plan(count: int, run_id: str, *, now: datetime, seed: int = 8) -> Plan:
    """The notifications of one run (dvRefs unique per run), and the parties to seed."""
    if count < MIN_COUNT:
        raise ValueError(f"--count must be at least {MIN_COUNT}")
    dice = random.Random(seed)  # noqa: S311 - test data, not secrets
    numbers = scenarios.identification_numbers(dice, ("BSN", "KVK"))
    plan = Plan([])
    serial = 0
    for scenario, amount in scenarios.shares(count, SCENARIOS).items():
        for _ in range(amount):
            serial += 1
            address = f"{scenario.local_part}+{run_id}n{serial:04d}@{DOMAIN}"
            body: dict[str, Any] = {
                "dvRef": f"demo-{run_id}-{serial:04d}",
                "berichtType": "herinnering" if scenario.regie == "decentraal" else "besluit",
                "berichtgegevens": {TEMPLATE_FIELD: f"Z-{serial:04d}"},
            }
            if scenario.action == "missing-personalisation":
                body["berichtgegevens"] = {"kenmerk": f"K-{serial:04d}"}
            fields, party = scenarios.recipient(scenario, address, numbers)
            body.update(fields)
            if party:
                plan.parties.append(party)
            if scenario.action == "short-validity":
                body["geldigTot"] = scenarios.rfc3339(now + SHORT_VALIDITY)
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
    return scenarios.dv_document(
        DEMO_OIN,
        DEMO_NAAM,
        template_ids=(
            "a0a0a0a0-0000-4000-8000-000000000001",
            "a0a0a0a0-0000-4000-8000-000000000002",
        ),
        quotum_per_minuut=6000,
        quotum_per_dag=1000000,
        feed_aanroepen_per_minuut=1200,
        beheerkanaal="mailto:beheer@voorbeeld.nl",
    )


def new_run_id() -> str:
    return uuid.uuid4().hex[:6]
