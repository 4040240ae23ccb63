"""Group commit for NotifyNL's callbacks.

Receipts that arrive while a store is under way go together into the next
`nmc.store_receipts_v2` call: one round trip and one commit for all of them, and each
callback is answered after that commit, exactly as if it had been stored alone. A lone
receipt is stored at once (no timer, no added latency); under load the batches grow by
themselves, which is what lets one API process keep up with NotifyNL's bursts. The
batching itself is nmc.runtime.group_commit's, shared with the worker.

A failed store fails every callback of its batch (503, so NotifyNL retries each one);
nothing is answered 200 before it is committed.

Callbacks refused with 401 are counted the same way (`count_refused`): one
`nmc.count_refused_callback` call adds up every refusal that arrived while the previous
count was written, so a flood of bad tokens costs one statement at a time, not one each.
"""

from typing import Any

from nmc import sql_calls
from nmc.api import db
from nmc.api.werk_melder import WerkMelder
from nmc.runtime.group_commit import GroupCommit

MAX_BATCH = 500  # well below the function's limit of 1000; bounds one transaction
MAX_IN_FLIGHT = 2  # stores under way at once: one waits on the database while one fills
MAX_REFUSALS = 1_000_000  # refusals one count may carry (the function's limit)

_COLUMNS = (
    "reference",
    "notifynl_id",
    "status",
    "completed_at",
    "sent_at",
    "template_id",
    "template_versie",
)


class ReceiptBatcher:
    def __init__(
        self,
        pool: db.Pool,
        *,
        max_batch: int = MAX_BATCH,
        max_in_flight: int = MAX_IN_FLIGHT,
        werk: WerkMelder | None = None,
    ):
        self._pool = pool
        self._werk = werk  # hinted after each stored batch: its receipts are the workers' work
        self._group: GroupCommit[dict[str, Any], str] = GroupCommit(
            self._store, max_batch=max_batch, max_in_flight=max_in_flight
        )
        # One count under way at a time: the refusals behind it go into the next one.
        self._refusals: GroupCommit[None, None] = GroupCommit(
            self._count_refusals, max_batch=MAX_REFUSALS, max_in_flight=1
        )

    async def store(self, receipt: dict[str, Any]) -> str:
        """Store one receipt (the parameters of nmc.store_receipts_v2, one item; the template
        members may be absent); returns its result:
        opgeslagen, dubbel or onbekende-reference. Raises what the store raised."""
        return await self._group.submit(receipt)

    async def _store(self, receipts: list[dict[str, Any]]) -> list[str]:
        params = {name: [receipt.get(name) for receipt in receipts] for name in _COLUMNS}
        rows = await sql_calls.fetch_all(self._pool, "store_receipts", params)
        if self._werk is not None:
            self._werk.meld()
        return [resultaat for _, resultaat in rows]

    async def count_refused(self) -> None:
        """Count one callback refused with 401; returns once the count that carried it is
        committed. Raises what the count raised."""
        await self._refusals.submit(None)

    async def _count_refusals(self, refusals: list[None]) -> list[None]:
        await sql_calls.fetch_one(self._pool, "count_refused_callback", {"aantal": len(refusals)})
        return [None] * len(refusals)
