"""The daily beheer report (`beheerrapport`, ADR 0024): once a day per DV with a beheer
channel, its unacknowledged terminal statuses past its bevestigingstermijn, a flag when its
share of geen-contactgegevens is above the threshold (NMC_GEEN_CONTACTGEGEVENS_DREMPEL, the
one /metrics uses), yesterday's notifications NotifyNL could not render per berichttype
(technisch-mislukt: the template changed after the intake) and its berichttypen whose
NotifyNL template is gone (unavailable). Notification ids and counts only: no personal data.

One open task per DV, planned by nmc.ensure_beheerrapporten (this kind calls it at its first
round and then once a minute) and re-planned by its own run for the next day's report time.
nmc.begin_beheerrapport builds today's report (one per DV and day; a try after a lost answer
is the same report, with the same id); then:

* nothing to report: recorded as `niets-te-melden`, nothing is sent;
* `mailto:` -> NotifyNL with the NMC's own template (nmc.configure_beheerrapport, like a
  berichttype: template and Notify service), the report's id as the `reference`; a re-claim
  first looks that reference up, so a send whose answer was lost is not sent twice. No template
  configured, or no send token in this window: deferred;
* `https:` -> a signed POST (nmc.adapters.beheerkanaal).

Before the call the lease is extended and, when the report lists notifications (pseudonymous
data provided to the DV), the LDV record of the provision is written. nmc.finish_beheerrapport
records the outcome and re-plans the task.
"""

import logging
import secrets
import time
from typing import Any
from urllib.parse import unquote, urlsplit

from nmc.adapters.http import Deferral
from nmc.adapters.notifynl import CONFIGURATIE, Accepted
from nmc.worker.claims import Taak
from nmc.worker.context import Context, Failure, settle
from nmc.worker.logs import event

SOORT = "beheerrapport"
ENSURE_EVERY_S = 60.0
LDV_NAAM = "beheerrapport"


class Beheerrapport:
    def __init__(self) -> None:
        self._ensured_at = float("-inf")

    async def claim(self, ctx: Context, batch: int) -> list[Taak]:
        now = time.monotonic()
        if now - self._ensured_at >= ENSURE_EVERY_S:
            gepland = await ctx.db.fetch_value("ensure_beheerrapporten")
            self._ensured_at = now
            if gepland:
                event(logging.INFO, "beheerrapport-gepland", aantal=gepland)
        return await ctx.db.fetch_all(
            "claim_taken", {"soort": SOORT, "eigenaar": ctx.eigenaar, "batch": batch}, row_type=Taak
        )

    async def handle(self, ctx: Context, taak: Taak) -> str:
        return await settle(ctx, SOORT, taak.taak_id, taak.claim_epoch, _report(ctx, taak))


async def _report(ctx: Context, taak: Taak) -> str:
    [rapport] = await ctx.db.fetch_all(
        "begin_beheerrapport",
        {
            "taak_id": taak.taak_id,
            "claim_epoch": taak.claim_epoch,
            "drempel": ctx.geen_contactgegevens_drempel,
        },
    )
    if rapport.kanaal is None:
        # Deactivated, or no channel any more: no report (a new channel plans a new task).
        await ctx.db.fetch_all(
            "finish_taak", {"taak_id": taak.taak_id, "claim_epoch": taak.claim_epoch}
        )
        return "geen-kanaal"
    if rapport.afgerond:
        await _finish(ctx, taak, rapport, None)
        return "al-afgerond"
    if not rapport.te_melden:
        return await _finish(ctx, taak, rapport, "niets-te-melden")
    inhoud = report_data(rapport)
    if rapport.kanaal.lower().startswith("mailto:"):
        return await _mail(ctx, taak, rapport, inhoud)
    if ctx.beheerkanaal is None:
        raise Failure("beheerrapport-geen-sleutels")  # no signing ring in this worker
    await ctx.extend_lease(taak.taak_id, taak.claim_epoch)
    headers = await _ldv(ctx, rapport)
    await ctx.beheerkanaal.post(
        rapport.kanaal, str(rapport.rapport_id), rapport.oin, inhoud, headers
    )
    return await _finish(ctx, taak, rapport, "verzonden")


async def _mail(ctx: Context, taak: Taak, rapport, inhoud: dict[str, Any]) -> str:
    if rapport.template_id is None:
        raise Deferral("beheerrapport-geen-template")
    if not rapport.budget:
        raise Deferral("beheerrapport-budget")
    adres = mailto_address(rapport.kanaal)
    if adres is None:
        raise Failure("beheerrapport-ongeldig-kanaal")
    ctx.notifynl.require_key(rapport.notify_service)  # Deferral before the LDV record
    await ctx.extend_lease(taak.taak_id, taak.claim_epoch)
    headers = await _ldv(ctx, rapport)
    reference = str(rapport.rapport_id)
    if taak.herclaim:
        # An earlier claim may have sent it and lost the answer: NotifyNL knows the reference.
        found = await ctx.notifynl.find_by_reference(
            reference, service=rapport.notify_service, headers=headers
        )
        if found:
            return await _finish(ctx, taak, rapport, "verzonden", found[0].notifynl_id)
    result = await ctx.notifynl.send_email(
        adres,
        rapport.template_id,
        personalisation(inhoud),
        reference,
        service=rapport.notify_service,
        headers=headers,
    )
    if not isinstance(result, Accepted):
        if result.soort in CONFIGURATIE:
            # Our configuration (the NMC's template, key or service): wait for its fix.
            raise Deferral(f"notifynl-geweigerd-{result.soort}")
        raise Failure(f"beheerrapport-{result.soort}")
    return await _finish(ctx, taak, rapport, "verzonden", result.notifynl_id)


async def _ldv(ctx: Context, rapport) -> dict[str, str]:
    """The LDV record of the notification ids the report provides (none: no record)."""
    ids = [str(notificatie_id) for notificatie_id in rapport.notificatie_ids or ()]
    if not ids:
        return {}
    return await ctx.ldv.register_verstrekking(secrets.token_hex(16), LDV_NAAM, rapport.dv_id, ids)


async def _finish(ctx: Context, taak: Taak, rapport, uitkomst: str | None, notifynl_id=None) -> str:
    result = await ctx.db.fetch_value(
        "finish_beheerrapport",
        {
            "taak_id": taak.taak_id,
            "claim_epoch": taak.claim_epoch,
            "rapport_id": rapport.rapport_id,
            "uitkomst": uitkomst,
            "notifynl_id": notifynl_id,
        },
    )
    event(
        logging.INFO,
        "beheerrapport-afgerond",
        taak_id=taak.taak_id,
        dv_id=rapport.dv_id,
        uitkomst=result,
        onbevestigd=rapport.onbevestigd,
        boven_drempel=rapport.boven_drempel,
    )
    return result or "afgerond"


def mailto_address(kanaal: str) -> str | None:
    """The (first) address of a mailto: URI, without its query; None when there is none."""
    parts = urlsplit(kanaal)
    if parts.scheme.lower() != "mailto":
        return None
    first = unquote(parts.path).split(",")[0].strip()
    return first if "@" in first else None


def report_data(rapport) -> dict[str, Any]:
    """The report as JSON data (the https: body's `data`): ids and counts, nothing personal."""
    ids = [str(notificatie_id) for notificatie_id in rapport.notificatie_ids or ()]
    return {
        "dienstverlener": {"oin": rapport.oin, "naam": rapport.naam},
        "dag": rapport.dag.isoformat(),
        "onbevestigd": {
            "aantal": rapport.onbevestigd,
            "tenMinste": bool(rapport.afgekapt),
            "bevestigingstermijn": rapport.bevestigingstermijn,
            "oudste": rapport.oudste.isoformat() if rapport.oudste else None,
            "notificatieIds": ids,
        },
        "geenContactgegevens": {
            "aandeel": rapport.aandeel,
            "drempel": rapport.drempel,
            "bovenDrempel": bool(rapport.boven_drempel),
        },
        # Paused for a gap (events after its position were in a dropped partition): the DV
        # sets its position (PUT /webhook/positie) to a cursor it holds or the oldest event.
        "webhook": {"gepauzeerdVoorGat": bool(rapport.webhook_gat)},
        # Yesterday's notifications NotifyNL could not render (technisch-mislukt: the
        # template changed after the intake), per berichttype.
        "onverwerkbaar": {
            "dag": rapport.onverwerkbaar_dag.isoformat() if rapport.onverwerkbaar_dag else None,
            "berichttypen": [
                {"berichttype": item["berichttype"], "aantal": item["aantal"]}
                for item in rapport.onverwerkbaar or ()
            ],
        },
        # Berichttypen whose NotifyNL template is gone: the intake refuses them (422).
        "nietBeschikbaar": {"berichttypen": list(rapport.niet_beschikbaar or ())},
    }


def personalisation(data: dict[str, Any]) -> dict[str, str]:
    """The report as the template's personalisation (NotifyNL takes strings only)."""
    onbevestigd, geen = data["onbevestigd"], data["geenContactgegevens"]
    niet = data["nietBeschikbaar"]["berichttypen"]
    ids = onbevestigd["notificatieIds"]
    aantal = onbevestigd["aantal"]
    return {
        "dienstverlener": data["dienstverlener"]["naam"],
        "oin": data["dienstverlener"]["oin"],
        "dag": data["dag"],
        "onbevestigd_aantal": f"ten minste {aantal}" if onbevestigd["tenMinste"] else str(aantal),
        "bevestigingstermijn": onbevestigd["bevestigingstermijn"],
        "onbevestigd_oudste": onbevestigd["oudste"] or "",
        "notificatie_ids": "\n".join(ids) if ids else "(geen)",
        "notificatie_ids_meer": "ja" if len(ids) < aantal else "nee",
        "geen_contactgegevens_aandeel": _percent(geen["aandeel"]),
        "geen_contactgegevens_drempel": _percent(geen["drempel"]),
        "geen_contactgegevens_boven_drempel": "ja" if geen["bovenDrempel"] else "nee",
        "webhook_gat": "ja" if data["webhook"]["gepauzeerdVoorGat"] else "nee",
        "onverwerkbaar": "\n".join(
            f"{item['berichttype']}: {item['aantal']}"
            for item in data["onverwerkbaar"]["berichttypen"]
        )
        or "(geen)",
        "onverwerkbaar_dag": data["onverwerkbaar"]["dag"] or "",
        "berichttypen_niet_beschikbaar": ", ".join(niet) if niet else "(geen)",
    }


def _percent(share: float | None) -> str:
    return "onbekend" if share is None else f"{share * 100:.1f}%".replace(".", ",")
