"""The DV's endpoints (SPEC §7): intake, batch intake, status, dvRef search, cancel.

Each handler authenticates, validates, seals, and makes one SQL call; the lifecycle rules
(quota, berichttype, geldigTot range, idempotency, cancel) are the SQL functions' answers.
"""

import dataclasses
import json
import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

import psycopg
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from nmc.api import db, lijst_cursor
from nmc.api.body import read_json
from nmc.api.ids import new_notificatie_ids
from nmc.api.middleware import trace_id_of
from nmc.api.openapi import BASE_PATH
from nmc.api.problems import (
    Problem,
    database_unavailable,
    internal_error,
    problem_for,
    problem_from_db_error,
)
from nmc.api.services import Services, caller, services_of
from nmc.api.validation import (
    ValidationFailed,
    parse_notificatie_id,
    recipient_of,
    validate_batch,
    validate_centraal,
    validate_decentraal,
    validate_lijst_query,
    violation,
)
from nmc.canonical_json import berichtgegevens_json, canonical_payload, payload_hash
from nmc.peppers import (
    PURPOSE_DVREF,
    PURPOSE_PAYLOAD,
    dvref_hmac_many,
    dvref_hmacs_all,
    payload_hmac_many,
)
from nmc.sealing import seal_many

# SQLSTATEs whose DETAIL is the 0-based index of the offending item, and the field it names.
ITEM_FIELDS = {"NM007": "dvRef", "NM008": "berichtType", "NM014": "geldigTot"}
DVREF_CONFLICT = "is al gebruikt voor een notificatie met een andere inhoud"
# The intake asks for the unkeyed payload hashes, to judge a replay of a row stored before
# the payload pepper (nmc.intake_notificaties_v2): not a refusal, the call is made again.
SHA256_NODIG = "NMP01"

T = TypeVar("T")


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
    body = await read_json(request, services.settings.max_body_bytes)
    validate = validate_decentraal if regie == "decentraal" else validate_centraal
    canonical = validate(body, now=await services.clock.now())
    items = sealed_items(services, dv.dv_id, [canonical], trace_id_of(request.scope))
    notificatie_id = await call_intake(
        lambda items: db.intake_one(
            services.pool,
            dv_id=dv.dv_id,
            regie=regie,
            pepper_versie=services.pepper_versie,
            kek_id=services.ring.active_id,
            batch_id=canonical["batchId"],
            items=items,
        ),
        items,
        [canonical],
        batch=False,
    )
    return JSONResponse(
        {"notificatieId": str(notificatie_id)},
        status_code=202,
        headers={"Location": location_of(notificatie_id)},
    )


async def _intake_batch(request: Request, regie: str) -> Response:
    services = services_of(request)
    dv = await caller(request)
    body = await read_json(request, services.settings.max_batch_body_bytes)
    batch = validate_batch(body, regie, now=await services.clock.now())  # type: ignore[arg-type]
    items = sealed_items(services, dv.dv_id, batch["notificaties"], trace_id_of(request.scope))
    ids = await call_intake(
        lambda items: db.intake_many(
            services.pool,
            dv_id=dv.dv_id,
            regie=regie,
            pepper_versie=services.pepper_versie,
            kek_id=services.ring.active_id,
            batch_id=batch["batchId"],
            items=items,
        ),
        items,
        batch["notificaties"],
        batch=True,
    )
    return batch_accepted(batch["batchId"], ids)


async def call_intake(
    call: Callable[[db.IntakeItems], Awaitable[T]],
    items: db.IntakeItems,
    canonicals: list[dict[str, Any]],
    *,
    batch: bool,
) -> T:
    """`call(items)`; made once more with the unkeyed payload hashes when the database asks
    for them (NMP01: a replay of a row stored before the payload pepper). Only then are
    they computed and sent: a new row never stores one."""
    try:
        return await call(items)
    except psycopg.Error as error:
        if error.sqlstate != SHA256_NODIG:
            raise intake_problem(error, batch=batch) from None
    with_sha256 = dataclasses.replace(
        items, sha256_hashes=[payload_hash(idempotency_form(c)) for c in canonicals]
    )
    try:
        return await call(with_sha256)
    except psycopg.Error as error:
        raise intake_problem(error, batch=batch) from None


def batch_accepted(batch_id: str | None, ids: list[str]) -> Response:
    """The 202 of a batch: `{"batchId": ..., "notificaties": [{"notificatieId": id}, ...]}`.

    The same bytes as JSONResponse, assembled directly: building and encoding a thousand small
    dicts costs more than the rest of the answer. The ids are PostgreSQL's text form of a UUID
    (hex digits and hyphens), which JSON needs no escaping for.
    """
    members = ",".join([f'{{"notificatieId":"{i}"}}' for i in ids])
    body = f'{{"batchId":{json.dumps(batch_id)},"notificaties":[{members}]}}'
    return Response(body.encode("utf-8"), status_code=202, media_type="application/json")


def sealed_items(
    services: Services, dv_id: int, canonicals: list[dict[str, Any]], trace_id: str
) -> db.IntakeItems:
    """HMAC and encrypt validated notificaties: nothing readable leaves this function."""
    ids = new_notificatie_ids(len(canonicals))
    dvrefs = [c["dvRef"] for c in canonicals]
    gegevens_jsons = [berichtgegevens_json(c["berichtgegevens"]) for c in canonicals]
    payloads = [
        canonical_payload(idempotency_form(c), gegevens_json=g)
        for c, g in zip(canonicals, gegevens_jsons, strict=True)
    ]
    payload_versie = services.peppers.for_purpose(PURPOSE_PAYLOAD).current
    sealed = seal_many(
        dv_id,
        [(i, recipient_of(c), g) for i, c, g in zip(ids, canonicals, gegevens_jsons, strict=True)],
        ring=services.ring,
    )
    return db.IntakeItems(
        ids=ids,
        berichttypen=[c["berichtType"] for c in canonicals],
        dvref_hmacs=dvref_hmac_many(
            dv_id, dvrefs, services.pepper_versie, pepper_set=services.peppers
        ),
        payload_hmacs=payload_hmac_many(
            dv_id, payloads, payload_versie, pepper_set=services.peppers
        ),
        payload_pepper_versie=payload_versie,
        ontvangers=sealed.recipients,
        gegevens=sealed.berichtgegevens,
        sleutels=sealed.wrapped_keys,
        geldig_tot=[c["geldigTot"] for c in canonicals],
        trace_ids=[trace_id] * len(canonicals),
        diensten=[c["dienst"] for c in canonicals],
        vorige_hmacs=earlier_pepper_hmacs(services, dv_id, dvrefs),
        vorige_payload_hmacs=earlier_payload_hmacs(services, dv_id, payloads),
    )


def earlier_pepper_hmacs(services: Services, dv_id: int, dvrefs: list[str]) -> list[bytes] | None:
    """Each dvRef's HMAC under every earlier live pepper version, item by item; None while
    only the current version is live. A DV replaying a request accepted before a pepper
    rotation gets its stored notification back, not a second one (SPEC §7 idempotency)."""
    earlier = services.peppers.for_purpose(PURPOSE_DVREF).earlier()
    if not earlier:
        return None
    per_version = [dvref_hmac_many(dv_id, dvrefs, v, pepper_set=services.peppers) for v in earlier]
    return [mac for item in zip(*per_version, strict=True) for mac in item]


def earlier_payload_hmacs(
    services: Services, dv_id: int, payloads: list[bytes]
) -> list[bytes] | None:
    """Each request's payload HMAC under every earlier live payload pepper version, item by
    item; None while only the current version is live (as `earlier_pepper_hmacs`)."""
    earlier = services.peppers.for_purpose(PURPOSE_PAYLOAD).earlier()
    if not earlier:
        return None
    per_version = [
        payload_hmac_many(dv_id, payloads, v, pepper_set=services.peppers) for v in earlier
    ]
    return [mac for item in zip(*per_version, strict=True) for mac in item]


def idempotency_form(canonical: Mapping[str, Any]) -> dict[str, Any]:
    """The canonical request without its batchId: a batch id only groups (SPEC §7), so a DV
    that resends a notification in another batch (a retried batch with a fresh id) gets its
    stored id back instead of a 409."""
    return {name: value for name, value in canonical.items() if name != "batchId"}


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
    problem = problem_from_db_error(error, field_prefix=prefix)
    if sqlstate == "NM007":
        # A 409 still names the field (and the item), as the 400s do.
        problem.members["violations"] = [violation(prefix + "dvRef", DVREF_CONFLICT)]
    return problem


# --------------------------------------------------------------------------------------------
# Status, search, cancel


async def get_notificatie(request: Request) -> Response:
    services = services_of(request)
    dv = await caller(request)
    notificatie_id = parse_notificatie_id(request.path_params["notificatieId"])
    row = await db.call_one(
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
    rows = await db.call_all(
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
    notificatie_id = parse_notificatie_id(request.path_params["notificatieId"])
    await db.call_one(
        services.pool, "cancel_notificatie", {"dv_id": dv.dv_id, "id": notificatie_id}
    )
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
