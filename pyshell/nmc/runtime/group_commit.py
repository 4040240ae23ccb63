"""Group commit: one database call and one commit for whatever arrived while the last was
under way.

A caller submits one item and waits for its own result. A lone item is flushed at once (no
timer, no added latency); items that arrive while a flush is in progress wait and go
together into the next one, so under load the batches grow by themselves and the cost of a
round trip and a commit (an fsync) is shared. Each caller's result is only given out after
the call that carried its item has returned, i.e. after its commit.

`flush` gets the batch in arrival order and returns one result per item, in that order; a
result that is an exception instance is raised to that item's caller alone (an item the
database refused while the others committed). When `flush` itself raises, every caller of
that batch gets the exception: nothing of it is reported as done.

Used by the API for NotifyNL's callbacks (nmc.api.receipt_batcher) and by the worker for
lease extensions and send outcomes (nmc.worker.context, nmc.worker.verzenden).
"""

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

Flush = Callable[[list[T]], Awaitable[Sequence[R | BaseException]]]


class GroupCommit(Generic[T, R]):
    def __init__(self, flush: Flush, *, max_batch: int, max_in_flight: int) -> None:
        """`max_batch` bounds one call (one transaction); `max_in_flight` is how many calls
        may be under way at once (2: one waits on the database while the next fills)."""
        if max_batch < 1 or max_in_flight < 1:
            raise ValueError("max_batch and max_in_flight must be at least 1")
        self._flush = flush
        self._max_batch = max_batch
        self._max_in_flight = max_in_flight
        self._waiting: list[tuple[T, asyncio.Future[R]]] = []
        self._in_flight = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(self, item: T) -> R:
        """Hand in one item; returns its result once the call that carried it has returned.
        Raises the item's own exception, or the call's when the whole call failed."""
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, future))
        if self._in_flight < self._max_in_flight:
            self._in_flight += 1
            task = asyncio.create_task(self._drain())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await future

    async def _drain(self) -> None:
        try:
            while self._waiting:
                batch = self._waiting[: self._max_batch]
                del self._waiting[: len(batch)]
                await self._run(batch)
        finally:
            self._in_flight -= 1

    async def _run(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        try:
            results = await self._flush([item for item, _ in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"flush returned {len(results)} results for {len(batch)} items")
        except Exception as error:
            for _, future in batch:
                if not future.done():  # a caller that went away cancelled its future
                    future.set_exception(error)
            return
        except BaseException:  # the flush itself was cancelled (shutdown): so are its callers
            for _, future in batch:
                future.cancel()
            raise
        for (_, future), result in zip(batch, results, strict=True):
            if future.done():
                continue
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)
