"""Invalid-report tasks (`ongeldig-melden`): report the address a permanent failure bounced on
to the Profielservice (centraal regie). The identifying number is decrypted only here.

Erased data (no wrapped key) or no contactgegeven id: nothing to report, the task ends.
200/204 (also a repeat) and 404 (gone) end the task; outages defer it.
"""

from nmc.adapters import ldv
from nmc.adapters.profielservice import split_identificatie
from nmc.worker.claims import Ongeldigtaak
from nmc.worker.context import Context, Failure, open_recipient, settle

SOORT = "ongeldig-melden"


async def claim(ctx: Context, batch: int) -> list[Ongeldigtaak]:
    return await ctx.db.fetch_all(
        "claim_ongeldig_melden", {"eigenaar": ctx.eigenaar, "batch": batch}, row_type=Ongeldigtaak
    )


async def handle(ctx: Context, taak: Ongeldigtaak) -> str:
    return await settle(ctx, SOORT, taak.taak_id, taak.claim_epoch, _report(ctx, taak))


async def _report(ctx: Context, taak: Ongeldigtaak) -> str:
    if taak.sleutel_gewrapt is None or taak.contactgegeven_id is None:
        return await _finish(ctx, taak, "niets-te-melden")
    if ctx.profielservice is None:
        raise Failure("profielservice-niet-ingesteld")
    try:
        soort, nummer = split_identificatie(open_recipient(ctx, taak))
    except ValueError:
        raise Failure("ontvanger") from None
    await ctx.extend_lease(taak.taak_id, taak.claim_epoch)
    headers = await ctx.ldv.register(
        taak.trace_id,
        "profielservice.contactgegeven-ongeldig",
        ldv.ACTIVITEIT_ONGELDIG,
        ldv.Betrokkene(soort, nummer),
    )
    gemeld = await ctx.profielservice.report_invalid(
        soort, nummer, taak.contactgegeven_id, taak.gemeld_op, headers=headers
    )
    return await _finish(ctx, taak, "gemeld" if gemeld else "verdwenen")


async def _finish(ctx: Context, taak: Ongeldigtaak, uitkomst: str) -> str:
    await ctx.db.fetch_all(
        "finish_taak", {"taak_id": taak.taak_id, "claim_epoch": taak.claim_epoch}
    )
    return uitkomst
