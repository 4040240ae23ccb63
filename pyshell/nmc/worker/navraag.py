"""Reconciliation tasks (`reconciliëren`): ask NotifyNL for an attempt's status and hand the
answer to nmc.finish_navraag_v2, which judges it exactly like a receipt and records NotifyNL's
id and the template (id, version) of the answer in the receipt history.

A 404 is `gevonden = false` (the SQL decides the dead end). The request names only NotifyNL's
id; the address NotifyNL echoes back is dropped by the adapter, so no LDV record is written.
"""

from nmc.worker.claims import Navraagtaak
from nmc.worker.context import Context, settle

SOORT = "reconciliëren"


async def claim(ctx: Context, batch: int) -> list[Navraagtaak]:
    return await ctx.db.fetch_all(
        "claim_navraag", {"eigenaar": ctx.eigenaar, "batch": batch}, row_type=Navraagtaak
    )


async def handle(ctx: Context, taak: Navraagtaak) -> str:
    return await settle(ctx, SOORT, taak.taak_id, taak.claim_epoch, _ask(ctx, taak))


async def _ask(ctx: Context, taak: Navraagtaak) -> str:
    ctx.notifynl.require_key(taak.notify_service)  # no key for its service: defer
    await ctx.extend_lease(taak.taak_id, taak.claim_epoch)
    # A service sees only its own notifications: ask the one the attempt was sent through.
    if taak.notifynl_id is not None:
        bericht = await ctx.notifynl.get_notification(taak.notifynl_id, service=taak.notify_service)
    else:
        found = await ctx.notifynl.find_by_reference(
            str(taak.poging_id), service=taak.notify_service
        )
        bericht = found[-1] if found else None
    return await ctx.db.fetch_value(
        "finish_navraag",
        {
            "taak_id": taak.taak_id,
            "claim_epoch": taak.claim_epoch,
            "gevonden": bericht is not None,
            "status": bericht.status if bericht else None,
            "completed_at": bericht.completed_at if bericht else None,
            "sent_at": bericht.sent_at if bericht else None,
            "notifynl_id": bericht.notifynl_id if bericht else None,
            "template_id": bericht.template_id if bericht else None,
            "template_versie": bericht.template_versie if bericht else None,
        },
    )
