"""The scenarios the demo and the soak send (nmc_dev.scenarios): every one leads where it says,
and every notification of both mixes is one the API takes."""

import random
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from nmc.api.validation import validate_centraal, validate_decentraal
from nmc_dev import scenarios
from nmc_dev.demo import scenario as demo
from nmc_dev.sim import notifynl
from nmc_dev.soak import workload

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BY_KEY = {s.key: s for s in scenarios.CATALOGUE}


def test_every_local_part_is_a_rule_of_the_notifynl_simulator():
    rules = set(notifynl.OUTCOMES) | {"tijdelijk-dan-bezorgd"} | set(notifynl.LOCAL_PART_REFUSALS)
    assert {s.local_part for s in scenarios.CATALOGUE} <= rules


def test_the_demo_shows_a_template_edited_after_the_intake():
    """One notification whose template changed after the intake: NotifyNL (the simulator's
    `sjabloon-gewijzigd` rule) answers Missing personalisation, and it ends technisch-mislukt."""
    edited = BY_KEY["sjabloon-gewijzigd"]
    assert (edited.status, edited.reden) == ("technisch-mislukt", "technisch")
    assert edited in {replace(s, weight=0) for s in demo.SCENARIOS}
    refusal = notifynl.LOCAL_PART_REFUSALS[edited.local_part]
    assert notifynl.REFUSALS[refusal.soort][1:] == (
        "BadRequestError",
        "Missing personalisation: {velden}",
    )
    plan = demo.build_plan(40, "abc123", now=NOW)
    assert sum(n.scenario.key == "sjabloon-gewijzigd" for n in plan.notificaties) == 1


def test_a_mix_keeps_the_order_and_weights_it_is_given():
    mixed = scenarios.mix({"stil": 5, "bezorgd": 7})
    assert [(s.key, s.weight) for s in mixed] == [("stil", 5), ("bezorgd", 7)]
    assert mixed[0] == replace(BY_KEY["stil"], weight=5)
    with pytest.raises(KeyError):
        scenarios.mix({"onbekend": 1})


@pytest.mark.parametrize(
    ("mix", "count", "at_least"),
    [(demo.SCENARIOS, demo.MIN_COUNT, 1), (demo.SCENARIOS, 137, 1), (workload.SCENARIOS, 600, 3)],
)
def test_shares_add_up_with_at_least_the_minimum_each(mix, count, at_least):
    split = scenarios.shares(count, mix, at_least)
    assert sum(split.values()) == count
    assert min(split.values()) >= at_least
    assert max(split, key=split.get) == max(mix, key=lambda s: s.weight)


def test_the_recipient_of_each_kind_of_scenario():
    numbers = iter([("KVK", "12345678")] * 3)
    address = "permanent+x@voorbeeld.nl"
    assert scenarios.recipient(BY_KEY["bounce"], address, numbers) == (
        {"emailAdres": address},
        None,
    )
    fields, party = scenarios.recipient(BY_KEY["c-bounce"], address, numbers)
    assert fields == {"identificatieType": "KVK", "identificatieNummer": "12345678"}
    assert party["contactgegevens"] == [{"type": "Email", "waarde": address, "isDefault": True}]
    assert scenarios.recipient(BY_KEY["c-onbekend"], address, numbers)[1] is None
    _, phone_only = scenarios.recipient(BY_KEY["c-geen-email"], address, numbers)
    assert address not in str(phone_only)


def test_identification_numbers_are_distinct_and_of_their_kind():
    dice = random.Random(1)  # noqa: S311 - test data, not secrets
    numbers = scenarios.identification_numbers(dice, ("BSN", "KVK", "RSIN"))
    drawn = [next(numbers) for _ in range(300)]
    assert [kind for kind, _ in drawn[:3]] == ["BSN", "KVK", "RSIN"]
    assert len({number for _, number in drawn}) == 300
    for kind, number in drawn:
        body = {"dvRef": "r", "berichtType": "besluit", "identificatieType": kind,
                "identificatieNummer": number}  # fmt: skip
        validate_centraal(body, now=NOW)


def test_every_notification_of_both_mixes_is_one_the_api_takes():
    plan = demo.build_plan(60, "abc123", now=NOW)
    work = workload.build(200, marker="zq1a2b3c4d")
    for job in work.batches():
        workload.set_short_validity(job, NOW)
    bodies = [(n.scenario.regie, n.body) for n in plan.notificaties]
    bodies += [(n.scenario.regie, n.body) for n in work.notificaties]
    for regie, body in bodies:
        validate = validate_decentraal if regie == "decentraal" else validate_centraal
        validate(body, now=NOW)
    assert {key for key, _ in plan.expected()} == {
        s.status for s in demo.SCENARIOS if s.action != "missing-personalisation"
    }, "every scenario ends in a status, but the one the intake refuses (it has none)"
