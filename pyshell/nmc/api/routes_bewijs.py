"""The delivery proof and the history of one notification (SPEC §7).

GET /api/nmc/v1/notificaties/{notificatieId}/afleverbewijs
    One call of nmc.get_afleverbewijs; the content is signed here as a JWS (RFC 7515, compact,
    `application/jose`) with the proof ring (nmc.signing.afleverbewijs_signing): claims `iss` (the
    NMC, its event source), `sub` (the notification id), `iat` (when it was signed, this
    machine's clock), `uitgegevenDoor` (the same issuer) and the proof's own members.
    Verifiable offline with the JWKS at /.well-known/jwks.json.
GET /api/nmc/v1/notificaties/{notificatieId}/geschiedenis?limiet=&cursor=
    One call of nmc.get_geschiedenis_v2: the same facts as plain JSON, a page at a time; the
    page cursor is sealed to the notification and the DV (nmc.feed.feed_cursor).

Both within the caller's DV only (another DV's id is 404, as the SQL answers NM005), both
served as long as the notification is kept, also after its data key is erased. Each proof and
each history page is a provision of pseudonymous personal data: an LDV record is written
before it leaves (nmc.api.verstrekking_ldv), as for feed pages; when it cannot be, 503.
"""

import re
import time
from collections.abc import Iterable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from nmc import sql_calls
from nmc.api.feed_query import INVALID_CURSOR, TOKEN_PATTERN
from nmc.api.middleware import trace_id_of
from nmc.api.openapi import BASE_PATH
from nmc.api.problems import internal_error, service_unavailable
from nmc.api.routing import provision_route
from nmc.api.services import Services, caller, services_of
from nmc.api.validation import (
    ValidationFailed,
    no_query_parameters,
    parse_notificatie_id,
    query_parameters,
    violation,
)
from nmc.feed.feed_cursor import InvalidCursor
from nmc.signing.afleverbewijs_signing import MEDIA_TYPE

GESCHIEDENIS_LIMIET_DEFAULT = 100
GESCHIEDENIS_LIMIET_MAX = 1000
# The position after a history page, sealed to the notification (nmc.feed.feed_cursor): opaque
# like the feed's cursor. Whether it is ours, and this notification's, is the codec's judgement.
GESCHIEDENIS_CURSOR_PATTERN = TOKEN_PATTERN
_CURSOR = re.compile(GESCHIEDENIS_CURSOR_PATTERN.replace("^", r"\A").replace("$", r"\Z"))
_DIGITS = re.compile(r"\A[0-9]{1,4}\Z")
LDV_AFLEVERBEWIJS = "bewijs.afleverbewijs"
LDV_GESCHIEDENIS = "bewijs.geschiedenis"


async def afleverbewijs(request: Request) -> Response:
    services = services_of(request)
    dv = await caller(request)
    notificatie_id = parse_notificatie_id(request.path_params["notificatieId"])
    no_query_parameters(request.query_params.multi_items())
    ring = services.afleverbewijs
    if ring is None:
        raise service_unavailable(
            "Het NMC kan nu geen afleverbewijs ondertekenen; probeer het later opnieuw."
        )
    row = await sql_calls.fetch_one(
        services.pool, "get_afleverbewijs", {"dv_id": dv.dv_id, "id": notificatie_id}
    )
    bewijs = row[0] if row else None
    if not isinstance(bewijs, dict):
        raise internal_error()
    issuer = services.settings.event_source
    # iat: when this JWS is made, by this machine's clock (uitgegevenOp is the NMC's clock,
    # which tests and drills move); a verifier judges a retired key by it.
    claims = {
        "iss": issuer,
        "sub": str(notificatie_id),
        "iat": int(time.time()),
        "uitgegevenDoor": issuer,
        **bewijs,
    }
    await _record(request, services, dv.dv_id, LDV_AFLEVERBEWIJS, [str(notificatie_id)])
    return Response(ring.sign(claims), media_type=MEDIA_TYPE)


async def geschiedenis(request: Request) -> Response:
    services = services_of(request)
    dv = await caller(request)
    notificatie_id = parse_notificatie_id(request.path_params["notificatieId"])
    query = parse_geschiedenis_query(request.query_params.multi_items())
    na_sequence, na_receipts = 0, 0
    if query["cursor"] is not None:
        try:
            na_sequence, na_receipts = services.cursors.decode_geschiedenis(
                dv.dv_id, notificatie_id, query["cursor"]
            )
        except InvalidCursor:
            raise ValidationFailed([violation("cursor", INVALID_CURSOR, "query")]) from None
    row = await sql_calls.fetch_one(
        services.pool,
        "get_geschiedenis",
        {
            "dv_id": dv.dv_id,
            "id": notificatie_id,
            "na_sequence": na_sequence,
            "na_receipts": na_receipts,
            "limiet": query["limiet"],
        },
    )
    pagina = row[0] if row else None
    if not isinstance(pagina, dict):
        raise internal_error()
    volgende = pagina.get("volgende")
    pagina["volgende"] = (
        services.cursors.encode_geschiedenis(
            dv.dv_id, notificatie_id, int(volgende["sequence"]), int(volgende["receipts"])
        )
        if isinstance(volgende, dict)
        else None
    )
    await _record(request, services, dv.dv_id, LDV_GESCHIEDENIS, [str(notificatie_id)])
    return JSONResponse(pagina)


def parse_geschiedenis_query(params: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """`limiet` (1-1000, default 100) and `cursor` (the `volgende` of the previous page, as
    sent: the handler opens it); a repeated or unknown parameter is refused."""
    seen, errors = query_parameters(params, ("limiet", "cursor"))
    limiet = GESCHIEDENIS_LIMIET_DEFAULT
    if "limiet" in seen:
        text = seen["limiet"]
        if _DIGITS.match(text) and 1 <= int(text) <= GESCHIEDENIS_LIMIET_MAX:
            limiet = int(text)
        else:
            errors.append(
                violation(
                    "limiet",
                    f"moet een geheel getal van 1 tot {GESCHIEDENIS_LIMIET_MAX} zijn",
                    "query",
                )
            )
    cursor = seen.get("cursor")
    if cursor is not None and not _CURSOR.match(cursor):
        errors.append(violation("cursor", INVALID_CURSOR, "query"))
        cursor = None
    if errors:
        raise ValidationFailed(errors)
    return {"limiet": limiet, "cursor": cursor}


async def _record(
    request: Request, services: Services, dv_id: int, name: str, ids: list[str]
) -> None:
    await services.ldv.record(
        trace_id=trace_id_of(request.scope), name=name, dv_id=dv_id, notificatie_ids=ids
    )


def routes() -> list[Route]:
    base = f"{BASE_PATH}/notificaties/{{notificatieId}}"
    return [
        provision_route(f"{base}/afleverbewijs", afleverbewijs),
        provision_route(f"{base}/geschiedenis", geschiedenis),
    ]
