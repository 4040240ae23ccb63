"""The Profielservice adapter (../shared/profielservice-contract.md).

`find_email` looks a party up and picks its e-mail contactgegeven in the contract's order:
1. a scope with exactly this DV and this service; 2. a scope with this DV and no service;
3. `isDefault: true`; 4. no scopes at all. A 404 or no match is None: no e-mail preference
(`geen-contactgegevens`). Every other error of the lookup (ADR 0024: "Andere fouten van de
Profielservice: uitstel en herhaling"), a 400 or another 4xx and an unreadable answer
included, raises `Deferral`, as 5xx, 429, 401/403, connection errors and timeouts do.

`report_invalid` reports an address invalid (idempotent at the Profielservice); a 404 there
means nothing is left to report. Its outages raise `Deferral`; an answer outside the contract
raises `UnexpectedResponse` (counted: the ongeldig-melden task then waits for an operator
after five). The address is returned to the send task only and never stored.
"""

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from nmc.adapters.http import Deferral, UnexpectedResponse, json_body, request

SERVICE = "profielservice"
PARTIJ_PATH = "/api/profielservice/v1/partij"
ONGELDIG_PATH = "/api/profielservice/v1/contactgegeven/ongeldig"
IDENTIFICATIE_TYPES = ("BSN", "KVK", "RSIN")


@dataclass(frozen=True)
class Contactgegeven:
    """The chosen e-mail contactgegeven: its id goes on the attempt, the address only out."""

    id: uuid.UUID
    email: str = field(repr=False)


def choose_email(
    contactgegevens: Sequence[Any], dienstverlener: str, dienst: str | None
) -> Mapping[str, Any] | None:
    """The e-mail contactgegeven the contract's four steps pick, or None."""
    emails = [
        c
        for c in contactgegevens
        if isinstance(c, dict) and c.get("type") == "Email" and isinstance(c.get("waarde"), str)
    ]

    def scopes(c: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        found = c.get("scopes") or []
        return [s for s in found if isinstance(s, dict)] if isinstance(found, list) else []

    def for_dv(scope: Mapping[str, Any]) -> bool:
        return scope.get("dienstverlenerNaam") == dienstverlener

    steps = (
        lambda c: (
            dienst is not None
            and any(for_dv(s) and s.get("dienstNaam") == dienst for s in scopes(c))
        ),
        lambda c: any(for_dv(s) and not s.get("dienstNaam") for s in scopes(c)),
        lambda c: c.get("isDefault") is True,
        lambda c: not scopes(c),
    )
    for matches in steps:
        chosen = next((c for c in emails if matches(c)), None)
        if chosen is not None:
            return chosen
    return None


class Profielservice:
    def __init__(self, client: httpx.AsyncClient, base_url: str) -> None:
        self._client = client
        self._base = base_url.rstrip("/")

    async def find_email(
        self,
        identificatie_type: str,
        identificatie_nummer: str,
        dienstverlener: str,
        dienst: str | None,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> Contactgegeven | None:
        body = {
            "identificatieType": identificatie_type,
            "identificatieNummer": identificatie_nummer,
            "dienstverlener": dienstverlener,
        }
        if dienst:
            body["dienstNaam"] = dienst
        response = await request(
            self._client, SERVICE, "POST", self._base + PARTIJ_PATH, json=body, headers=headers
        )
        if response.status_code == 404:
            return None
        # Only "party unknown" (404) and "no e-mail" are outcomes (ADR 0024): every other
        # error of the Profielservice, a 400 or another 4xx included, and an answer that
        # cannot be read, is deferred and retried without counting an attempt.
        if response.status_code != 200:
            raise Deferral(f"{SERVICE}-http-{response.status_code}")
        try:
            partij = json_body(response, SERVICE)
        except UnexpectedResponse as unreadable:
            raise Deferral(unreadable.fout) from None
        if not isinstance(partij, dict):
            raise Deferral(f"{SERVICE}-antwoord")
        chosen = choose_email(partij.get("contactgegevens") or [], dienstverlener, dienst)
        if chosen is None:
            return None
        try:
            return Contactgegeven(id=uuid.UUID(chosen.get("id")), email=chosen["waarde"])
        except (TypeError, ValueError, AttributeError):
            raise Deferral(f"{SERVICE}-antwoord") from None

    async def report_invalid(
        self,
        identificatie_type: str,
        identificatie_nummer: str,
        contactgegeven_id: uuid.UUID,
        gemeld_op: datetime,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> bool:
        """True when reported (200/204, also a repeat); False on 404 (party or address gone)."""
        body = {
            "identificatieType": identificatie_type,
            "identificatieNummer": identificatie_nummer,
            "contactgegevenId": str(contactgegeven_id),
            "reden": "permanent-failure",
            "gemeldOp": gemeld_op.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        }
        response = await request(
            self._client, SERVICE, "POST", self._base + ONGELDIG_PATH, json=body, headers=headers
        )
        if response.status_code in (200, 201, 204):
            return True
        if response.status_code == 404:
            return False
        raise UnexpectedResponse(f"{SERVICE}-http-{response.status_code}")


def split_identificatie(recipient: str) -> tuple[str, str]:
    """The centraal recipient `TYPE:nummer` (see nmc.api.validation.recipient_of)."""
    kind, sep, number = recipient.partition(":")
    if not sep or kind not in IDENTIFICATIE_TYPES or not number:
        raise ValueError("the recipient is not TYPE:nummer")
    return kind, number
