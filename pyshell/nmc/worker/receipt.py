"""Receipt tasks (`receipt`): judged entirely in SQL. One call of nmc.process_receipts_v2
handles a batch in one transaction, fairly across DVs, oldest completed_at first."""

from nmc.tracing import worker as tracing
from nmc.worker.context import Context

SOORT = "receipt"
# A round's batch: nmc.process_receipts_v2's own (nmc.worker.loop.Kind.batch).
BATCH = 50


async def process(ctx: Context, batch: int) -> int:
    """How many receipt tasks were handled (a full batch means: call again at once)."""
    started = tracing.clock()
    rows = await ctx.db.fetch_all("process_receipts", {"batch": batch})
    await tracing.record_round(ctx.db, SOORT, started, [row.notificatie_id for row in rows])
    return len(rows)
