"""The watchdog (`controle`): one task row, claimed like any other, that nmc.run_controle
runs and reopens for its next round. nmc.ensure_controle makes sure the row exists: at the
first round and then once a minute (in case an operator closed it or it failed)."""

import time

from nmc.worker.claims import Taak
from nmc.worker.context import Context, settle

SOORT = "controle"
ENSURE_EVERY_S = 60.0


class Controle:
    def __init__(self) -> None:
        self._ensured_at = float("-inf")

    async def process(self, ctx: Context, batch: int) -> int:
        """Run the watchdog if its round is due; returns 1 when it ran, else 0."""
        now = time.monotonic()
        if now - self._ensured_at >= ENSURE_EVERY_S:
            await ctx.db.fetch_all("ensure_controle")
            self._ensured_at = now
        claimed = await ctx.db.fetch_all(
            "claim_taken", {"soort": SOORT, "eigenaar": ctx.eigenaar, "batch": 1}, row_type=Taak
        )
        for taak in claimed:
            await settle(ctx, SOORT, taak.taak_id, taak.claim_epoch, _run(ctx, taak))
        return len(claimed)


async def _run(ctx: Context, taak: Taak) -> str:
    gepland = await ctx.db.fetch_value(
        "run_controle", {"taak_id": taak.taak_id, "claim_epoch": taak.claim_epoch}
    )
    return f"{gepland}-gepland"
