"""Settlement tasks (`vaststellen`): bezorgd -> definitief-bezorgd when due, in SQL only
(nmc.process_vaststellingen_v2); NotifyNL is asked nothing."""

from nmc.tracing import worker as tracing
from nmc.worker.context import Context

SOORT = "vaststellen"
# A round's batch: nmc.process_vaststellingen_v2's own (nmc.worker.loop.Kind.batch).
BATCH = 100


async def process(ctx: Context, batch: int) -> int:
    """How many notificaties were settled (tasks closed without a transition not counted)."""
    started = tracing.clock()
    rows = await ctx.db.fetch_all("process_vaststellingen", {"batch": batch})
    await tracing.record_round(ctx.db, SOORT, started, [row.notificatie_id for row in rows])
    return len(rows)
