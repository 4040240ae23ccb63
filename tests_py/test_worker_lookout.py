"""The worker's look for work (nmc.worker.loop.Lookout): a kind whose round found less than a
batch waits until one look (nmc.soorten_met_werk, once per poll interval for every waiting
kind) says it has work, and then runs its round; an idle worker makes that one query per
interval instead of a claim per kind. No database: the kinds are stand-ins that count their
rounds, the database a stand-in that answers the look from a set the test changes."""

import asyncio
import itertools
import re
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import psycopg
import pytest

from nmc.worker import loop
from nmc.worker.config import WorkerConfig
from nmc.worker.loop import Kind, Worker

INTERVAL = 0.02


class Looks:
    """The stand-in database: the look's answer is `due` (kinds with work) of those asked."""

    def __init__(self) -> None:
        self.due: set[str] = set()
        self.asked: list[list[str]] = []
        self.fail = False

    async def fetch_value(self, name: str, params: dict):
        assert name == "soorten_met_werk"
        self.asked.append(sorted(params["soorten"]))
        if self.fail:
            raise psycopg.OperationalError("the database is away")
        return sorted(self.due & set(params["soorten"]))


def worker_with(soorten: list[str], looks: Looks, batch: int = 20) -> tuple[Worker, dict]:
    config = WorkerConfig(
        database_url="postgresql://unused",
        notifynl_url="http://unused",
        notifynl_api_key="unused",
        profielservice_url=None,
        ldv_url=None,
        ldv_file=Path("/dev/null"),
        batch=batch,
        poll_interval=INTERVAL,
    )
    ctx = SimpleNamespace(
        db=looks, webhook=None, eigenaar="test", notifynl=SimpleNamespace(services=())
    )
    worker = Worker(config, ctx)
    rounds = dict.fromkeys(soorten, 0)

    def process_for(soort: str):
        async def process(ctx, batch: int) -> int:
            rounds[soort] += 1
            looks.due.discard(soort)  # the round took the work there was
            return 0

        return process

    def claim_for(soort: str):
        async def claim(ctx, batch: int) -> list:
            rounds[soort] += 1
            looks.due.discard(soort)
            return []

        return claim

    worker.kinds = {
        soort: (
            Kind(soort, claim=claim_for(soort), handle=None)
            if soort == "verzenden"
            else Kind(soort, process=process_for(soort))
        )
        for soort in soorten
    }
    return worker, rounds


async def running(worker: Worker, body) -> None:
    task = asyncio.create_task(worker.run())
    try:
        await body()
    finally:
        worker.stop()
        await asyncio.wait_for(task, timeout=2)


async def intervals(n: float) -> None:
    await asyncio.sleep(n * INTERVAL)


def test_an_idle_worker_looks_once_per_interval_and_claims_nothing():
    looks = Looks()
    worker, rounds = worker_with(["verzenden", "receipt", "wissen"], looks)

    async def body():
        await intervals(10)

    asyncio.run(running(worker, body))
    # One round each at the start, then only looks: one query for all three kinds.
    assert rounds == {"verzenden": 1, "receipt": 1, "wissen": 1}
    assert 5 <= len(looks.asked) <= 11
    assert all(asked == ["receipt", "verzenden", "wissen"] for asked in looks.asked)


def test_a_kind_with_work_runs_its_round_at_the_next_look_and_only_it():
    looks = Looks()
    worker, rounds = worker_with(["verzenden", "receipt", "wissen"], looks)

    async def body():
        await intervals(3)
        looks.due.add("receipt")
        await intervals(3)
        assert rounds == {"verzenden": 1, "receipt": 2, "wissen": 1}
        looks.due.update(("verzenden", "wissen"))
        await intervals(3)
        assert rounds == {"verzenden": 2, "receipt": 2, "wissen": 2}

    asyncio.run(running(worker, body))


def test_a_full_batch_goes_on_at_once_without_a_look():
    looks = Looks()
    worker, _ = worker_with(["wissen"], looks, batch=5)
    results = iter([5, 5, 5, 0])
    rounds = []

    async def process(ctx, batch: int) -> int:
        rounds.append(len(looks.asked))
        return next(results, 0)

    worker.kinds = {"wissen": Kind("wissen", process=process)}

    async def body():
        await intervals(3)

    asyncio.run(running(worker, body))
    assert rounds[:4] == [0, 0, 0, 0], "the rounds after a full batch did not wait for a look"


SQL_ROOT = Path(__file__).resolve().parents[1] / "functions"


@pytest.mark.parametrize(
    ("soort", "functie", "bestand"),
    [
        ("receipt", "process_receipts_v2", "receipt/process_receipts.sql"),
        ("vaststellen", "process_vaststellingen_v2", "vaststellen/process_vaststellingen.sql"),
        ("wissen", "process_wissen", "privacy/wissen.sql"),
    ],
)
def test_a_set_kind_works_its_sql_functions_own_batch_whatever_the_claim_batch(
    soort, functie, bestand
):
    # A round of these is one set statement per step: its cost hardly grows with the batch,
    # so they take the batch their function was built for, not a claim's --batch.
    text = (SQL_ROOT / bestand).read_text()
    default = re.search(rf"FUNCTION nmc\.{functie}\(p_batch integer DEFAULT (\d+)\)", text).group(1)
    assert loop.kinds()[soort].batch == int(default)

    looks = Looks()
    worker, _ = worker_with([soort], looks, batch=5)
    asked = []

    async def process(ctx, batch: int) -> int:
        asked.append(batch)
        return 0

    worker.kinds = {soort: replace(loop.kinds()[soort], process=process)}

    async def body():
        await intervals(2)

    asyncio.run(running(worker, body))
    assert asked and set(asked) == {int(default)}


@pytest.mark.parametrize("wacht", [True, False])
def test_a_claim_that_got_less_than_asked_waits_for_the_pace_or_the_next_look(wacht, monkeypatch):
    # A claim that got less than it asked found all there was to claim now (fewer tokens
    # than asked, or less due): claimed again at once it took the token or two that came
    # meanwhile, or none, at the cost of a whole claim. Reconciliation (short_claim_waits)
    # lets its burst refill (PACE_REFILL_S) and claims again; sends wait for the next look.
    monkeypatch.setattr(loop, "PACE_REFILL_S", 3 * INTERVAL)
    looks = Looks()
    worker, _ = worker_with(["verzenden"], looks, batch=5)
    results = iter([5, 5, 2, 1, 5])
    rounds = []

    async def claim(ctx, batch: int) -> list:
        rounds.append((len(looks.asked), time.monotonic()))
        looks.due.add("verzenden")  # work stays due: the pace held it back
        return [object()] * next(results, 0)

    async def handle(ctx, taak) -> str:
        return "verzonden"

    worker.kinds = {
        "verzenden": Kind("verzenden", claim=claim, handle=handle, short_claim_waits=wacht)
    }

    async def body():
        await intervals(14)

    asyncio.run(running(worker, body))
    looked = [seen for seen, _ in rounds]
    gaps = [later - earlier for (_, earlier), (_, later) in itertools.pairwise(rounds)]
    assert looked[:3] == [0, 0, 0], "full claims go on at once"
    if wacht:
        assert min(gaps[2:4]) >= 3 * INTERVAL, "the claims after a short one let the pace refill"
        assert looked[3:5] == [0, 0], "and then claim again without a look"
    else:
        assert looked[3] >= 1, "a short claim waits for the next look"
        assert looked[4] > looked[3], "and so does the next short one"


def test_only_reconciliation_waits_after_a_short_claim():
    assert [soort for soort, kind in loop.kinds().items() if kind.short_claim_waits] == [
        "reconciliëren"
    ]


def test_a_failed_look_wakes_every_waiting_kind():
    looks = Looks()
    worker, rounds = worker_with(["verzenden", "wissen"], looks)

    async def body():
        await intervals(3)
        looks.fail = True
        await intervals(3)

    asyncio.run(running(worker, body))
    # Each kind then runs its own round (which meets and logs the failure itself).
    assert rounds["verzenden"] >= 2 and rounds["wissen"] >= 2


def test_a_kind_without_work_still_runs_a_round_now_and_then(monkeypatch):
    # Its upkeep (ensure_controle, ensure_onderhoud ...: once a minute) plans tasks the look
    # cannot see before they exist.
    monkeypatch.setattr(loop, "ROUND_AT_LEAST_EVERY_S", 4 * INTERVAL)
    monkeypatch.setattr(loop.Lookout.wait, "__defaults__", (4 * INTERVAL,))
    looks = Looks()
    worker, rounds = worker_with(["controle"], looks)

    async def body():
        await intervals(13)

    asyncio.run(running(worker, body))
    assert 3 <= rounds["controle"] <= 5


def test_a_stop_ends_the_wait_at_once():
    looks = Looks()
    worker, _ = worker_with(["verzenden", "wissen"], looks)
    worker.lookout._base_interval = 60.0  # no look would come in the test's time

    async def body():
        await intervals(2)

    started = asyncio.run(asyncio.wait_for(_timed(running(worker, body)), timeout=5))
    assert started < 1.0


async def _timed(coroutine) -> float:
    loop_ = asyncio.get_running_loop()
    begin = loop_.time()
    await coroutine
    return loop_.time() - begin


# --------------------------------------------------------------------------------------------
# The idle pace with the API's hints (nmc.worker.werk_hints)


def idle_worker(monkeypatch, looks: Looks, hears_hints: bool, factor: int = 4):
    monkeypatch.setattr(loop, "IDLE_AFTER_S", 3 * INTERVAL)
    monkeypatch.setattr(loop, "IDLE_FACTOR", factor)
    worker, rounds = worker_with(["verzenden", "wissen"], looks)
    worker.lookout.hints_live = lambda: hears_hints
    return worker, rounds


@pytest.mark.parametrize("hears_hints", [True, False])
def test_an_idle_worker_that_hears_the_hints_looks_a_quarter_as_often(monkeypatch, hears_hints):
    looks = Looks()
    worker, _ = idle_worker(monkeypatch, looks, hears_hints)

    counted = []

    async def body():
        await intervals(3)  # not idle yet
        before = len(looks.asked)
        await intervals(40)
        counted.append(len(looks.asked) - before)

    asyncio.run(running(worker, body))
    [looked] = counted
    if hears_hints:
        assert 5 <= looked <= 14, f"{looked} looks in 40 idle intervals: not a quarter's pace"
    else:
        assert looked >= 25, f"{looked} looks in 40 intervals: without hints the pace stays"


def test_a_hint_makes_an_idle_worker_look_at_once_and_restores_the_pace(monkeypatch):
    looks = Looks()
    worker, rounds = idle_worker(monkeypatch, looks, hears_hints=True, factor=1000)

    async def body():
        await intervals(6)
        assert worker.lookout.idle
        looks.due.add("wissen")
        await intervals(3)
        assert rounds["wissen"] == 1, "without a hint no look comes at the idle pace"
        worker.lookout.hint()
        await intervals(1)
        assert rounds["wissen"] == 2, "the hint's look found the work and woke the kind"
        assert not worker.lookout.idle, "hinted: the full pace again"
        seen = len(looks.asked)
        await intervals(2)
        assert len(looks.asked) > seen, "looks go on at the full pace"

    asyncio.run(running(worker, body))


def test_a_hint_to_a_busy_lookout_adds_no_look(monkeypatch):
    # Looking at every hint under load made the rounds smaller and more, for no better pickup.
    looks = Looks()
    worker, _ = idle_worker(monkeypatch, looks, hears_hints=True)
    worker.lookout.hint()
    assert not worker.lookout._wake.is_set()


def test_the_upkeep_kinds_rounds_do_not_keep_the_full_pace(monkeypatch):
    # The watchdog, maintenance, reports and a webhook's minute upkeep are periodic: were
    # they work, an idle worker would never slow down.
    monkeypatch.setattr(loop, "IDLE_AFTER_S", 3 * INTERVAL)
    looks = Looks()
    worker, _ = worker_with(["controle"], looks)
    worker.lookout.hints_live = lambda: True

    async def process(ctx, batch: int) -> int:
        return 1  # the watchdog's round: one run, less than its batch (then it waits)

    worker.kinds = {"controle": Kind("controle", process=process, batch=2, upkeep=True)}
    assert {s for s, k in loop.kinds().items() if k.upkeep} == {
        "controle",
        "onderhoud",
        "beheerrapport",
        "terugkoppelen",
    }

    looks.due.add("controle")  # due at every look: a round every interval

    async def body():
        await intervals(8)
        assert worker.lookout.idle

    asyncio.run(running(worker, body))


def test_after_a_hint_the_next_look_comes_at_a_random_point_of_the_interval():
    # A hint wakes every idle worker at once; in step, two workers' looks were one look per
    # interval for the kinds they share.
    phases = iter([0.25, 0.75])
    first, second = (
        loop.Lookout(Looks(), 0.5, asyncio.Event(), phase=lambda: next(phases)) for _ in range(2)
    )
    assert (first.next_wait(hinted=True), second.next_wait(hinted=True)) == (0.125, 0.375)
    assert first.next_wait(hinted=False) == 0.5, "after a timed look: the interval"
