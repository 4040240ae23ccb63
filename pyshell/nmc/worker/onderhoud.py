"""Maintenance (`onderhoud`): one task per job of nmc.onderhoudswerk, claimed like any other
and re-planned by its own run (as the watchdog is), so every worker with the default kinds
runs it and no deployment needs a worker of its own for it.

* `partities`, `retentie`: one call of nmc.run_onderhoud each (the next event partition at
  80%, the drop rule; one small batch of the retention), all rules in SQL.
* `herwrappen`: KEK rotation. nmc.list_herwrap hands over a batch of live data keys under an
  older KEK, but only to a worker whose ring has the re-wrap target active (the newer KEK
  every live worker reports active, nmc.kek_melding: one worker's new ring does not move
  it); they are re-wrapped here, in memory, and stored with
  nmc.finish_herwrap. The data ciphertexts are not touched.
* `templates`: the berichttypen's NotifyNL templates. nmc.claim_template_verversen names the
  templates due for a read; each is read here with its Notify service's key (GET
  /v2/template/{id}, nmc.notifynl.notifynl_templates) and recorded with nmc.record_template, which
  decides what the answer means (a 404 makes the berichttype unavailable); then
  nmc.finish_template_verversen plans the next run (every 15 minutes by default, at once for
  a template nmc.markeer_template_verouderd marked).

nmc.ensure_onderhoud_v2 keeps one open task per job and registers this worker's active KEK: at
the first round and then once a minute. Each run is its own short transaction (two for a
re-wrap: list, then store)."""

import logging
import time

from nmc.crypto.kek_ring import UnknownKekError
from nmc.crypto.sealing import DecryptionError, rewrap
from nmc.notifynl.notifynl_templates import GELEZEN, lees_template
from nmc.worker.claims import Taak
from nmc.worker.context import Context, settle
from nmc.worker.logs import event

SOORT = "onderhoud"
ENSURE_EVERY_S = 60.0
JOBS = ("partities", "retentie", "herwrappen", "templates")
HERWRAP_BATCH = 500


class Onderhoud:
    def __init__(self) -> None:
        self._ensured_at = float("-inf")

    async def process(self, ctx: Context, batch: int) -> int:
        """Run the maintenance jobs that are due; returns how many ran."""
        now = time.monotonic()
        if now - self._ensured_at >= ENSURE_EVERY_S:
            gepland = await ctx.db.fetch_value(
                "ensure_onderhoud", {"kek_actief": ctx.ring.active_id, "eigenaar": ctx.eigenaar}
            )
            self._ensured_at = now
            if gepland:
                event(logging.INFO, "onderhoud-gepland", aantal=gepland)
        claimed = await ctx.db.fetch_all(
            "claim_taken", {"soort": SOORT, "eigenaar": ctx.eigenaar, "batch": batch}, row_type=Taak
        )
        for taak in claimed:
            await settle(ctx, SOORT, taak.taak_id, taak.claim_epoch, _run(ctx, taak))
        return len(claimed)


async def _run(ctx: Context, taak: Taak) -> str:
    werk = (taak.payload or {}).get("werk")
    if werk == "herwrappen":
        return await _herwrap(ctx, taak)
    if werk == "templates":
        return await _templates(ctx, taak)
    uitkomst = await ctx.db.fetch_value(
        "run_onderhoud", {"taak_id": taak.taak_id, "claim_epoch": taak.claim_epoch}
    )
    gedaan = {k: v for k, v in uitkomst.items() if k not in ("werk", "meer") and v}
    if gedaan:  # only runs that changed something: names and counts, nothing personal
        event(logging.INFO, "onderhoud", werk=werk, **gedaan)
    return str(werk)


async def _herwrap(ctx: Context, taak: Taak) -> str:
    listed = await ctx.db.fetch_all(
        "list_herwrap",
        {
            "taak_id": taak.taak_id,
            "claim_epoch": taak.claim_epoch,
            "kek_actief": ctx.ring.active_id,
            "batch": HERWRAP_BATCH,
        },
    )
    ids, old_keks, keys = [], [], []
    niet_te_openen = 0
    for row in listed:
        try:
            new_key, _ = rewrap(bytes(row.sleutel_gewrapt), row.notificatie_id, row.kek_id,
                                       ring=ctx.ring)  # fmt: skip
        except (DecryptionError, UnknownKekError):
            niet_te_openen += 1  # stays under its KEK; the next sweep tries again
            continue
        ids.append(row.notificatie_id)
        old_keks.append(row.kek_id)
        keys.append(new_key)
    full = len(listed) >= HERWRAP_BATCH
    opgeslagen = await ctx.db.fetch_value(
        "finish_herwrap",
        {
            "taak_id": taak.taak_id,
            "claim_epoch": taak.claim_epoch,
            "ids": ids,
            "oude_kek": old_keks,
            "sleutels": keys,
            "naar_kek": ctx.ring.active_id,
            "na_kek": listed[-1].kek_id if full else None,
            "na_id": listed[-1].notificatie_id if full else None,
        },
    )
    if listed:
        event(
            logging.WARNING if niet_te_openen else logging.INFO,
            "onderhoud",
            werk="herwrappen",
            herwrapt=opgeslagen,
            niet_te_openen=niet_te_openen,
            naar_kek=ctx.ring.active_id,
        )
    return "herwrappen"


async def _templates(ctx: Context, taak: Taak) -> str:
    fence = {"taak_id": taak.taak_id, "claim_epoch": taak.claim_epoch}
    due = await ctx.db.fetch_all("templates_te_verversen", fence)
    for row in due:
        await ctx.extend_lease(taak.taak_id, taak.claim_epoch)
        lezing = await lees_template(ctx.notifynl, row.notify_service, row.template_id)
        staat = await ctx.db.fetch_value(
            "record_template", lezing.record_params(row.notify_service, row.template_id)
        )
        if lezing.uitkomst != GELEZEN:  # ids and error classes only, nothing personal
            event(
                logging.WARNING,
                "template-niet-gelezen",
                notify_service=row.notify_service,
                template_id=str(row.template_id),
                uitkomst=lezing.uitkomst,
                staat=staat,
                fout=lezing.fout,
            )
    # SQL plans the next run: at once while templates are still due (a full batch).
    await ctx.db.fetch_value("finish_template_verversen", {**fence, "meer": False})
    if due:
        event(logging.INFO, "onderhoud", werk="templates", gelezen=len(due))
    return "templates"
