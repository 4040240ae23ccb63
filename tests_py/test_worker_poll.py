"""The worker's idle wait per kind (nmc.worker.loop): an empty round doubles the wait before
that kind's next round, from the poll interval up to the cap; a round with work brings it back
to the poll interval. No database: the kinds are stand-ins that return a script of results."""

import asyncio
from pathlib import Path
from types import SimpleNamespace

from nmc.worker.config import WorkerConfig
from nmc.worker.loop import Kind, Worker


def config(**overrides) -> WorkerConfig:
    return WorkerConfig(
        database_url="postgresql://unused",
        notifynl_url="http://unused",
        notifynl_api_key="unused",
        profielservice_url=None,
        ldv_url=None,
        ldv_file=Path("/dev/null"),
        batch=20,
        **({"poll_interval": 0.5} | overrides),
    )


def waits_for(
    kind_results: list, *, claim: bool, backs_off: bool = True, **overrides
) -> list[float]:
    """The waits a worker takes while one kind's rounds return `kind_results` in turn."""
    ctx = SimpleNamespace(webhook=None, eigenaar="test", notifynl=SimpleNamespace(services=()))
    worker = Worker(config(**overrides), ctx)
    results = iter(kind_results)
    waits: list[float] = []

    def next_result():
        result = next(results, None)
        if result is None:
            worker.stop()
            return [] if claim else 0
        return result

    async def process(ctx, batch: int) -> int:
        return next_result()

    async def claim_tasks(ctx, batch: int) -> list:
        return next_result()

    async def handle(ctx, taak) -> str:
        return "klaar"

    async def idle(seconds: float) -> None:
        if not worker._stopping.is_set():  # not the wait after the script ran out
            waits.append(seconds)

    worker._idle = idle
    kind = (
        Kind("verzenden", claim=claim_tasks, handle=handle, backs_off=backs_off)
        if claim
        else Kind("wissen", process=process, backs_off=backs_off)
    )
    worker.kinds = {kind.soort: kind}
    asyncio.run(worker.run())
    return waits


def test_empty_rounds_back_off_to_the_cap_and_work_resets():
    waits = waits_for([0, 0, 0, 0, 0, 3, 0, 0], claim=False, poll_max_interval=4.0)
    assert waits == [0.5, 1.0, 2.0, 4.0, 4.0, 0.5, 0.5, 1.0]


def test_a_full_batch_goes_on_without_a_wait():
    waits = waits_for([0, 0, 20, 0], claim=False, poll_max_interval=4.0)
    assert waits == [0.5, 1.0, 0.5]  # the full batch (20) is followed by a round at once


def test_claim_loops_back_off_too():
    waits = waits_for([[], [], [], ["taak"], [], []], claim=True, poll_max_interval=1.5)
    assert waits == [0.5, 1.0, 1.5, 0.5, 1.0]


def test_the_cap_equal_to_the_interval_is_the_old_fixed_poll():
    waits = waits_for([0, 0, 0, 0], claim=False, poll_max_interval=0.5)
    assert waits == [0.5, 0.5, 0.5, 0.5]


def test_sends_keep_the_fixed_poll():
    # A send's pickup latency is what a DV waits for: verzenden does not back off (the
    # lifecycle benchmark's pickup p50 grew by a quarter when it did).
    worker = Worker(config(), SimpleNamespace(webhook=None))
    assert worker.kinds["verzenden"].backs_off is False
    assert all(kind.backs_off for soort, kind in worker.kinds.items() if soort != "verzenden")


def test_a_kind_that_does_not_back_off_polls_at_the_interval():
    waits = waits_for(
        [[], [], [], ["taak"], []], claim=True, poll_max_interval=4.0, backs_off=False
    )
    assert waits == [0.5, 0.5, 0.5, 0.5]


def test_the_cap_follows_a_fast_poll():
    # A test's worker polls every 20 ms: unless it says otherwise, its cap is 8 x that.
    waits = waits_for([0, 0, 0, 0, 0], claim=False, poll_interval=0.02)
    assert [round(w, 3) for w in waits] == [0.02, 0.04, 0.08, 0.16, 0.16]
