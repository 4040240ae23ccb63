"""Send tasks (`verzenden`): look up the preference if centraal, send through NotifyNL, and
report the outcome word to nmc.finish_verzenden.

The claim (nmc.claim_verzenden) has already made the transition and chosen the attempt. A
re-claim (`herclaim`) first asks NotifyNL by reference whether the earlier try got through;
only when nothing is found does it send again (or, past geldig_tot, report `verlopen`).
Each external call is preceded by a lease extension and an LDV record.
"""

from nmc.adapters import ldv
from nmc.adapters.notifynl import Accepted
from nmc.adapters.profielservice import split_identificatie
from nmc.worker.context import Context, Failure, open_sealed, settle

SOORT = "verzenden"


async def claim(ctx: Context, batch: int) -> list:
    return await ctx.db.rows("claim_verzenden", eigenaar=ctx.eigenaar, batch=batch)


async def handle(ctx: Context, taak) -> str:
    return await settle(ctx, SOORT, taak.taak_id, taak.claim_epoch, _send(ctx, taak))


async def _send(ctx: Context, taak) -> str:
    opened = open_sealed(ctx, taak)
    if taak.regie == "centraal":
        try:
            soort, nummer = split_identificatie(opened.recipient)
        except ValueError:
            raise Failure("ontvanger") from None
        betrokkene = ldv.Betrokkene(soort, nummer)
    else:
        betrokkene = ldv.Betrokkene("email", opened.recipient)

    if taak.herclaim:
        await ctx.extend_lease(taak.taak_id, taak.claim_epoch)
        headers = await ctx.ldv.register(
            taak.trace_id, "notifynl.zoeken-op-referentie", ldv.ACTIVITEIT_VERZENDEN, betrokkene
        )
        found = await ctx.notifynl.find_by_reference(str(taak.poging_id), headers=headers)
        if found:
            # NotifyNL lists newest first; the earliest send is the attempt's own id, and
            # receipts on any later one are recorded as duplicates by the SQL.
            return await _finish(ctx, taak, "verzonden", found[-1].notifynl_id)
    if not taak.mag_verzenden:
        return await _finish(ctx, taak, "verlopen")

    contactgegeven_id = None
    email = opened.recipient
    if taak.regie == "centraal":
        if ctx.profielservice is None:
            raise Failure("profielservice-niet-ingesteld")
        await ctx.extend_lease(taak.taak_id, taak.claim_epoch)
        headers = await ctx.ldv.register(
            taak.trace_id, "profielservice.partij", ldv.ACTIVITEIT_VOORKEUR, betrokkene
        )
        contact = await ctx.profielservice.find_email(
            betrokkene.soort, betrokkene.waarde, taak.dv_naam, taak.dienst, headers=headers
        )
        if contact is None:
            return await _finish(ctx, taak, "geen-contactgegevens")
        email, contactgegeven_id = contact.email, contact.id

    await ctx.extend_lease(taak.taak_id, taak.claim_epoch)
    headers = await ctx.ldv.register(
        taak.trace_id, "notifynl.verzenden", ldv.ACTIVITEIT_VERZENDEN, betrokkene
    )
    result = await ctx.notifynl.send_email(
        email,
        taak.notifynl_template_id,
        opened.berichtgegevens,
        str(taak.poging_id),
        headers=headers,
    )
    if isinstance(result, Accepted):
        return await _finish(ctx, taak, "verzonden", result.notifynl_id, contactgegeven_id)
    return await _finish(ctx, taak, "ongeldig-adres", None, contactgegeven_id)


async def _finish(ctx: Context, taak, uitkomst: str, notifynl_id=None, contactgegeven_id=None):
    await ctx.db.rows(
        "finish_verzenden",
        taak_id=taak.taak_id,
        claim_epoch=taak.claim_epoch,
        uitkomst=uitkomst,
        notifynl_id=notifynl_id,
        contactgegeven_id=contactgegeven_id,
    )
    return uitkomst
