"""Send tasks (`verzenden`): look up the preference if centraal, send through NotifyNL, and
report the outcome word to nmc.finish_verzenden. An address NotifyNL's rule refuses
(nmc.notifynl.notifynl_email) is `ongeldig-adres` without the call, as its 400 would be.

A refused send (the adapter classifies NotifyNL's answer, notifynl-contract.md, Errors) is
reported by its kind: the recipient's address (`ongeldig-adres`) and a request NotifyNL
cannot render (`onverwerkbaar`) are outcomes of nmc.finish_verzenden; a refusal of our own
configuration goes to nmc.defer_verzenden, which defers the send and records the refusal.

The claim (nmc.claim_verzenden) has already made the transition and chosen the attempt. A
re-claim (`herclaim`) first asks NotifyNL by reference whether the earlier try got through;
only when nothing is found does it send again (or, past geldig_tot, report `verlopen`).
Each external call is preceded by a lease extension and an LDV record.

Lease extensions and outcomes are group-committed (nmc.runtime.group_commit): the extensions of
calls that start together share one nmc.extend_leases call, and the outcomes that arrive
while a commit is under way share the next nmc.finish_verzenden_batch call. A task counts
as finished only once the call that carried its outcome has returned; an item the
database refuses (a stale epoch: NM011) fails alone. Should a whole batch fail, its items
are committed one by one, so one bad item cannot fail the others.
"""

import logging

import psycopg

from nmc import sqlstates
from nmc.adapters import ldv
from nmc.adapters.notifynl import CONFIGURATIE, Accepted, Refused
from nmc.adapters.profielservice import split_identificatie
from nmc.notifynl.notifynl_email import refused_by_notifynl
from nmc.worker.claims import Verzendtaak
from nmc.worker.context import Context, Failure, open_sealed, settle
from nmc.worker.db import StaleClaim
from nmc.worker.logs import event

SOORT = "verzenden"
# A database that could not answer (connection broken, shutting down, statement cancelled).
_CANNOT_ANSWER_CLASSES = (
    sqlstates.CONNECTION_EXCEPTION_CLASS,
    sqlstates.OPERATOR_INTERVENTION_CLASS,
)


async def claim(ctx: Context, batch: int) -> list[Verzendtaak]:
    return await ctx.db.fetch_all(
        "claim_verzenden", {"eigenaar": ctx.eigenaar, "batch": batch}, row_type=Verzendtaak
    )


async def handle(ctx: Context, taak: Verzendtaak) -> str:
    return await settle(ctx, SOORT, taak.taak_id, taak.claim_epoch, _send(ctx, taak))


async def _send(ctx: Context, taak: Verzendtaak) -> str:
    ctx.notifynl.require_key(taak.notify_service)  # no key for its service: defer
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
        found = await ctx.notifynl.find_by_reference(
            str(taak.poging_id), service=taak.notify_service, headers=headers
        )
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

    if refused_by_notifynl(email):
        # NotifyNL would answer `email_address Not a valid email address`: the same outcome
        # without the call (and without its LDV record). A Profielservice address has not
        # been checked before; a DV's address was at intake, unless accepted before that.
        event(logging.INFO, "adres-geweigerd-voor-verzenden", soort=SOORT, taak_id=taak.taak_id)
        return await _finish(ctx, taak, "ongeldig-adres", None, contactgegeven_id)

    if contactgegeven_id is None:
        await ctx.extend_lease(taak.taak_id, taak.claim_epoch)
    else:
        await _record_contactgegeven(ctx, taak, contactgegeven_id)
    headers = await ctx.ldv.register(
        taak.trace_id, "notifynl.verzenden", ldv.ACTIVITEIT_VERZENDEN, betrokkene
    )
    # The one call that can make a duplicate e-mail: logged before it goes out, so a call
    # whose outcome was never committed (worker killed, lease taken over) can be counted.
    event(
        logging.INFO,
        "notifynl-verzenden",
        soort=SOORT,
        taak_id=taak.taak_id,
        epoch=taak.claim_epoch,
        poging_id=str(taak.poging_id),
    )
    result = await ctx.notifynl.send_email(
        email,
        taak.notifynl_template_id,
        opened.berichtgegevens,
        str(taak.poging_id),
        service=taak.notify_service,  # the key of the service that owns the template
        headers=headers,
    )
    if isinstance(result, Accepted):
        return await _finish(
            ctx, taak, "verzonden", result.notifynl_id, contactgegeven_id, result.template_versie
        )
    return await _refused(ctx, taak, result, contactgegeven_id)


async def _refused(ctx: Context, taak: Verzendtaak, result: Refused, contactgegeven_id) -> str:
    """NotifyNL refused the send: the kind decides which SQL function hears of it."""
    event(
        logging.WARNING,
        "notifynl-geweigerd",
        soort=SOORT,
        taak_id=taak.taak_id,
        epoch=taak.claim_epoch,
        weigering=result.soort,
        berichttype=taak.berichttype,
    )
    if result.soort in CONFIGURATIE:
        return await ctx.db.fetch_value(
            "defer_verzenden",
            {"taak_id": taak.taak_id, "claim_epoch": taak.claim_epoch, "soort": result.soort},
        )
    return await _finish(ctx, taak, result.soort, None, contactgegeven_id)


async def _record_contactgegeven(ctx: Context, taak: Verzendtaak, contactgegeven_id) -> None:
    """The lease extension before a centraal send, which also records on the attempt the
    contactgegeven the e-mail goes to: a commit that recovers a send whose own commit was
    lost (a re-claim that finds it by reference, a receipt that takes over the NotifyNL id)
    carries none. Group-committed like `ctx.extend_lease`; `StaleClaim` when taken over."""
    group = ctx.group_commit(
        "record_contactgegevens", lambda items: _record_contactgegevens(ctx, items)
    )
    if await group.submit((taak.taak_id, taak.claim_epoch, contactgegeven_id)) is None:
        raise StaleClaim()


async def _record_contactgegevens(ctx: Context, items: list[tuple]) -> list:
    rows = await ctx.db.fetch_all(
        "record_contactgegevens",
        {
            "taak_ids": [item[0] for item in items],
            "claim_epochs": [item[1] for item in items],
            "contactgegeven_ids": [item[2] for item in items],
        },
    )
    return [row.lease_tot for row in rows]


async def _finish(
    ctx: Context,
    taak: Verzendtaak,
    uitkomst: str,
    notifynl_id=None,
    contactgegeven_id=None,
    template_versie: int | None = None,
):
    # One commit in flight: outcomes arrive spread out (as NotifyNL answers), so the ones
    # that wait for the running commit make the next batch larger.
    group = ctx.group_commit(
        "finish_verzenden", lambda items: _finish_batch(ctx, items), max_in_flight=1
    )
    await group.submit(
        (taak.taak_id, taak.claim_epoch, uitkomst, notifynl_id, contactgegeven_id, template_versie)
    )
    return uitkomst


async def _finish_batch(ctx: Context, items: list[tuple]) -> list:
    """One nmc.finish_verzenden_batch_v2 call; per item its status or its own exception."""
    try:
        rows = await ctx.db.fetch_all(
            "finish_verzenden_batch",
            {
                "taak_ids": [item[0] for item in items],
                "claim_epochs": [item[1] for item in items],
                "uitkomsten": [item[2] for item in items],
                "notifynl_ids": [item[3] for item in items],
                "contactgegeven_ids": [item[4] for item in items],
                "template_versies": [item[5] for item in items],
            },
        )
    except psycopg.Error as error:
        # The database refused the call as a whole (a constraint, a bug): find the item by
        # committing one by one. Not when it could not answer (connection, shutdown): every
        # item would wait for the same failure; their leases run out and they are re-claimed.
        if len(items) == 1 or not error.sqlstate or error.sqlstate[:2] in _CANNOT_ANSWER_CLASSES:
            raise
        return [await _finish_one(ctx, item) for item in items]
    return [_result(row) for row in rows]


async def _finish_one(ctx: Context, item: tuple) -> object:
    try:
        return (await _finish_batch(ctx, [item]))[0]
    except Exception as error:  # that item's own failure
        return error


def _result(row) -> object:
    if row.fout is None:
        return row.status
    if row.fout == sqlstates.STALE_CLAIM:
        return StaleClaim()
    # Refused by the SQL (an outcome the notification no longer allows, …): a failure
    # inside the NMC, counted on the task; the SQLSTATE is the error class.
    return Failure(f"verzenden-{row.fout}")
