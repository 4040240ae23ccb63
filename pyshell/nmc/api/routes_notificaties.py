"""The DV's endpoints (SPEC §7): intake, batch intake, status, dvRef search, cancel.

Each handler authenticates, validates, and makes one SQL call (the intake's sealing and call
are nmc.api.intake); the lifecycle rules (quota, berichttype, geldigTot range, idempotency,
cancel) are the SQL functions' answers, which become status codes here.
"""

import json
import uuid
from datetime import datetime

import psycopg
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from nmc import sql_calls, sqlstates
from nmc.api import intake, lijst_cursor
from nmc.api.body import read_json
from nmc.api.middleware import span_id_of, trace_id_of
from nmc.api.openapi import BASE_PATH
from nmc.api.problems import (
    Problem,
    berichttype_unavailable,
    database_unavailable,
    internal_error,
    missing_personalisation,
    problem_for,
    problem_from_db_error,
)
from nmc.api.services import caller, services_of
from nmc.api.validation import (
    ValidationFailed,
    no_query_parameters,
    parse_notificatie_id,
    validate_batch,
    validate_centraal,
    validate_decentraal,
    validate_lijst_query,
    violation,
)
from nmc.crypto.peppers import dvref_hmacs_all

# SQLSTATEs whose DETAIL is the 0-based index of the offending item, and the field it names.
ITEM_FIELDS = {
    sqlstates.DVREF_CONFLICT: "dvRef",
    sqlstates.BERICHTTYPE_NOT_ALLOWED: "berichtType",
    sqlstates.GELDIG_TOT_OUT_OF_RANGE: "geldigTot",
    sqlstates.MISSING_PERSONALISATION: "berichtgegevens",
    sqlstates.BERICHTTYPE_UNAVAILABLE: "berichtType",
}
DVREF_CONFLICT = "is al gebruikt voor een notificatie met een andere inhoud"


def location_of(notificatie_id: uuid.UUID) -> str:
    return f"{BASE_PATH}/notificaties/{notificatie_id}"


# --------------------------------------------------------------------------------------------
# Intake


async def intake_decentraal(request: Request) -> Response:
    return await _intake(request, "decentraal")


async def intake_centraal(request: Request) -> Response:
    return await _intake(request, "centraal")


async def intake_decentraal_batch(request: Request) -> Response:
    return await _intake_batch(request, "decentraal")


async def intake_centraal_batch(request: Request) -> Response:
    return await _intake_batch(request, "centraal")


async def _intake(request: Request, regie: str) -> Response:
    services = services_of(request)
    dv = await caller(request)
    no_query_parameters(request.query_params.multi_items())
    body = await read_json(request, services.settings.max_body_bytes)
    validate = validate_decentraal if regie == "decentraal" else validate_centraal
    canonical = validate(body, now=await services.clock.now())
    try:
        notificatie_id = await intake.intake_one(
            services,
            dv.dv_id,
            regie,
            canonical,
            trace_id_of(request.scope),
            span_id_of(request.scope),
        )
    except psycopg.Error as error:
        raise intake_problem(error, batch=False) from None
    return JSONResponse(
        {"notificatieId": str(notificatie_id)},
        status_code=202,
        headers={"Location": location_of(notificatie_id)},
    )


async def _intake_batch(request: Request, regie: str) -> Response:
    services = services_of(request)
    dv = await caller(request)
    no_query_parameters(request.query_params.multi_items())
    body = await read_json(request, services.settings.max_batch_body_bytes)
    batch = validate_batch(body, regie, now=await services.clock.now())  # type: ignore[arg-type]
    try:
        ids = await intake.intake_batch(
            services,
            dv.dv_id,
            regie,
            batch["batchId"],
            batch["notificaties"],
            trace_id_of(request.scope),
            span_id_of(request.scope),
        )
    except psycopg.Error as error:
        raise intake_problem(error, batch=True) from None
    return batch_accepted(batch["batchId"], ids)


def batch_accepted(batch_id: str | None, ids: list[str]) -> Response:
    """The 202 of a batch: `{"batchId": ..., "notificaties": [{"notificatieId": id}, ...]}`.

    The same bytes as JSONResponse, assembled directly: building and encoding a thousand small
    dicts costs more than the rest of the answer. The ids are PostgreSQL's text form of a UUID
    (hex digits and hyphens), which JSON needs no escaping for.
    """
    members = ",".join([f'{{"notificatieId":"{i}"}}' for i in ids])
    body = f'{{"batchId":{json.dumps(batch_id)},"notificaties":[{members}]}}'
    return Response(body.encode("utf-8"), status_code=202, media_type="application/json")


def intake_problem(error: psycopg.Error, *, batch: bool) -> Problem:
    """The problem for a refused intake; an item-index DETAIL points at `notificaties[i].`."""
    if database_unavailable(error):
        return problem_for(error)  # no answer from the database (gone, shutting down): 503
    sqlstate = error.sqlstate
    prefix = ""
    if batch and sqlstate in ITEM_FIELDS:
        detail = (error.diag.message_detail or "").strip()
        if detail.isascii() and detail.isdigit():
            prefix = f"notificaties[{int(detail)}]."
    if sqlstate == sqlstates.MISSING_PERSONALISATION:
        return missing_personalisation(prefix, placeholder_names(error.diag.message_hint))
    if sqlstate == sqlstates.BERICHTTYPE_UNAVAILABLE:
        return berichttype_unavailable(prefix)
    problem = problem_from_db_error(error, field_prefix=prefix)
    if sqlstate == sqlstates.DVREF_CONFLICT:
        # A 409 still names the field (and the item), as the 400s do.
        problem.members["violations"] = [violation(prefix + "dvRef", DVREF_CONFLICT)]
    return problem


def placeholder_names(hint: str | None) -> list[str]:
    """The missing placeholder names nmc.intake_notificaties_v3 gives in HINT (a JSON array
    of the template's names, never a request value); anything else gives none."""
    try:
        names = json.loads(hint or "[]")
    except ValueError:
        return []
    if not isinstance(names, list):
        return []
    return [n for n in names if isinstance(n, str)]


# --------------------------------------------------------------------------------------------
# Status, search, cancel


async def get_notificatie(request: Request) -> Response:
    services = services_of(request)
    dv = await caller(request)
    no_query_parameters(request.query_params.multi_items())
    notificatie_id = parse_notificatie_id(request.path_params["notificatieId"])
    row = await sql_calls.fetch_one(
        services.pool, "get_notificatie", {"dv_id": dv.dv_id, "id": notificatie_id}
    )
    notificatie = row[0] if row else None
    if not isinstance(notificatie, dict):
        raise internal_error()
    etag = f'"{notificatie["versie"]}"'
    if etag_matches(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers={"ETag": etag})
    return JSONResponse(notificatie, headers={"ETag": etag})


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110 §13.1.2: `*`, or any listed tag equal by weak comparison."""
    if not if_none_match:
        return False
    for candidate in if_none_match.split(","):
        tag = candidate.strip()
        if tag == "*" or tag.removeprefix("W/") == etag:
            return True
    return False


async def find_notificaties(request: Request) -> Response:
    services = services_of(request)
    dv = await caller(request)
    query = validate_lijst_query(request.query_params.multi_items())
    voor_op: datetime | None = None
    voor_id: uuid.UUID | None = None
    if query["cursor"] is not None:
        try:
            voor_op, voor_id = lijst_cursor.decode(query["cursor"])
        except lijst_cursor.InvalidCursor:
            raise ValidationFailed(
                [violation("cursor", "is geen geldige cursor", "query")]
            ) from None
    # Every live pepper version: rows stored before a rotation are found too.
    macs = [
        mac for mac, _ in dvref_hmacs_all(dv.dv_id, query["dvRef"], pepper_set=services.peppers)
    ]
    limiet = query["limiet"]
    rows = await sql_calls.fetch_all(
        services.pool,
        "find_notificaties",
        {
            "dv_id": dv.dv_id,
            "dvref_hmacs": macs,
            "limiet": limiet + 1,  # one more than shown tells whether a next page exists
            "voor_aangenomen_op": voor_op,
            "voor_id": voor_id,
        },
    )
    page = [row[0] for row in rows[:limiet]]
    cursor = None
    if len(rows) > limiet:
        last = page[-1]
        cursor = lijst_cursor.encode(
            datetime.fromisoformat(last["aangenomenOp"]), uuid.UUID(last["notificatieId"])
        )
    return JSONResponse(
        {
            "notificaties": [
                {name: value for name, value in n.items() if name != "pogingen"} for n in page
            ],
            "cursor": cursor,
        }
    )


async def cancel_notificatie(request: Request) -> Response:
    services = services_of(request)
    dv = await caller(request)
    no_query_parameters(request.query_params.multi_items())
    notificatie_id = parse_notificatie_id(request.path_params["notificatieId"])
    await sql_calls.fetch_one(
        services.pool, "cancel_notificatie", {"dv_id": dv.dv_id, "id": notificatie_id}
    )
    services.werk.meld()  # its event is a webhook's work
    return Response(status_code=204)


async def notificatie(request: Request) -> Response:
    if request.method == "DELETE":
        return await cancel_notificatie(request)
    return await get_notificatie(request)


def routes() -> list[Route]:
    base = BASE_PATH
    return [
        Route(f"{base}/decentraal/notificaties", intake_decentraal, methods=["POST"]),
        Route(f"{base}/decentraal/notificaties/_batch", intake_decentraal_batch, methods=["POST"]),
        Route(f"{base}/centraal/notificaties", intake_centraal, methods=["POST"]),
        Route(f"{base}/centraal/notificaties/_batch", intake_centraal_batch, methods=["POST"]),
        Route(f"{base}/notificaties", find_notificaties, methods=["GET"]),
        # One route for both methods, so a 405 lists both in its Allow header.
        Route(f"{base}/notificaties/{{notificatieId}}", notificatie, methods=["GET", "DELETE"]),
    ]
