"""RFC 9457 problem responses (`application/problem+json`) and the SQLSTATE-to-problem table.

Every problem type has a stable slug under a configurable base URI (default
`https://mijnoverheidzakelijk.nl/nmc/problemen/`); a DV may program against the slugs. The app
sets `app.state.problem_base_uri` to override the base; `exception_handlers()` gives Starlette
the handlers that turn our exceptions into problems.

Database errors are mapped by SQLSTATE and the structured `diag` fields only, never by reading
the message text (STYLE: "Python maps SQLSTATE to an exception class and an HTTP problem").
Nothing a problem carries comes from the request's values: details are fixed texts, and what is
taken from `diag` is checked against a closed set (a status) or parsed as an integer.
"""

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import psycopg
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from nmc import sqlstates
from nmc.api.validation import AddressRefused, ValidationFailed, Violation, violation
from nmc.auth.errors import JwksUnavailable, Unauthenticated
from nmc.status import NOTIFICATIE_STATUSES

log = logging.getLogger(__name__)

DEFAULT_BASE_URI = "https://mijnoverheidzakelijk.nl/nmc/problemen/"
PROBLEM_MEDIA_TYPE = "application/problem+json"
DEFAULT_RETRY_AFTER_SECONDS = 60
MAX_RETRY_AFTER_SECONDS = 86_400
BEARER_REALM = "nmc"


@dataclass(frozen=True)
class ProblemType:
    slug: str
    status: int
    title: str


PROBLEM_TYPES: Mapping[str, ProblemType] = {
    t.slug: t
    for t in (
        ProblemType("ongeldige-invoer", 400, "De invoer is ongeldig."),
        ProblemType("niet-geauthenticeerd", 401, "Niet geauthenticeerd."),
        ProblemType("geen-toegang", 403, "Geen toegang."),
        ProblemType("niet-gevonden", 404, "Niet gevonden."),
        ProblemType("cursor-vervallen", 410, "De cursor is vervallen."),
        ProblemType("conflict", 409, "Conflict met de huidige toestand."),
        ProblemType(
            "ontbrekende-personalisatie", 422, "De berichtgegevens missen velden van de template."
        ),
        ProblemType("berichttype-niet-beschikbaar", 422, "Het berichttype is niet beschikbaar."),
        ProblemType("niet-ondersteund-mediatype", 415, "Niet-ondersteund mediatype."),
        ProblemType("emailadres-geweigerd", 422, "Het e-mailadres wordt door NotifyNL geweigerd."),
        ProblemType("quotum-overschreden", 429, "Het quotum is overschreden."),
        ProblemType("aanroeplimiet-overschreden", 429, "De aanroeplimiet is overschreden."),
        ProblemType("interne-fout", 500, "Interne fout."),
    )
}


class Problem(Exception):
    """An HTTP problem. Raise it from a handler, or build one and call `to_response`.

    `slug` None gives `type: about:blank` (RFC 9457 §4.2.1) for statuses without an own type,
    such as 405; its title is then the HTTP reason phrase.
    """

    def __init__(
        self,
        slug: str | None,
        detail: str,
        *,
        status: int | None = None,
        members: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ):
        if slug is not None and slug not in PROBLEM_TYPES:
            raise ValueError(f"unknown problem type {slug!r}")
        if slug is None and status is None:
            raise ValueError("a problem without a type needs a status")
        super().__init__(detail)
        self.slug = slug
        self.status = PROBLEM_TYPES[slug].status if slug else int(status or 500)
        self.title = PROBLEM_TYPES[slug].title if slug else HTTPStatus(self.status).phrase
        self.detail = detail
        self.members = dict(members or {})
        self.headers = dict(headers or {})

    def type_uri(self, base_uri: str = DEFAULT_BASE_URI) -> str:
        if self.slug is None:
            return "about:blank"
        return _join(base_uri, self.slug)

    def to_dict(self, base_uri: str = DEFAULT_BASE_URI) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": self.type_uri(base_uri),
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }
        body.update(self.members)
        return body

    def to_response(self, base_uri: str = DEFAULT_BASE_URI) -> Response:
        return JSONResponse(
            self.to_dict(base_uri),
            status_code=self.status,
            headers=self.headers,
            media_type=PROBLEM_MEDIA_TYPE,
        )


def _join(base_uri: str, slug: str) -> str:
    return base_uri + slug if base_uri.endswith("/") else f"{base_uri}/{slug}"


# --------------------------------------------------------------------------------------------
# Constructors, one per problem type


def invalid_input(
    violations: list[Violation], detail: str = "Een of meer velden zijn ongeldig."
) -> Problem:
    return Problem("ongeldige-invoer", detail, members={"violations": list(violations)})


MISSING_REASON = "De template van dit berichttype vraagt dit veld."
UNAVAILABLE_REASON = "Dit berichttype kan nu niet worden verzonden."


def invalid_param(name: str, code: str, reason: str) -> dict[str, str]:
    """One entry of `invalidParams` (the NL API Design Rules' problem extension)."""
    return {"name": name, "code": code, "reason": reason}


def missing_personalisation(field_prefix: str, names: list[str]) -> Problem:
    """422: the berichtgegevens lack these placeholders of the berichttype's NotifyNL
    template (names as the template spells them; never a value)."""
    return Problem(
        "ontbrekende-personalisatie",
        "De berichtgegevens missen velden die de NotifyNL-template van dit berichttype vraagt.",
        members={
            "invalidParams": [
                invalid_param(f"{field_prefix}berichtgegevens.{name}", "required", MISSING_REASON)
                for name in names
            ]
        },
    )


def berichttype_unavailable(field_prefix: str) -> Problem:
    """422: the berichttype's NotifyNL template is gone; nothing of it can be sent now."""
    return Problem(
        "berichttype-niet-beschikbaar",
        "De NotifyNL-template van dit berichttype bestaat niet meer; het beheer van het NMC "
        "is gewaarschuwd.",
        members={
            "invalidParams": [
                invalid_param(f"{field_prefix}berichtType", "unavailable", UNAVAILABLE_REASON)
            ]
        },
    )


def address_refused(violations: list[Violation]) -> Problem:
    """422: NotifyNL would refuse these e-mail addresses (`violations` names each one)."""
    return Problem(
        "emailadres-geweigerd",
        "NotifyNL zou een of meer e-mailadressen weigeren; de notificatie kan zo niet worden "
        "verzonden.",
        members={"violations": list(violations)},
    )


def unauthenticated(reason: str, *, token_present: bool = True) -> Problem:
    """401 with an RFC 6750 challenge; without a token the challenge carries no error code."""
    challenge = f'Bearer realm="{BEARER_REALM}"'
    if token_present:
        challenge += f', error="invalid_token", error_description="{_header_safe(reason)}"'
    return Problem("niet-geauthenticeerd", reason, headers={"WWW-Authenticate": challenge})


def forbidden(detail: str = "Deze dienstverlener is niet bekend bij het NMC.") -> Problem:
    return Problem("geen-toegang", detail)


def not_found(detail: str = "De gevraagde notificatie bestaat niet.") -> Problem:
    return Problem("niet-gevonden", detail)


def conflict(detail: str, **members: Any) -> Problem:
    return Problem("conflict", detail, members=members)


def quota_exceeded(retry_after: int) -> Problem:
    return Problem(
        "quotum-overschreden",
        "Het quotum van deze dienstverlener is bereikt; probeer het later opnieuw.",
        headers={"Retry-After": str(_clamp_retry_after(retry_after))},
    )


def rate_limited(
    retry_after: int, detail: str = "Te veel aanroepen in korte tijd; probeer het later opnieuw."
) -> Problem:
    return Problem(
        "aanroeplimiet-overschreden",
        detail,
        headers={"Retry-After": str(_clamp_retry_after(retry_after))},
    )


def cursor_expired() -> Problem:
    return Problem(
        "cursor-vervallen",
        "De cursor is vervallen; begin opnieuw bij het oudste beschikbare event.",
    )


def unsupported_media_type(expected: str = "application/json") -> Problem:
    return Problem("niet-ondersteund-mediatype", f"Het verzoek moet {expected} zijn.")


def internal_error() -> Problem:
    return Problem("interne-fout", "Er ging iets mis in het NMC; probeer het later opnieuw.")


def service_unavailable(
    detail: str = "Het NMC is tijdelijk niet bereikbaar; probeer het later opnieuw.",
    retry_after: int = DEFAULT_RETRY_AFTER_SECONDS,
) -> Problem:
    """503 (about:blank): the database cannot be reached now; the request may be repeated."""
    return Problem(
        None,
        detail,
        status=503,
        headers={"Retry-After": str(_clamp_retry_after(retry_after))},
    )


def _clamp_retry_after(seconds: int) -> int:
    return max(1, min(int(seconds), MAX_RETRY_AFTER_SECONDS))


def _header_safe(text: str) -> str:
    """Keep only the characters RFC 6750 allows in error_description."""
    return "".join(ch for ch in text if ch in _DESCRIPTION_CHARS)


_DESCRIPTION_CHARS = frozenset(chr(c) for c in (0x20, 0x21, *range(0x23, 0x5C), *range(0x5D, 0x7F)))


# --------------------------------------------------------------------------------------------
# SQLSTATE table


@dataclass(frozen=True)
class DbErrorMapping:
    """How one SQLSTATE of the NMC's functions becomes a problem.

    `violation_field`: a 400 with one violation on that body field (prefixed for batch items).
    `retry_after_from_detail`: diag DETAIL holds Retry-After seconds as an integer string
    (a 429 of the mapping's slug: the intake quota or the feed call rate).
    `status_from_detail`: diag DETAIL holds the notification's current status.
    """

    slug: str
    detail: str
    violation_field: str | None = None
    retry_after_from_detail: bool = False
    status_from_detail: bool = False


SQLSTATE_PROBLEMS: Mapping[str, DbErrorMapping] = {
    sqlstates.TRANSITION_NOT_ALLOWED: DbErrorMapping(
        "conflict", "Deze statusovergang is niet toegestaan."
    ),
    sqlstates.EVENT_MISSING: DbErrorMapping("interne-fout", "Er ging iets mis in het NMC."),
    sqlstates.VERSION_NOT_NEXT: DbErrorMapping("interne-fout", "Er ging iets mis in het NMC."),
    sqlstates.EVENT_LOG_APPEND_ONLY: DbErrorMapping("interne-fout", "Er ging iets mis in het NMC."),
    sqlstates.NOT_FOUND: DbErrorMapping("niet-gevonden", "De gevraagde notificatie bestaat niet."),
    sqlstates.CANCEL_REFUSED: DbErrorMapping(
        "conflict",
        "Annuleren kan alleen zolang de notificatie de status aangenomen heeft.",
        status_from_detail=True,
    ),
    sqlstates.DVREF_CONFLICT: DbErrorMapping(
        "conflict",
        "Deze dvRef is al gebruikt voor een notificatie met een andere inhoud.",
    ),
    sqlstates.BERICHTTYPE_NOT_ALLOWED: DbErrorMapping(
        "ongeldige-invoer",
        "berichttype is niet toegestaan voor deze dienstverlener en regie",
        violation_field="berichtType",
    ),
    sqlstates.QUOTA_EXCEEDED: DbErrorMapping(
        "quotum-overschreden", "Het quotum is bereikt.", retry_after_from_detail=True
    ),
    sqlstates.UNKNOWN_DIENSTVERLENER: DbErrorMapping(
        "geen-toegang", "Deze dienstverlener is niet bekend bij het NMC."
    ),
    sqlstates.STALE_CLAIM: DbErrorMapping(
        "conflict", "De claim is verlopen en door een ander overgenomen."
    ),
    sqlstates.CLOCK_BACKWARDS: DbErrorMapping(
        "ongeldige-invoer", "De klok kan niet zo worden verzet."
    ),
    sqlstates.REASON_MISMATCH: DbErrorMapping(
        "ongeldige-invoer", "De reden past niet bij de status."
    ),
    sqlstates.GELDIG_TOT_OUT_OF_RANGE: DbErrorMapping(
        "ongeldige-invoer",
        "ligt niet binnen de geldigheid die voor dit berichttype is toegestaan",
        violation_field="geldigTot",
    ),
    # The feed.
    sqlstates.CURSOR_EXPIRED: DbErrorMapping(
        "cursor-vervallen",
        "De cursor is vervallen; begin opnieuw bij het oudste beschikbare event of bij een "
        "snapshot.",
    ),
    sqlstates.FEED_RATE_EXCEEDED: DbErrorMapping(
        "aanroeplimiet-overschreden",
        "Te veel aanroepen in korte tijd; probeer het later opnieuw.",
        retry_after_from_detail=True,
    ),
}


def problem_from_db_error(error: BaseException, *, field_prefix: str = "") -> Problem:
    """The problem for a database error, by its SQLSTATE; anything unknown is an internal error.

    Works on any psycopg error (reads `sqlstate` and `diag.message_detail`). `field_prefix`
    places a violation inside a batch, e.g. "notificaties[3].".
    """
    sqlstate = getattr(error, "sqlstate", None)
    mapping = SQLSTATE_PROBLEMS.get(sqlstate or "")
    if mapping is None or mapping.slug == "interne-fout":
        # Never log diag or message: a unique-violation DETAIL, for one, quotes column values.
        log.error(
            "database error mapped to 500: sqlstate=%s class=%s", sqlstate, type(error).__name__
        )
        return internal_error()
    detail_text = _diag_detail(error)
    if mapping.violation_field is not None:
        return invalid_input(
            [violation(field_prefix + mapping.violation_field, mapping.detail)],
            detail="Een of meer velden zijn ongeldig.",
        )
    if mapping.retry_after_from_detail:
        if mapping.slug == "aanroeplimiet-overschreden":
            return rate_limited(_retry_after(detail_text))
        return quota_exceeded(_retry_after(detail_text))
    if mapping.status_from_detail:
        members = {}
        if detail_text in NOTIFICATIE_STATUSES:
            members["notificatieStatus"] = detail_text
        return conflict(mapping.detail, **members)
    return Problem(mapping.slug, mapping.detail)


def _diag_detail(error: BaseException) -> str | None:
    diag = getattr(error, "diag", None)
    detail = getattr(diag, "message_detail", None) if diag is not None else None
    return detail.strip() if isinstance(detail, str) else None


def _retry_after(text: str | None) -> int:
    if text and text.isascii() and text.isdigit():
        return _clamp_retry_after(int(text))
    return DEFAULT_RETRY_AFTER_SECONDS


# --------------------------------------------------------------------------------------------
# Starlette integration


def base_uri_of(request: Request) -> str:
    return getattr(request.app.state, "problem_base_uri", None) or DEFAULT_BASE_URI


# The server is going away or not there yet: a fast shutdown ends every session with 57P01,
# a starting server refuses with 57P03, class 08 is a broken connection. None of these is a
# fault of the request: like no connection at all, they are a 503 the caller may repeat.
UNAVAILABLE_SQLSTATES = frozenset(
    {sqlstates.ADMIN_SHUTDOWN, sqlstates.CRASH_SHUTDOWN, sqlstates.CANNOT_CONNECT_NOW}
)


def database_unavailable(exc: BaseException) -> bool:
    """Whether `exc` means the database cannot answer now (rather than refused the call)."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    sqlstate = exc.sqlstate
    return (
        sqlstate is None
        or sqlstate.startswith(sqlstates.CONNECTION_EXCEPTION_CLASS)
        or sqlstate in UNAVAILABLE_SQLSTATES
    )


def problem_for(exc: BaseException) -> Problem:
    """The problem for any exception the API can meet."""
    if isinstance(exc, Problem):
        return exc
    if isinstance(exc, AddressRefused):
        return address_refused(exc.violations)
    if isinstance(exc, ValidationFailed):
        return invalid_input(exc.violations)
    if isinstance(exc, Unauthenticated):
        return unauthenticated(exc.reason, token_present=exc.token_present)
    if isinstance(exc, JwksUnavailable):
        log.error("bearer verification impossible: %s", exc)
        return internal_error()
    if isinstance(exc, HTTPException):
        return _from_http_exception(exc)
    if database_unavailable(exc):
        # No connection (pool timeout, server gone or shutting down): the caller may retry
        # (intake is idempotent).
        log.error("database unreachable: %s", type(exc).__name__)
        return service_unavailable()
    if getattr(exc, "sqlstate", None) is not None:
        return problem_from_db_error(exc)
    log.error("unhandled %s mapped to 500", type(exc).__name__)
    return internal_error()


_HTTP_SLUGS = {
    400: "ongeldige-invoer",
    401: "niet-geauthenticeerd",
    403: "geen-toegang",
    404: "niet-gevonden",
    409: "conflict",
    415: "niet-ondersteund-mediatype",
    500: "interne-fout",
}


def _from_http_exception(exc: HTTPException) -> Problem:
    slug = _HTTP_SLUGS.get(exc.status_code)
    headers = dict(exc.headers or {})
    if slug == "niet-geauthenticeerd":
        problem = unauthenticated("niet geauthenticeerd", token_present=False)
        problem.headers.update(headers)
        return problem
    if slug == "ongeldige-invoer":
        return Problem(slug, "Het verzoek is ongeldig.", members={"violations": []})
    detail = PROBLEM_TYPES[slug].title if slug else HTTPStatus(exc.status_code).phrase + "."
    return Problem(slug, detail, status=exc.status_code, headers=headers)


async def problem_handler(request: Request, exc: Exception) -> Response:
    return problem_for(exc).to_response(base_uri_of(request))


def exception_handlers() -> dict[Any, Callable[..., Any]]:
    """Handlers for `Starlette(exception_handlers=...)`: every error leaves as a problem.

    The `Exception` entry is Starlette's 500 handler; Starlette still re-raises the exception
    afterwards, so server logs and TestClient see it.
    """
    return {
        Problem: problem_handler,
        ValidationFailed: problem_handler,
        Unauthenticated: problem_handler,
        JwksUnavailable: problem_handler,
        HTTPException: problem_handler,
        psycopg.Error: problem_handler,
        Exception: problem_handler,
    }
