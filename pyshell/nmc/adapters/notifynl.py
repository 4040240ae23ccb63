"""The NotifyNL adapter (../shared/notifynl-contract.md): send, get by id, search by reference.

Every request carries a fresh HS256 JWT made from an API key (`{name}-{service id}-{secret}`):
`{"iss": service id, "iat": now}`, so a token never outlives NotifyNL's 30-second rule.

A key belongs to one NotifyNL service, and a service knows only its own templates and its own
notifications. The NMC sends through services of its own, one send budget each (ADR 0024), so
every call names the Notify service of the task's berichttype (`notify_service`) and goes out
with that service's key (`NotifyKeys`: the keys file NMC_NOTIFYNL_KEYS_FILE, read once at
start-up, or the one key NMC_NOTIFYNL_API_KEY of a single-service setup). A service without
a key is a `Deferral` (`notifynl-geen-sleutel`): our credentials, like a 401/403.
Responses become outcomes by status code and error type; only where the type cannot tell
whose fault a send's 400 is, by the stable start of the message NotifyNL's code raises
(`classify_refusal`, the table in notifynl-contract.md, Errors):

* send: 201 -> `Accepted`; 400, 401, 403 -> `Refused` with its kind: `ongeldig-adres` (a
  ValidationError on email_address: the recipient's), `onverwerkbaar` (Missing
  personalisation, message too long: the template changed after the intake), or one of our
  configuration: `template`, `sleutel` (team-only key, trial mode), `dienst` (no e-mail
  permission), `verzoek` (a ValidationError on another field), `toegang` (401/403),
  `onbekend` (any other 400: ours until proven otherwise, never the recipient's);
* get by id: 200 -> `Bericht`; 404 -> None (unknown, or past NotifyNL's retention);
* search by reference: 200 -> list of `Bericht`;
* get a template: 200 -> its JSON; 404 -> None (nmc.notifynl.notifynl_templates reads it);
* 401/403/429/5xx, connection errors, timeouts, no key for the service -> `Deferral`;
  anything else -> `UnexpectedResponse`.

A `Bericht` never keeps the e-mail address NotifyNL echoes back.
"""

import json
import os
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import jwt

from nmc import settings_env
from nmc.adapters.http import (
    Deferral,
    LimitReached,
    UnexpectedResponse,
    errors,
    json_body,
    request,
)
from nmc.errors import NmcError

SERVICE = "notifynl"
NO_KEY = f"{SERVICE}-geen-sleutel"
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


class NotifyKeysError(NmcError):
    """The NotifyNL keys are missing or malformed (a start-up failure)."""


@dataclass(frozen=True)
class NotifyKeys:
    """The API key of each Notify service (berichttype.notify_service), or the one key of a
    single-service setup (`single`), which then serves every service."""

    by_service: Mapping[str, ApiKey] = field(default_factory=dict, repr=False)
    single: ApiKey | None = field(default=None, repr=False)

    @property
    def services(self) -> tuple[str, ...]:
        """The services with a key of their own, sorted (empty for a single key)."""
        return tuple(sorted(self.by_service))

    def for_service(self, service: str | None) -> ApiKey:
        """The key of `service`; `Deferral` when it has none (an operator must add it)."""
        if self.single is not None:
            return self.single
        key = self.by_service.get(service) if service is not None else None
        if key is None:
            raise Deferral(NO_KEY)
        return key


def parse_notify_keys(document: Any) -> NotifyKeys:
    """`{"<notify service>": "<API key>", ...}`: one NotifyNL service per Notify service."""
    if not isinstance(document, dict):
        raise NotifyKeysError("the NotifyNL keys file must hold a JSON object: service -> key")
    if not document:
        raise NotifyKeysError("the NotifyNL keys file must name at least one service")
    keys: dict[str, ApiKey] = {}
    owners: dict[str, str] = {}
    for service, text in document.items():
        if not 1 <= len(service) <= 100:
            raise NotifyKeysError("a Notify service name has 1 to 100 characters")
        try:
            key = ApiKey.parse(text) if isinstance(text, str) else None
        except ValueError:
            key = None
        if key is None:
            raise NotifyKeysError(
                f"the key of Notify service {service!r} is not a NotifyNL API key "
                "('{name}-{service id}-{secret}')"
            )
        if key.service_id in owners:
            # One budget per NotifyNL service: two names for one service would double it.
            raise NotifyKeysError(
                f"Notify services {owners[key.service_id]!r} and {service!r} have keys of the "
                "same NotifyNL service"
            )
        owners[key.service_id] = service
        keys[service] = key
    return NotifyKeys(by_service=keys)


def load_notify_keys(environ: Mapping[str, str] | None = None) -> NotifyKeys:
    """From the file NMC_NOTIFYNL_KEYS_FILE names, or the single key NMC_NOTIFYNL_API_KEY."""
    env = os.environ if environ is None else environ
    path = settings_env.path(env, "NMC_NOTIFYNL_KEYS_FILE")
    single = settings_env.text(env, "NMC_NOTIFYNL_API_KEY")
    if path and single:
        raise NotifyKeysError("set NMC_NOTIFYNL_KEYS_FILE or NMC_NOTIFYNL_API_KEY, not both")
    if path:
        return read_notify_keys(path)
    if single:
        return single_notify_key(single)
    raise NotifyKeysError(
        "neither NMC_NOTIFYNL_KEYS_FILE (a key per Notify service) nor NMC_NOTIFYNL_API_KEY "
        "(one service) is set: the worker cannot call NotifyNL"
    )


def read_notify_keys(path: Path) -> NotifyKeys:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotifyKeysError(f"NotifyNL keys file not found: {path}") from None
    except OSError as error:
        raise NotifyKeysError(
            f"NotifyNL keys file {path} cannot be read ({error.strerror})"
        ) from None
    try:
        document = json.loads(text)
    except ValueError:
        raise NotifyKeysError(f"NotifyNL keys file {path} is not valid JSON") from None
    return parse_notify_keys(document)


def single_notify_key(text: str) -> NotifyKeys:
    try:
        return NotifyKeys(single=ApiKey.parse(text))
    except ValueError:
        raise NotifyKeysError(
            "NMC_NOTIFYNL_API_KEY is not a NotifyNL API key ('{name}-{service id}-{secret}')"
        ) from None


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
    """NotifyNL accepted the e-mail (201); `template_versie`: the version of the template it
    rendered (the 201's template.version; None when it names none)."""

    notifynl_id: uuid.UUID
    template_versie: int | None = None


# The kinds of a refused send (the SQL decides what each means: nmc.finish_verzenden_batch
# for the first two, nmc.defer_verzenden for the rest, our configuration).
ONGELDIG_ADRES = "ongeldig-adres"
ONVERWERKBAAR = "onverwerkbaar"
CONFIGURATIE = frozenset({"template", "sleutel", "dienst", "verzoek", "toegang", "onbekend"})
# The send's 401/403 are NotifyNL's verdict on our credentials (or clock): a refusal of our
# configuration, not an outage.
AUTH_STATUS = frozenset({401, 403})

# The stable starts of NotifyNL's BadRequestError messages (app/notifications/validators.py,
# process_notifications.py), compared after folding case and the typographic apostrophe.
_ONVERWERKBAAR_STARTS = ("missing personalisation", "emails cannot be longer than")
_TEMPLATE_STARTS = ("template not found", "template has been deleted")
_TEMPLATE_TYPE = re.compile(r"^\w+ template is not suitable for ")
_SLEUTEL_STARTS = (
    "can't send to this recipient using a team-only api key",
    "can't send to this recipient when service is in trial mode",
    "cannot send to this recipient using a team-only api key",
    "cannot send to this recipient when service is in trial mode",
)
_DIENST_STARTS = ("service is not allowed to send",)
_ADRES_START = "email_address not a valid email address"
# When one answer holds several errors, the kind that keeps most open wins: anything of ours
# over what the request cannot be, over the recipient's address (never final by mistake).
_VOORRANG = (
    "onbekend",
    "toegang",
    "template",
    "sleutel",
    "dienst",
    "verzoek",
    ONVERWERKBAAR,
    ONGELDIG_ADRES,
)


@dataclass(frozen=True)
class Refused:
    """NotifyNL refused the send (400, 401, 403); `soort` says whose fault it is."""

    soort: str


def classify_refusal(status_code: int, body: Any) -> str:
    """The kind of a refused send, from its status code, its error types and (only where
    the type cannot tell) the start of the message. Unknown is ours, never the recipient's."""
    if status_code in AUTH_STATUS:
        return "toegang"
    found = errors(body)
    kinds = {_classify_error(error, message) for error, message in found} or {"onbekend"}
    return next(kind for kind in _VOORRANG if kind in kinds)


def _classify_error(error: str | None, message: str) -> str:
    text = message.strip().replace("\u2019", "'").lower()
    if error == "ValidationError":
        # A schema error names its field first: only the address's is the recipient's.
        return ONGELDIG_ADRES if text.startswith(_ADRES_START) else "verzoek"
    if error != "BadRequestError":
        return "onbekend"
    if text.startswith(_ONVERWERKBAAR_STARTS):
        return ONVERWERKBAAR
    if text.startswith(_TEMPLATE_STARTS) or _TEMPLATE_TYPE.match(text):
        return "template"
    if text.startswith(_SLEUTEL_STARTS):
        return "sleutel"
    if text.startswith(_DIENST_STARTS):
        return "dienst"
    return "onbekend"


@dataclass(frozen=True)
class Bericht:
    """NotifyNL's view of one message, without the address."""

    notifynl_id: uuid.UUID
    reference: str | None
    status: str
    created_at: datetime | None
    sent_at: datetime | None
    completed_at: datetime | None
    # The template it was rendered from (`template: {id, version, uri}`); None if not given.
    template_id: uuid.UUID | None = None
    template_versie: int | None = None


class NotifyNL:
    """Calls NotifyNL's v2 API with one shared `httpx.AsyncClient`, each call with the key of
    the Notify service it names (`service`: a berichttype's notify_service)."""

    def __init__(
        self, client: httpx.AsyncClient, base_url: str, keys: NotifyKeys | ApiKey | str
    ) -> None:
        self._client = client
        self._base = base_url.rstrip("/")
        if isinstance(keys, str):
            keys = ApiKey.parse(keys)
        self._keys = NotifyKeys(single=keys) if isinstance(keys, ApiKey) else keys
        # Per NotifyNL service: (iat, token) of the latest token made.
        self._tokens: dict[str, tuple[int, str]] = {}

    @property
    def services(self) -> tuple[str, ...]:
        """The Notify services with a key of their own (empty: one key serves them all)."""
        return self._keys.services

    def require_key(self, service: str | None) -> None:
        """`Deferral` now when `service` has no key: before an LDV record for a call that
        could not be made."""
        self._keys.for_service(service)

    async def send_email(
        self,
        email_address: str,
        template_id: uuid.UUID | str,
        personalisation: Mapping[str, str],
        reference: str,
        *,
        service: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Accepted | Refused:
        body = {
            "email_address": email_address,
            "template_id": str(template_id),
            "personalisation": dict(personalisation),
            "reference": reference,
        }
        response = await self._call(
            service, "POST", "/v2/notifications/email", headers, answers=AUTH_STATUS, json=body
        )
        if response.status_code == 201:
            data = json_body(response, SERVICE)
            if not isinstance(data, dict):
                data = {}
            return Accepted(notifynl_id=_uuid(data.get("id")), template_versie=_versie(data))
        if response.status_code == 400 or response.status_code in AUTH_STATUS:
            try:
                data = response.json()
            except ValueError:
                data = None  # a 400 without NotifyNL's body: unknown, so ours
            return Refused(soort=classify_refusal(response.status_code, data))
        raise UnexpectedResponse(f"{SERVICE}-http-{response.status_code}")

    async def get_notification(
        self,
        notifynl_id: uuid.UUID | str,
        *,
        service: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Bericht | None:
        response = await self._call(service, "GET", f"/v2/notifications/{notifynl_id}", headers)
        if response.status_code == 404:
            return None
        if response.status_code == 200:
            return _bericht(json_body(response, SERVICE))
        raise UnexpectedResponse(f"{SERVICE}-http-{response.status_code}")

    async def find_by_reference(
        self,
        reference: str,
        *,
        service: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> list[Bericht]:
        """Every message the service holds with this reference (at most one page: 250)."""
        response = await self._call(
            service, "GET", "/v2/notifications", headers, params={"reference": reference}
        )
        if response.status_code != 200:
            raise UnexpectedResponse(f"{SERVICE}-http-{response.status_code}")
        data = json_body(response, SERVICE)
        items = data.get("notifications") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise UnexpectedResponse(f"{SERVICE}-antwoord")
        return [_bericht(item) for item in items]

    # ------------------------------------------------------------ templates

    async def get_template(
        self, template_id: uuid.UUID | str, *, service: str | None = None
    ) -> dict[str, Any] | None:
        """GET /v2/template/{id} with the service's key: the template (200), or None (404:
        none, or another service's). 401/403 and outages are a `Deferral` as for every call."""
        response = await self._call(service, "GET", f"/v2/template/{template_id}", None)
        if response.status_code == 404:
            return None
        if response.status_code == 200:
            data = json_body(response, SERVICE)
            if isinstance(data, dict):
                return data
            raise UnexpectedResponse(f"{SERVICE}-antwoord")
        raise UnexpectedResponse(f"{SERVICE}-http-{response.status_code}")

    async def _call(
        self,
        service: str | None,
        method: str,
        path: str,
        headers: Mapping[str, str] | None,
        *,
        answers: frozenset[int] = frozenset(),
        **kwargs: Any,
    ) -> httpx.Response:
        bearer = self._bearer(self._keys.for_service(service))
        all_headers = {"Authorization": f"Bearer {bearer}", **(headers or {})}
        return await request(
            self._client,
            SERVICE,
            method,
            self._base + path,
            answers=answers,
            headers=all_headers,
            on_429=lambda response: limit_reached(response, service),
            **kwargs,
        )

    def _bearer(self, key: ApiKey) -> str:
        """A fresh token for this request. `iat` has whole seconds, so every token made
        within one second is the same string: it is signed once per second and service,
        not per call."""
        issued_at = int(time.time())
        made = self._tokens.get(key.service_id)
        if made is None or made[0] != issued_at:
            made = self._tokens[key.service_id] = (issued_at, bearer_token(key, issued_at))
        return made[1]


def limit_reached(response: httpx.Response, service: str | None) -> LimitReached:
    """NotifyNL's two 429s by their error type: TooManyRequestsError is the service's day
    used up; a RateLimitError, or a 429 that names neither, is the pace."""
    try:
        types = [error for error, _ in errors(response.json())]
    except ValueError:
        types = []
    if "TooManyRequestsError" in types:
        return LimitReached(f"{SERVICE}-dag-limiet", "dag", service)
    return LimitReached(f"{SERVICE}-tempo-limiet", "tempo", service)


def _bericht(data: Any) -> Bericht:
    if not isinstance(data, dict) or not isinstance(data.get("status"), str):
        raise UnexpectedResponse(f"{SERVICE}-antwoord")
    reference = data.get("reference")
    template_id, template_versie = _template(data.get("template"))
    return Bericht(
        notifynl_id=_uuid(data.get("id")),
        reference=reference if isinstance(reference, str) else None,
        status=data["status"],
        created_at=_timestamp(data.get("created_at")),
        sent_at=_timestamp(data.get("sent_at")),
        completed_at=_timestamp(data.get("completed_at")),
        template_id=template_id,
        template_versie=template_versie,
    )


def _template(value: Any) -> tuple[uuid.UUID | None, int | None]:
    """(id, version) of a `template: {id, version, uri}`; what is missing or malformed is
    None (the history records what NotifyNL said, the outcome does not depend on it)."""
    if not isinstance(value, dict):
        return None, None
    try:
        template_id = uuid.UUID(value.get("id"))
    except (TypeError, ValueError, AttributeError):
        template_id = None
    version = value.get("version")
    valid = isinstance(version, int) and not isinstance(version, bool) and version >= 0
    return template_id, version if valid else None


def _versie(data: Mapping[str, Any]) -> int | None:
    """The 201's template.version: a positive integer, else None (never a refusal: the
    e-mail was accepted)."""
    template = data.get("template")
    version = template.get("version") if isinstance(template, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version >= 1:
        return version
    return None


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
