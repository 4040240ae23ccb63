"""Erasure tasks (`wissen`): the wrapped data key of a notification terminal for the erase
term is destroyed, in SQL only (nmc.process_wissen); nothing is called outside."""

from nmc.worker.context import Context

SOORT = "wissen"
# A round's batch: nmc.process_wissen's own (nmc.worker.loop.Kind.batch).
BATCH = 500


async def process(ctx: Context, batch: int) -> int:
    """How many notifications were erased."""
    return await ctx.db.fetch_value("process_wissen", {"batch": batch})
