"""Webhook delivery (`terugkoppelen`, SPEC §7): one task per DV with a webhook POSTs the next
batch of its events, from the DV's own delivery position, to the registered URL.

nmc.claim_terugkoppelen_v3 hands over the URL and the batch (at most the DV's maxBatch, below
the visibility watermark) as a feed page; nmc.adapters.webhook turns it into the signed call.
nmc.finish_terugkoppelen_v2 decides what the answer means: `geleverd` (2xx) moves the delivery
position, which is not an acknowledgement; `mislukt` backs off and, after the DV's maxMislukt,
pauses with growing waits; `weg` (410) disables the webhook until the DV resumes it. One
batch per call and one call per task: never a retry per event, never from zero. A worker
that dies mid-call leaves the position where it was; the next claim (after the lease) sends
that batch again: at least once, only the last batch.

An empty batch is not sent: finishing it only moves the position up to the watermark. Before
each call: the lease is extended and the LDV record of the provision is written (an LDV
outage defers the task without counting against the DV's webhook). The task of a DV that
was deactivated or lost its webhook comes without a URL and is closed.

Before every delivery the address is checked again (nmc.adapters.webhook: the call connects
to the checked address): one now refused is recorded as `adres-geweigerd`, so the webhook is
no longer validated and its task validates it again (with backoff) before it delivers; this
is also how a webhook recorded as `bestaand` (in use before validation existed, never
checked) meets the check at its next delivery. A name that no longer resolves is a failed
delivery.

Before the first delivery to a URL the webhook must be validated (nmc.adapters.webhook_validatie: no
loopback, link-local or private target unless allowed, and the CloudEvents handshake).
`nmc admin dv apply` validates a new URL; a task whose URL is not validated yet (the apply's
try failed, or it came by another way) is claimed without a batch, validated here, the outcome
recorded (nmc.record_webhookvalidatie) and the task deferred: it delivers on its next round
once the URL passed, and tries the validation again with backoff while it fails. The failed
validation counts as a deferral, not against the DV's webhook (no pause).

A gap (events after the position were in an event partition that was dropped: the feed
answers 410 for that position) is never delivered past: the claim pauses the webhook for it
and hands the task over without a batch; it is closed here and none is planned until the DV
sets its position to a cursor it holds or to the oldest event (PUT /webhook/positie,
nmc.set_webhook_positie). The metric nmc_webhook_gat and the daily beheer report tell of it.

nmc.ensure_terugkoppelen plans the tasks (a new webhook, one resumed after a 410): this kind
calls it at its first round and then once a minute. An epoch raise moves every delivery
position itself (nmc.raise_epoch); the finish names the epoch its batch was read in, so a
batch that was out during the raise does not move the restarted position.
"""

import logging
import secrets
import time

from nmc.adapters.http import Deferral
from nmc.adapters.webhook_validatie import ADRES_GEWEIGERD, Validatie
from nmc.tracing import worker as tracing
from nmc.worker.claims import Terugkoppeltaak
from nmc.worker.context import Context, Failure, settle
from nmc.worker.logs import event

SOORT = "terugkoppelen"
ENSURE_EVERY_S = 60.0
LDV_NAAM = "webhook.batch"


class Terugkoppelen:
    def __init__(self) -> None:
        self._ensured_at = float("-inf")

    async def claim(self, ctx: Context, batch: int) -> list[Terugkoppeltaak]:
        now = time.monotonic()
        if now - self._ensured_at >= ENSURE_EVERY_S:
            gepland = await ctx.db.fetch_value("ensure_terugkoppelen")
            self._ensured_at = now
            if gepland:
                event(logging.INFO, "terugkoppelen-gepland", aantal=gepland)
        return await ctx.db.fetch_all(
            "claim_terugkoppelen",
            {"eigenaar": ctx.eigenaar, "batch": batch},
            row_type=Terugkoppeltaak,
        )

    async def handle(self, ctx: Context, taak: Terugkoppeltaak) -> str:
        return await settle(ctx, SOORT, taak.taak_id, taak.claim_epoch, _deliver(ctx, taak))


async def _deliver(ctx: Context, taak: Terugkoppeltaak) -> str:
    if taak.webhook_url is None:
        await ctx.db.fetch_all(
            "finish_taak", {"taak_id": taak.taak_id, "claim_epoch": taak.claim_epoch}
        )
        return "geen-webhook"
    if taak.gat:
        # Events after the position were in a dropped partition: the claim paused the
        # webhook for it (nmc.claim_terugkoppelen_v3); nothing goes out until the DV sets
        # its position (PUT /webhook/positie).
        await ctx.db.fetch_all(
            "finish_taak", {"taak_id": taak.taak_id, "claim_epoch": taak.claim_epoch}
        )
        event(logging.WARNING, "webhook-gat", taak_id=taak.taak_id, dv_id=taak.dv_id)
        return "gat"
    if ctx.webhook is None:
        raise Failure("webhook-niet-ingesteld")
    if not taak.gevalideerd:
        return await _validate(ctx, taak)
    page = taak.pagina
    if not page["events"]:
        return await _finish(ctx, taak, "geleverd", page["xid"], page["eventId"])
    batch = ctx.webhook.batch(taak.dv_id, page)
    await ctx.extend_lease(taak.taak_id, taak.claim_epoch)
    # The address is checked again for this call, and the call goes to the checked address.
    target = await ctx.webhook.target(taak.webhook_url)
    if isinstance(target, Validatie):
        if target.uitkomst == ADRES_GEWEIGERD:
            # It points somewhere it must not (since, or always: a `bestaand` webhook never
            # had the check): no longer validated; its task validates it again, with backoff.
            await _record(ctx, taak, target)
            raise Deferral(f"webhook-{target.uitkomst}")
        event(
            logging.WARNING, "webhook-niet-geleverd", taak_id=taak.taak_id, dv_id=taak.dv_id,
            fout=f"webhook-{target.detail}",
        )  # fmt: skip
        return await _finish(ctx, taak, "mislukt", None, None)
    await tracing.link_notificaties(ctx.db, batch.notificatie_ids)
    headers = await ctx.ldv.register_verstrekking(
        secrets.token_hex(16), LDV_NAAM, taak.dv_id, batch.notificatie_ids
    )
    levering = await ctx.webhook.deliver(target, batch, headers)
    if levering.fout:
        event(
            logging.WARNING,
            "webhook-niet-geleverd",
            taak_id=taak.taak_id,
            dv_id=taak.dv_id,
            fout=levering.fout,
        )
    if levering.uitkomst == "geleverd":
        return await _finish(ctx, taak, "geleverd", page["xid"], page["eventId"])
    return await _finish(ctx, taak, levering.uitkomst, None, None)


async def _finish(ctx: Context, taak: Terugkoppeltaak, uitkomst: str, xid, event_id) -> str:
    return await ctx.db.fetch_value(
        "finish_terugkoppelen",
        {
            "taak_id": taak.taak_id,
            "claim_epoch": taak.claim_epoch,
            "uitkomst": uitkomst,
            "xid": xid,
            "event_id": event_id,
            "epoch": taak.epoch,
        },
    )


async def _validate(ctx: Context, taak: Terugkoppeltaak) -> str:
    """Validate the task's URL and record it; the task waits for its next round either way."""
    if ctx.webhook_validator is None:
        raise Failure("webhook-validatie-niet-ingesteld")
    await ctx.extend_lease(taak.taak_id, taak.claim_epoch)
    validatie = await ctx.webhook_validator.validate(taak.webhook_url)
    if not await _record(ctx, taak, validatie):
        raise Deferral(f"webhook-{validatie.uitkomst}")
    # Validated: the batch is read by the next claim, a moment from now.
    await ctx.db.fetch_value(
        "defer_taak", {"taak_id": taak.taak_id, "claim_epoch": taak.claim_epoch, "fout": None}
    )
    return "gevalideerd"


async def _record(ctx: Context, taak: Terugkoppeltaak, validatie: Validatie) -> bool:
    """Record a validation's outcome; whether the URL is now validated."""
    gevalideerd = await ctx.db.fetch_value(
        "record_webhookvalidatie",
        {
            "dv_id": taak.dv_id,
            "url": taak.webhook_url,
            "uitkomst": validatie.uitkomst,
            "detail": validatie.detail,
        },
    )
    event(
        logging.INFO if gevalideerd else logging.WARNING,
        "webhook-gevalideerd" if gevalideerd else "webhook-niet-gevalideerd",
        taak_id=taak.taak_id,
        dv_id=taak.dv_id,
        uitkomst=validatie.uitkomst,
        fout=validatie.detail,
    )
    return bool(gevalideerd)
