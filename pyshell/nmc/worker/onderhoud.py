"""Maintenance (`onderhoud`): the next event partition before the current one is full,
dropping partitions the retention and the live cursors allow, and one small retention
batch. All rules are in SQL (functions/onderhoud, functions/privacy/retentie.sql); each
round is a few short transactions."""

from nmc.worker.context import Context

SOORT = "onderhoud"


async def process(ctx: Context, batch: int) -> int:
    """How many rows the retention batch removed (a full batch means: call again)."""
    await ctx.db.value("maintain_event_partities")
    await ctx.db.value("drop_event_partities")
    removed = await ctx.db.value("delete_expired", batch=batch)
    return sum(int(removed.get(naam, 0)) for naam in ("notificaties", "taken", "beheeracties"))
