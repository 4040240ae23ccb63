"""Settlement tasks (`vaststellen`): bezorgd -> definitief-bezorgd when due, in SQL only
(nmc.process_vaststellingen); NotifyNL is asked nothing."""

from nmc.worker.context import Context

SOORT = "vaststellen"


async def process(ctx: Context, batch: int) -> int:
    """How many notificaties were settled (tasks closed without a transition not counted)."""
    return await ctx.db.fetch_value("process_vaststellingen", {"batch": batch})
