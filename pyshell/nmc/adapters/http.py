"""What every outbound call shares: the two failure classes and the status-code rule.

SPEC §5: a 401/403/429/5xx, a connection error or a timeout concerns the *call*, not the
notificatie: the task is deferred and no attempt is counted (`Deferral`). An answer the
contract does not foresee (a 404 on a send, a 201 without an id) is a failure inside the
NMC's integration: counted like any internal failure (`UnexpectedResponse`).
"""

from collections.abc import Callable
from typing import Any

import httpx

DEFERRED_STATUS = frozenset({401, 403, 429})


class Deferral(Exception):
    """The called service is unavailable or refuses us: defer the task, count nothing."""

    def __init__(self, fout: str) -> None:
        super().__init__(fout)
        self.fout = fout


class LimitReached(Deferral):
    """NotifyNL refused the call with a 429: its rate limit (`tempo`, a RateLimitError) or the
    service's daily limit (`dag`, a TooManyRequestsError). Deferred like any 429, and the
    budget of the Notify service it names learns of it (nmc.defer_limiet_taak)."""

    def __init__(self, fout: str, limiet: str, service: str | None) -> None:
        super().__init__(fout)
        self.limiet = limiet
        self.service = service


class UnexpectedResponse(Exception):
    """An answer outside the contract: a failure inside the NMC (the attempt counter rises)."""

    def __init__(self, fout: str) -> None:
        super().__init__(fout)
        self.fout = fout


def is_outage(status_code: int) -> bool:
    return status_code in DEFERRED_STATUS or status_code >= 500


async def request(
    client: httpx.AsyncClient,
    service: str,
    method: str,
    url: str,
    *,
    on_429: Callable[[httpx.Response], Deferral] | None = None,
    answers: frozenset[int] = frozenset(),
    **kwargs: Any,
) -> httpx.Response:
    """Send one request; transport failures and outage codes become a `Deferral`.

    `service` prefixes the error class (`notifynl-http-503`, `ldv-timeout`), so a task's
    last error says which call failed without naming anything personal. `on_429` makes the
    deferral of a 429 from its answer (NotifyNL tells its two limits apart); `answers`: outage
    codes the caller reads itself (NotifyNL's send classifies its 401/403 as a refusal).
    """
    try:
        response = await client.request(method, url, **kwargs)
    except httpx.TimeoutException:
        raise Deferral(f"{service}-timeout") from None
    except httpx.TransportError:
        raise Deferral(f"{service}-verbinding") from None
    if response.status_code == 429 and on_429 is not None:
        raise on_429(response)
    if is_outage(response.status_code) and response.status_code not in answers:
        raise Deferral(f"{service}-http-{response.status_code}")
    return response


def json_body(response: httpx.Response, service: str) -> Any:
    """The decoded JSON body, or an `UnexpectedResponse` (never the body text itself)."""
    try:
        return response.json()
    except ValueError:
        raise UnexpectedResponse(f"{service}-geen-json-{response.status_code}") from None


def errors(body: Any) -> list[tuple[str | None, str]]:
    """(error, message) of each entry of a NotifyNL error body, `{"errors": [{"error": …,
    "message": …}, …]}` (a message that is not a
    string reads as ''). Never logged: a message may echo what the request held."""
    if not isinstance(body, dict) or not isinstance(body.get("errors"), list):
        return []
    return [
        (
            e.get("error") if isinstance(e.get("error"), str) else None,
            e.get("message") if isinstance(e.get("message"), str) else "",
        )
        for e in body["errors"]
        if isinstance(e, dict)
    ]


def traceparent(trace_id: str, span_id: str) -> dict[str, str]:
    """The W3C trace-context header that ties a call to its LDV record."""
    return {"traceparent": f"00-{trace_id}-{span_id}-01"}
