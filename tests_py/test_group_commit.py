"""nmc.runtime.group_commit without a database: what arrives during a flush goes together into the
next one, each caller gets its own result or its own exception, a failed flush fails its
whole batch (and only that batch), and nobody's result is given out before its flush ends."""

import asyncio

import pytest

from nmc.runtime.group_commit import GroupCommit


class Recorder:
    """A flush that records its batches and waits for `release` before it returns."""

    def __init__(self, fail_on: set | None = None, refuse: set | None = None) -> None:
        self.batches: list[list] = []
        self.release = asyncio.Event()
        self.fail_on = fail_on or set()
        self.refuse = refuse or set()

    async def __call__(self, items: list) -> list:
        self.batches.append(list(items))
        await self.release.wait()
        if self.fail_on & set(items):
            raise RuntimeError("the whole call failed")
        return [ValueError(i) if i in self.refuse else i * 10 for i in items]


async def test_items_that_arrive_during_a_flush_share_the_next_one():
    flush = Recorder()
    group = GroupCommit(flush, max_batch=100, max_in_flight=1)
    first = asyncio.create_task(group.submit(1))
    await asyncio.sleep(0)
    rest = [asyncio.create_task(group.submit(n)) for n in range(2, 7)]
    await asyncio.sleep(0.01)
    assert flush.batches == [[1]], "a lone item goes at once; the others wait for it"
    assert not first.done(), "no result before its flush has returned"
    flush.release.set()
    assert await first == 10
    assert await asyncio.gather(*rest) == [20, 30, 40, 50, 60]
    assert flush.batches == [[1], [2, 3, 4, 5, 6]]


async def test_two_in_flight_and_the_batch_limit():
    flush = Recorder()
    group = GroupCommit(flush, max_batch=2, max_in_flight=2)
    calls = [asyncio.create_task(group.submit(n)) for n in range(1, 8)]
    await asyncio.sleep(0.01)
    assert len(flush.batches) == 2, "two flushes under way at once"
    flush.release.set()
    assert await asyncio.gather(*calls) == [10, 20, 30, 40, 50, 60, 70]
    assert max(len(b) for b in flush.batches) <= 2
    assert sorted(i for b in flush.batches for i in b) == list(range(1, 8))


async def test_a_refused_item_fails_alone():
    flush = Recorder(refuse={3})
    flush.release.set()
    group = GroupCommit(flush, max_batch=100, max_in_flight=1)
    results = await asyncio.gather(*(group.submit(n) for n in range(1, 6)), return_exceptions=True)
    assert results[:2] == [10, 20] and results[3:] == [40, 50]
    assert isinstance(results[2], ValueError)


async def test_a_failed_flush_fails_its_batch_and_only_its_batch():
    flush = Recorder(fail_on={2})
    group = GroupCommit(flush, max_batch=100, max_in_flight=1)
    first = asyncio.create_task(group.submit(1))
    await asyncio.sleep(0)
    second = [asyncio.create_task(group.submit(n)) for n in (2, 3)]
    await asyncio.sleep(0)
    flush.release.set()
    assert await first == 10
    results = await asyncio.gather(*second, return_exceptions=True)
    assert [type(r) for r in results] == [RuntimeError, RuntimeError]
    assert await group.submit(4) == 40, "the group goes on after a failed flush"


async def test_a_flush_that_miscounts_fails_its_batch():
    async def short(items: list) -> list:
        return items[:-1]

    group = GroupCommit(short, max_batch=100, max_in_flight=1)
    with pytest.raises(RuntimeError, match=r"\d results for \d items"):
        await asyncio.gather(group.submit(1), group.submit(2))


async def test_a_caller_that_went_away_does_not_break_the_others():
    flush = Recorder()
    group = GroupCommit(flush, max_batch=100, max_in_flight=1)
    first = asyncio.create_task(group.submit(1))
    await asyncio.sleep(0)
    gone, kept = asyncio.create_task(group.submit(2)), asyncio.create_task(group.submit(3))
    await asyncio.sleep(0)
    gone.cancel()
    flush.release.set()
    assert await first == 10
    assert await kept == 30
    assert gone.cancelled()


def test_limits_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        GroupCommit(Recorder(), max_batch=1, max_in_flight=0)


async def test_a_cancelled_flush_cancels_its_callers():
    flush = Recorder()
    group = GroupCommit(flush, max_batch=100, max_in_flight=1)
    caller = asyncio.create_task(group.submit(1))
    await asyncio.sleep(0.01)
    for task in list(group._tasks):
        task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
