"""POST /api/nmc/v1/notifynl-callback: NotifyNL's delivery receipts (SPEC §6).

The contract: docs/notifynl-callback.md.

NotifyNL retries only on connection errors, timeouts, 5xx and 429; any other 4xx loses the
receipt. So: 401 (counted) only for a bad token, 400 (counted) only for a payload that is not
a receipt, 200 for everything stored or deliberately ignored (a duplicate, an unknown
reference), and 503 when the receipt could not be stored, so that NotifyNL tries again.

The payload's `to` (the e-mail address) is never read: it is not validated, stored, logged or
echoed. Violations name fields, never values.
"""

import hmac
import logging
import re
import uuid
from datetime import UTC, datetime
from typing import Any

import psycopg
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from nmc import sql_calls
from nmc.api.body import is_json_media_type, parse_json, read_body
from nmc.api.openapi import BASE_PATH
from nmc.api.problems import Problem, invalid_input, service_unavailable, unauthenticated
from nmc.api.services import Services, services_of
from nmc.api.validation import Violation, parse_rfc3339, violation

log = logging.getLogger(__name__)

CALLBACK_PATH = f"{BASE_PATH}/notifynl-callback"
REFERENCE_MAX = 1000  # NotifyNL's own limit
STATUS_MAX = 100

_UUID = re.compile(r"\A[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\Z")
# GOV.UK Notify has sent timestamps without an offset; they are UTC.
_NAIVE_ISO = re.compile(r"\A\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?\Z")


class ReceiptRejected(Exception):
    def __init__(self, violations: list[Violation]):
        super().__init__(f"{len(violations)} violation(s)")
        self.violations = violations


async def notifynl_callback(request: Request) -> Response:
    services = services_of(request)
    expected = services.settings.callback_token
    if expected is None:
        log.error("NotifyNL callback refused: NMC_NOTIFYNL_CALLBACK_TOKEN is not set")
        return unavailable().to_response(services.settings.problem_base_uri)
    authorization = request.headers.getlist("authorization")  # sent twice: refused
    if len(authorization) != 1 or not token_matches(authorization[0], expected):
        await count_refused(services)
        raise unauthenticated("ongeldig callback-token")

    try:
        receipt = await read_receipt(request, services)
    except ReceiptRejected as rejected:
        await count_malformed(services)
        raise invalid_input(rejected.violations, "Dit is geen geldige NotifyNL-callback.") from None

    try:
        resultaat = await services.receipts.store(receipt)
    except psycopg.Error as error:  # also PoolTimeout: no connection within the wait
        # Not stored: a 5xx makes NotifyNL retry. Never log the error text (it could quote
        # parameters); the class and SQLSTATE are enough to act on.
        log.error(
            "receipt not stored: %s sqlstate=%s",
            type(error).__name__,
            getattr(error, "sqlstate", None),
        )
        return unavailable().to_response(services.settings.problem_base_uri)
    return JSONResponse({"resultaat": resultaat})


def token_matches(authorization: str | None, expected: str) -> bool:
    """`Bearer <token>` equal to the configured token, compared in constant time."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    given = token.strip().encode("utf-8", "surrogateescape")
    # compare_digest is constant-time for equal lengths; always run it, whatever the scheme.
    equal = hmac.compare_digest(given, expected.encode("utf-8"))
    return scheme.lower() == "bearer" and equal


async def read_receipt(request: Request, services: Services) -> dict[str, Any]:
    """The parameters of nmc.store_receipt, or ReceiptRejected listing what is wrong."""
    if not is_json_media_type(request.headers.get("content-type")):
        raise ReceiptRejected([violation("", "moet application/json zijn", "header")])
    try:
        body = parse_json(await read_body(request, services.settings.max_body_bytes))
    except Problem as problem:
        raise ReceiptRejected(problem.members.get("violations") or []) from None
    if not isinstance(body, dict):
        raise ReceiptRejected([violation("", "moet een JSON-object zijn")])
    return parse_receipt(body)


def parse_receipt(body: dict[str, Any]) -> dict[str, Any]:
    errors: list[Violation] = []
    notifynl_id = body.get("id")
    if not isinstance(notifynl_id, str) or not _UUID.match(notifynl_id):
        errors.append(violation("id", "moet een UUID zijn"))
    reference = body.get("reference")
    if reference is not None and (not isinstance(reference, str) or len(reference) > REFERENCE_MAX):
        errors.append(
            violation("reference", f"moet een tekst van ten hoogste {REFERENCE_MAX} tekens zijn")
        )
    status = body.get("status")
    if not isinstance(status, str) or not 1 <= len(status) <= STATUS_MAX:
        errors.append(violation("status", f"moet een tekst van 1 tot {STATUS_MAX} tekens zijn"))
    moments = {name: _moment(body.get(name), name, errors) for name in ("completed_at", "sent_at")}
    if errors:
        raise ReceiptRejected(errors)
    return {
        # A reference that is not one of our attempt ids is counted by store_receipt.
        "reference": reference,
        "notifynl_id": uuid.UUID(notifynl_id),  # type: ignore[arg-type]
        "status": status,
        **moments,
        **template_of(body),
    }


def template_of(body: dict[str, Any]) -> dict[str, Any]:
    """The template id and version the receipt names, for the delivery proof. Taken only when
    well-formed and otherwise left out (None): they are not what the receipt is about, so a
    malformed one must not lose the receipt (a 400 would: NotifyNL does not retry it)."""
    template_id = body.get("template_id")
    version = body.get("template_version")
    return {
        "template_id": (
            uuid.UUID(template_id)
            if isinstance(template_id, str) and _UUID.match(template_id)
            else None
        ),
        "template_versie": (
            version
            if isinstance(version, int) and not isinstance(version, bool) and 0 <= version < 10**9
            else None
        ),
    }


def _moment(value: Any, name: str, errors: list[Violation]) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        moment = parse_rfc3339(value)
        if moment is not None:
            return moment
        if _NAIVE_ISO.match(value):
            return datetime.fromisoformat(value.replace(" ", "T")).replace(tzinfo=UTC)
    errors.append(violation(name, "moet null of een ISO 8601-tijdstip zijn"))
    return None


async def count_malformed(services: Services) -> None:
    try:
        await sql_calls.fetch_one(services.pool, "count_malformed_receipt", {})
    except psycopg.Error as error:
        # The 400 stands either way: the payload is bad whether or not the count succeeds.
        log.error("malformed receipt not counted: %s", type(error).__name__)


async def count_refused(services: Services) -> None:
    """Count a callback refused with 401 (ADR 0024: rejected receipts are counted). Only the
    number: nothing of the request, and never its token, is kept or logged."""
    try:
        await services.receipts.count_refused()
    except psycopg.Error as error:
        # The 401 stands either way.
        log.error("refused callback not counted: %s", type(error).__name__)


def unavailable() -> Problem:
    return service_unavailable(
        "De ontvangstbevestiging kon niet worden opgeslagen; probeer het later opnieuw."
    )


def routes() -> list[Route]:
    return [Route(CALLBACK_PATH, notifynl_callback, methods=["POST"])]
