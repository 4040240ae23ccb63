"""The client's typed errors, each carrying the RFC 9457 problem the NMC answered.

The NMC answers every refusal as `application/problem+json` with a stable type slug under
its problem base URI (`…/problemen/cursor-vervallen`, `…/quotum-overschreden`, …); the
class of the error follows the HTTP status, the `slug` tells the two 429s apart. A response
that is not a problem (a gateway's HTML page, say) still becomes an error of the right class,
with an `about:blank` problem. Messages hold only the status, slug and the NMC's fixed detail
text: never a request value, so they are safe to log.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from http import HTTPStatus
from typing import Any

import httpx

_STANDARD_MEMBERS = ("type", "title", "status", "detail")


@dataclass(frozen=True)
class Problem:
    """One RFC 9457 problem: the standard members, and any extension members as `members`."""

    status: int
    type: str = "about:blank"
    title: str = ""
    detail: str = ""
    members: Mapping[str, Any] = field(default_factory=dict)

    @property
    def slug(self) -> str | None:
        """The last path segment of `type` (`cursor-vervallen`), None for about:blank."""
        if self.type == "about:blank":
            return None
        return self.type.rstrip("/").rsplit("/", 1)[-1] or None

    @property
    def violations(self) -> list[Mapping[str, Any]]:
        """The `violations` of a 400 (and of a dvRef 409): field, in, message."""
        found = self.members.get("violations")
        return [v for v in found if isinstance(v, Mapping)] if isinstance(found, list) else []

    @property
    def invalid_params(self) -> list[Mapping[str, Any]]:
        """The `invalidParams` of a 422 (NL API Design Rules): name, code, reason."""
        found = self.members.get("invalidParams")
        return [p for p in found if isinstance(p, Mapping)] if isinstance(found, list) else []

    @classmethod
    def from_response(cls, response: httpx.Response) -> "Problem":
        body: Any = None
        if response.content:
            try:
                body = response.json()
            except ValueError:
                body = None
        if not isinstance(body, Mapping):
            return cls(status=response.status_code, title=_reason(response.status_code))
        status = body.get("status")
        return cls(
            status=status if isinstance(status, int) else response.status_code,
            type=str(body.get("type") or "about:blank"),
            title=str(body.get("title") or _reason(response.status_code)),
            detail=str(body.get("detail") or ""),
            members={k: v for k, v in body.items() if k not in _STANDARD_MEMBERS},
        )


class NmcClientError(Exception):
    """Base of everything this client raises on purpose."""


class NmcUnavailable(NmcClientError):
    """No HTTP answer at all (connection refused, timeout, reset) after every retry."""


class NmcProblem(NmcClientError):
    """The NMC (or a gateway in front of it) refused the request; `problem` says why."""

    def __init__(self, problem: Problem, retry_after: float | None = None):
        slug = problem.slug or "about:blank"
        super().__init__(f"{problem.status} {slug}: {problem.detail or problem.title}")
        self.problem = problem
        self.retry_after = retry_after

    @property
    def status(self) -> int:
        return self.problem.status


class InvalidInput(NmcProblem):
    """400 `ongeldige-invoer`: `problem.violations` lists every field that broke a rule."""


class Unauthenticated(NmcProblem):
    """401: the bearer token is missing, expired or not accepted."""


class Forbidden(NmcProblem):
    """403: the OIN in the token is not an onboarded DV."""


class NotFound(NmcProblem):
    """404: no such notification for this DV (another DV's notifications do not exist)."""


class Conflict(NmcProblem):
    """409: a dvRef reused with another payload, a cancel after `aangenomen`, or a resume of
    a webhook paused for a gap (set its position instead)."""


class Unprocessable(NmcProblem):
    """422: the request is well-formed but its berichttype's NotifyNL template refuses it;
    `problem.invalid_params` names the fields. One of the two subclasses below by slug."""


class MissingPersonalisation(Unprocessable):
    """422 `ontbrekende-personalisatie`: the berichtgegevens lack fields the berichttype's
    NotifyNL template asks for; `missing` lists them (`berichtgegevens.<name>`, in a batch
    prefixed with `notificaties[i].`). Fix the request: sending it again as is fails again."""

    @property
    def missing(self) -> list[str]:
        return [str(p.get("name")) for p in self.problem.invalid_params if p.get("name")]


class BerichttypeUnavailable(Unprocessable):
    """422 `berichttype-niet-beschikbaar`: the berichttype's NotifyNL template is gone; the
    NMC's beheer is alerted. Nothing of this berichttype is accepted until it is restored."""


class Unprocessable(NmcProblem):
    """422 `emailadres-geweigerd`: NotifyNL would refuse an e-mail address;
    `problem.violations` names each one (in a batch with the item's index)."""


class CursorExpired(NmcProblem):
    """410 `cursor-vervallen`: start again from a snapshot (or without a cursor)."""


class TooManyRequests(NmcProblem):
    """429: `quotum-overschreden` (intake) or `aanroeplimiet-overschreden` (feed)."""


class ServerError(NmcProblem):
    """5xx: the NMC could not answer now; the request may be repeated."""


_BY_STATUS: Mapping[int, type[NmcProblem]] = {
    400: InvalidInput,
    401: Unauthenticated,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: CursorExpired,
    422: Unprocessable,
    429: TooManyRequests,
}


_BY_SLUG_422: Mapping[str | None, type[NmcProblem]] = {
    "ontbrekende-personalisatie": MissingPersonalisation,
    "berichttype-niet-beschikbaar": BerichttypeUnavailable,
}


def error_for(response: httpx.Response, *, now: datetime | None = None) -> NmcProblem:
    """The typed error for a refused response."""
    problem = Problem.from_response(response)
    kind = _BY_STATUS.get(response.status_code)
    if response.status_code == 422:
        kind = _BY_SLUG_422.get(problem.slug, Unprocessable)
    if kind is None:
        kind = ServerError if response.status_code >= 500 else NmcProblem
    return kind(problem, retry_after_seconds(response.headers.get("retry-after"), now=now))


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """RFC 9110 §10.2.3: delay-seconds or an HTTP-date; None when absent or unreadable."""
    if not value:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(int(text))
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (moment - (now or datetime.now(UTC))).total_seconds())


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "HTTP " + str(status)
