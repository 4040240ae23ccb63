"""The NotifyNL adapter (../shared/notifynl-contract.md): send, get by id, search by reference.

Every request carries a fresh HS256 JWT made from the API key (`{name}-{service id}-{secret}`):
`{"iss": service id, "iat": now}`, so a token never outlives NotifyNL's 30-second rule.
Responses become outcomes by status code and error type only, never by message text:

* send: 201 -> `Accepted`; 400 ValidationError/BadRequestError -> `InvalidAddress`;
* get by id: 200 -> `Bericht`; 404 -> None (unknown, or past NotifyNL's retention);
* search by reference: 200 -> list of `Bericht`;
* 401/403/429/5xx, connection errors, timeouts -> `Deferral`; anything else ->
  `UnexpectedResponse`.

A `Bericht` never keeps the e-mail address NotifyNL echoes back.
"""

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
import jwt

from nmc.adapters.http import UnexpectedResponse, error_types, json_body, request

SERVICE = "notifynl"
INVALID_ADDRESS_ERRORS = frozenset({"ValidationError", "BadRequestError"})
_UUID_LENGTH = 36


@dataclass(frozen=True)
class ApiKey:
    """A NotifyNL API key split as NotifyNL does: service id = key[-73:-37], secret = key[-36:]."""

    service_id: str
    secret: str = field(repr=False)

    @classmethod
    def parse(cls, key: str) -> "ApiKey":
        if len(key) < 2 * _UUID_LENGTH + 1 or key[-37] != "-":
            raise ValueError("a NotifyNL API key ends in '-<service id uuid>-<secret uuid>'")
        service_id, secret = key[-73:-37], key[-36:]
        for part in (service_id, secret):
            uuid.UUID(part)  # ValueError when malformed; the message names no key material
        return cls(service_id=service_id, secret=secret)


def bearer_token(key: ApiKey, now: float | None = None) -> str:
    """A fresh token: header {typ: JWT, alg: HS256}, claims {iss, iat}."""
    issued_at = int(time.time() if now is None else now)
    return jwt.encode(
        {"iss": key.service_id, "iat": issued_at},
        key.secret,
        algorithm="HS256",
        headers={"typ": "JWT"},
    )


@dataclass(frozen=True)
class Accepted:
    """NotifyNL accepted the e-mail (201)."""

    notifynl_id: uuid.UUID


@dataclass(frozen=True)
class InvalidAddress:
    """NotifyNL refused the request (400): for this attempt, the address is unusable."""

    error: str


@dataclass(frozen=True)
class Bericht:
    """NotifyNL's view of one message, without the address."""

    notifynl_id: uuid.UUID
    reference: str | None
    status: str
    created_at: datetime | None
    sent_at: datetime | None
    completed_at: datetime | None


class NotifyNL:
    """Calls NotifyNL's v2 API with one shared `httpx.AsyncClient`."""

    def __init__(self, client: httpx.AsyncClient, base_url: str, api_key: str | ApiKey) -> None:
        self._client = client
        self._base = base_url.rstrip("/")
        self._key = api_key if isinstance(api_key, ApiKey) else ApiKey.parse(api_key)
        self._token: tuple[int, str] = (-1, "")  # (iat, token) of the latest token made

    async def send_email(
        self,
        email_address: str,
        template_id: uuid.UUID | str,
        personalisation: Mapping[str, str],
        reference: str,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> Accepted | InvalidAddress:
        body = {
            "email_address": email_address,
            "template_id": str(template_id),
            "personalisation": dict(personalisation),
            "reference": reference,
        }
        response = await self._call("POST", "/v2/notifications/email", headers, json=body)
        if response.status_code == 201:
            data = json_body(response, SERVICE)
            return Accepted(notifynl_id=_uuid(data.get("id") if isinstance(data, dict) else None))
        if response.status_code == 400:
            types = error_types(json_body(response, SERVICE))
            refusal = next((t for t in types if t in INVALID_ADDRESS_ERRORS), None)
            if refusal:
                return InvalidAddress(error=refusal)
        raise UnexpectedResponse(f"{SERVICE}-http-{response.status_code}")

    async def get_notification(
        self, notifynl_id: uuid.UUID | str, *, headers: Mapping[str, str] | None = None
    ) -> Bericht | None:
        response = await self._call("GET", f"/v2/notifications/{notifynl_id}", headers)
        if response.status_code == 404:
            return None
        if response.status_code == 200:
            return _bericht(json_body(response, SERVICE))
        raise UnexpectedResponse(f"{SERVICE}-http-{response.status_code}")

    async def find_by_reference(
        self, reference: str, *, headers: Mapping[str, str] | None = None
    ) -> list[Bericht]:
        """Every message NotifyNL holds with this reference (at most one page: 250)."""
        response = await self._call(
            "GET", "/v2/notifications", headers, params={"reference": reference}
        )
        if response.status_code != 200:
            raise UnexpectedResponse(f"{SERVICE}-http-{response.status_code}")
        data = json_body(response, SERVICE)
        items = data.get("notifications") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise UnexpectedResponse(f"{SERVICE}-antwoord")
        return [_bericht(item) for item in items]

    async def _call(
        self, method: str, path: str, headers: Mapping[str, str] | None, **kwargs: Any
    ) -> httpx.Response:
        all_headers = {"Authorization": f"Bearer {self._bearer()}", **(headers or {})}
        return await request(
            self._client, SERVICE, method, self._base + path, headers=all_headers, **kwargs
        )

    def _bearer(self) -> str:
        """A fresh token for this request. `iat` has whole seconds, so every token made
        within one second is the same string: it is signed once per second, not per call."""
        issued_at = int(time.time())
        if self._token[0] != issued_at:
            self._token = (issued_at, bearer_token(self._key, issued_at))
        return self._token[1]


def _bericht(data: Any) -> Bericht:
    if not isinstance(data, dict) or not isinstance(data.get("status"), str):
        raise UnexpectedResponse(f"{SERVICE}-antwoord")
    reference = data.get("reference")
    return Bericht(
        notifynl_id=_uuid(data.get("id")),
        reference=reference if isinstance(reference, str) else None,
        status=data["status"],
        created_at=_timestamp(data.get("created_at")),
        sent_at=_timestamp(data.get("sent_at")),
        completed_at=_timestamp(data.get("completed_at")),
    )


def _uuid(value: Any) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except (TypeError, ValueError, AttributeError):
        raise UnexpectedResponse(f"{SERVICE}-antwoord") from None


def _timestamp(value: Any) -> datetime | None:
    """NotifyNL's ISO 8601 UTC with microseconds and Z; None stays None."""
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise UnexpectedResponse(f"{SERVICE}-antwoord") from None
