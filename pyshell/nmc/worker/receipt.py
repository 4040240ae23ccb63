"""Receipt tasks (`receipt`): judged entirely in SQL. One call of nmc.process_receipts
handles a batch in one transaction, fairly across DVs, oldest completed_at first."""

from nmc.worker.context import Context

SOORT = "receipt"


async def process(ctx: Context, batch: int) -> int:
    """How many receipt tasks were handled (a full batch means: call again at once)."""
    return await ctx.db.fetch_value("process_receipts", {"batch": batch})
