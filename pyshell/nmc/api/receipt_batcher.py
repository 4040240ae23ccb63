"""Group commit for NotifyNL's callbacks.

Receipts that arrive while a store is under way go together into the next
`nmc.store_receipts` call: one round trip and one commit for all of them, and each
callback is answered after that commit, exactly as if it had been stored alone. A lone
receipt is stored at once (no timer, no added latency); under load the batches grow by
themselves, which is what lets one API process keep up with NotifyNL's bursts.

A failed store fails every callback of its batch (503, so NotifyNL retries each one);
nothing is answered 200 before it is committed.
"""

import asyncio
from typing import Any

from nmc.api import db

MAX_BATCH = 500  # well below the function's limit of 1000; bounds one transaction
MAX_IN_FLIGHT = 2  # stores under way at once: one waits on the database while one fills

_COLUMNS = ("reference", "notifynl_id", "status", "completed_at", "sent_at")


class ReceiptBatcher:
    def __init__(
        self, pool: db.Pool, *, max_batch: int = MAX_BATCH, max_in_flight: int = MAX_IN_FLIGHT
    ):
        if max_batch < 1 or max_in_flight < 1:
            raise ValueError("max_batch and max_in_flight must be at least 1")
        self._pool = pool
        self._max_batch = max_batch
        self._max_in_flight = max_in_flight
        self._waiting: list[tuple[dict[str, Any], asyncio.Future[str]]] = []
        self._in_flight = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def store(self, receipt: dict[str, Any]) -> str:
        """Store one receipt (the parameters of nmc.store_receipt); returns its result:
        opgeslagen, dubbel or onbekende-reference. Raises what the store raised."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting.append((receipt, future))
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
                await self._store(batch)
        finally:
            self._in_flight -= 1

    async def _store(self, batch: list[tuple[dict[str, Any], asyncio.Future[str]]]) -> None:
        params = {name: [receipt[name] for receipt, _ in batch] for name in _COLUMNS}
        try:
            rows = await db.call_all(self._pool, "store_receipts", params)
        except Exception as error:
            for _, future in batch:
                if not future.done():  # a caller that went away cancelled its future
                    future.set_exception(error)
            return
        for (_, future), (_, resultaat) in zip(batch, rows, strict=True):
            if not future.done():
                future.set_result(resultaat)
