"""The DV's feed endpoints (SPEC §7): changes (JSON or SSE), acknowledgement, snapshot,
and resuming the webhook.

Every request is one SQL call (nmc.page_events, nmc.acknowledge_cursor,
nmc.snapshot_notificaties, nmc.resume_webhook, nmc.set_webhook_positie; with a replica a
page is two, see
nmc.api.replica); the rules (watermark, cursor expiry, call rate,
forward-only acknowledgement) are those functions'. The shell seals positions into opaque
cursors (nmc.feed.feed_cursor), turns events into CloudEvents (nmc.feed.cloudevents) and
writes the LDV record of each page before it leaves (nmc.api.verstrekking_ldv).
"""

import uuid
from collections.abc import Mapping
from typing import Any

import psycopg
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from nmc import sql_calls, sqlstates
from nmc.api import replica
from nmc.api.body import read_body, read_json
from nmc.api.db import Dienstverlener
from nmc.api.feed_query import (
    INVALID_CURSOR,
    last_event_id,
    parse_bevestiging,
    parse_feed_query,
    parse_snapshot_query,
    parse_webhook_positie,
    wants_event_stream,
)
from nmc.api.middleware import trace_id_of
from nmc.api.openapi import BASE_PATH
from nmc.api.problems import conflict, internal_error, not_found
from nmc.api.routing import provision_route
from nmc.api.services import Services, caller, services_of
from nmc.api.sse import EventStreamResponse, FeedStream
from nmc.api.validation import Location, ValidationFailed, no_query_parameters, violation
from nmc.feed.cloudevents import to_cloudevent
from nmc.feed.feed_cursor import InvalidCursor, Position

ACK_BODY_LIMIT = 4096
ACK_RESULT_HEADER = "Nmc-Bevestiging"
NO_CURSOR: dict[str, Any] = {"epoch": None, "xid": None, "event_id": None, "uitgegeven_op": None}


# --------------------------------------------------------------------------------------------
# Changes


async def wijzigingen(request: Request) -> Response:
    services = services_of(request)
    dv = await caller(request)
    query = parse_feed_query(request.query_params.multi_items())
    if wants_event_stream(request.headers.get("accept")):
        return await _stream(request, services, dv, query)
    start = _position(services, dv, query["cursor"], "cursor", "query")
    page = await read_page(services, dv.dv_id, start, query["limiet"])
    events = page["events"]
    await _record(request, services, dv, "feed.pagina", events)
    source = services.settings.event_source
    return JSONResponse(
        {
            "events": [to_cloudevent(event, source) for event in events],
            "cursor": services.cursors.encode(dv.dv_id, Position.from_page(page)),
        }
    )


async def _stream(
    request: Request, services: Services, dv: Dienstverlener, query: Mapping[str, Any]
) -> Response:
    resume = last_event_id(request.headers.get("last-event-id"))
    if resume is not None:
        start = _position(services, dv, resume, "Last-Event-ID", "header")
    else:
        start = _position(services, dv, query["cursor"], "cursor", "query")
    release = services.streams.acquire(dv.dv_id)
    try:
        first = await read_page(services, dv.dv_id, start, query["limiet"])
    except BaseException:
        release()
        raise

    async def read(position: Position | None) -> Mapping[str, Any]:
        return await read_page(services, dv.dv_id, position, query["limiet"])

    async def record(events: list[Mapping[str, Any]]) -> None:
        await _record(request, services, dv, "feed.sse", events)

    stream = FeedStream(
        settings=services.settings.sse,
        codec=services.cursors,
        dv_id=dv.dv_id,
        source=services.settings.event_source,
        read_page=read,
        record_page=record,
    )
    return EventStreamResponse(stream.frames(first, start), release)


async def read_page(
    services: Services, dv_id: int, position: Position | None, limiet: int | None
) -> Mapping[str, Any]:
    params = position.sql_params() if position is not None else NO_CURSOR
    page = await replica.read_feed_page(services, dv_id, params, limiet)
    if not isinstance(page, dict):
        raise internal_error()
    return page


# --------------------------------------------------------------------------------------------
# Acknowledgement


async def bevestiging(request: Request) -> Response:
    services = services_of(request)
    dv = await caller(request)
    no_query_parameters(request.query_params.multi_items())
    cursor = parse_bevestiging(await read_json(request, ACK_BODY_LIMIT))
    position = _position(services, dv, cursor, "cursor", "body")
    row = await sql_calls.fetch_one(
        services.pool, "acknowledge_cursor", {"dv_id": dv.dv_id, **position.sql_params()}
    )
    resultaat = row[0] if row else None
    if resultaat not in ("bevestigd", "ongewijzigd"):
        raise internal_error()
    return Response(status_code=204, headers={ACK_RESULT_HEADER: resultaat})


# --------------------------------------------------------------------------------------------
# Snapshot


async def snapshot(request: Request) -> Response:
    services = services_of(request)
    dv = await caller(request)
    query = parse_snapshot_query(request.query_params.multi_items())
    position: Position | None = None
    na: uuid.UUID | None = None
    if query["na"] is not None:
        try:
            position, na = services.cursors.decode_snapshot(dv.dv_id, query["na"])
        except InvalidCursor:
            raise ValidationFailed([violation("na", INVALID_CURSOR, "query")]) from None
    limiet = query["limiet"]
    # One more than shown tells whether a next page exists.
    # A later page must be at least as new as the first: its watermark goes along.
    watermerk = str(position.xid) if position is not None else None
    result = await replica.read_snapshot_page(services, dv.dv_id, na, limiet + 1, watermerk)
    if not isinstance(result, dict):
        raise internal_error()
    # Every page carries the first page's feed position: after the last page, the DV reads
    # the feed from there; what changed meanwhile comes again and the sequence rule sorts it.
    position = position or Position.from_page(result)
    notificaties = result["notificaties"][:limiet]
    volgende = None
    if len(result["notificaties"]) > limiet:
        last = uuid.UUID(notificaties[-1]["notificatieId"])
        volgende = services.cursors.encode_snapshot(dv.dv_id, position, last)
    await services.ldv.record(
        trace_id=trace_id_of(request.scope),
        name="feed.snapshot",
        dv_id=dv.dv_id,
        notificatie_ids=(n["notificatieId"] for n in notificaties),
    )
    return JSONResponse(
        {
            "notificaties": notificaties,
            "volgende": volgende,
            "cursor": services.cursors.encode(dv.dv_id, position),
        }
    )


# --------------------------------------------------------------------------------------------
# Webhook


GAP_DETAIL = (
    "De webhook staat stil om een gat: events na zijn positie zijn niet meer beschikbaar. Zet "
    "de positie met PUT /webhook/positie (een cursor die u heeft, of vanaf het oudste event)."
)


async def webhook_hervatten(request: Request) -> Response:
    services = services_of(request)
    dv = await caller(request)
    no_query_parameters(request.query_params.multi_items())
    if await read_body(request, ACK_BODY_LIMIT):
        raise ValidationFailed([violation("", "dit verzoek heeft geen inhoud")])
    row = await _webhook_call(services, "resume_webhook", {"dv_id": dv.dv_id})
    if row and row[0] == "gat":
        # Resuming would skip the lost events: only setting the position ends this pause.
        raise conflict(GAP_DETAIL)
    services.werk.meld()
    return Response(status_code=204)


async def webhook_positie(request: Request) -> Response:
    """Set the webhook's delivery position to a cursor the DV holds (the feed's 410 rules
    apply) or to the oldest available event; the webhook resumes from there."""
    services = services_of(request)
    dv = await caller(request)
    cursor = parse_webhook_positie(await read_json(request, ACK_BODY_LIMIT))
    position = _position(services, dv, cursor, "cursor", "body")
    params = position.sql_params() if position is not None else NO_CURSOR
    await _webhook_call(services, "set_webhook_positie", {"dv_id": dv.dv_id, **params})
    services.werk.meld()
    return Response(status_code=204)


async def _webhook_call(services: Services, name: str, params: Mapping[str, Any]) -> Any:
    """One webhook call of the DV; NM005 (no webhook) is a 404."""
    try:
        return await sql_calls.fetch_one(services.pool, name, params)
    except psycopg.Error as error:
        if error.sqlstate == sqlstates.NOT_FOUND:
            raise not_found("Deze dienstverlener heeft geen webhook.") from None
        raise


# --------------------------------------------------------------------------------------------


def _position(
    services: Services, dv: Dienstverlener, token: str | None, field: str, where: Location
) -> Position | None:
    """The position in a cursor; a cursor that is not ours for this DV is a 400."""
    if token is None:
        return None
    try:
        return services.cursors.decode(dv.dv_id, token)
    except InvalidCursor:
        raise ValidationFailed([violation(field, INVALID_CURSOR, where)]) from None


async def _record(
    request: Request,
    services: Services,
    dv: Dienstverlener,
    name: str,
    events: list[Mapping[str, Any]],
) -> None:
    await services.ldv.record(
        trace_id=trace_id_of(request.scope),
        name=name,
        dv_id=dv.dv_id,
        notificatie_ids=(str(event["notificatieId"]) for event in events),
    )


def routes() -> list[Route]:
    """Listed before the notificatie routes: `/notificaties/{notificatieId}` would take
    `wijzigingen` and `_snapshot` as ids."""
    base = f"{BASE_PATH}/notificaties"
    return [
        provision_route(f"{base}/wijzigingen", wijzigingen),
        Route(f"{base}/wijzigingen/bevestiging", bevestiging, methods=["PUT"]),
        provision_route(f"{base}/_snapshot", snapshot),
        Route(f"{BASE_PATH}/webhook/hervatten", webhook_hervatten, methods=["POST"]),
        Route(f"{BASE_PATH}/webhook/positie", webhook_positie, methods=["PUT"]),
    ]
