"""A NotifyNL simulator for tests and the demo (../shared/notifynl-contract.md).

Implements: JWT auth with the 30 s clock rule and NotifyNL's error bodies; POST
/v2/notifications/email with request validation (unknown properties, bad address -> 400) and
the 201 body; GET /v2/notifications/{id} (400 for a non-UUID, 404 past retention); GET
/v2/notifications?reference=… (list shape); delivery-receipt callbacks with NotifyNL's retry
rule (5 retries, a gap of `retry_gap_s`, only on connection errors, timeouts, 5xx and 429).

Several services, as NotifyNL has them: each API key belongs to the service whose id it holds
(`api_keys`), and a service sees only the notifications sent with its own keys (a GET for
another service's is a 404, a search finds none). With `templates` (service id -> its
template ids) a service may only send its own templates: another's is refused as NotifyNL
refuses it (notifications-api `check_template_exists_by_id_and_service`: 400
BadRequestError "Template not found"). Without `templates` any template is accepted.
Templates have subjects, bodies, placeholders and versions (nmc_dev.sim.notifynl_templates:
GET /v2/template/{id}[/version/{n}], GET /v2/templates, POST …/preview, `Missing
personalisation` on a send, and `/_sim/templates` to edit them at run time).

The outcome is chosen by the recipient's local part:
`bezorgd+…` delivered, `permanent+…` permanent-failure, `tijdelijk+…` temporary-failure,
`technisch+…` technical-failure, `stil+…` stays `sending` and is never called back,
`tijdelijk-dan-bezorgd+…` temporary on the first send to that address, delivered after,
`verloren+…` delivered but its callback is lost (as when NotifyNL gives up after its last
retry: only reconciliation learns the outcome); `sjabloon-gewijzigd+…` is refused as
`Missing personalisation` (its template was edited after the intake: `LOCAL_PART_REFUSALS`);
anything else is delivered.

Test hooks under /_sim/: `faults` (POST/GET/DELETE: error_rate per status code, latency_ms,
timeout_rate, accept_timeout_rate, duplicate_rate, reorder, lose_rate), `config` (callback
URL and token, retention, delays), `clock` (moves the clock that retention, timestamps and the
limits read; the token check keeps the real clock), `limits` (every refusal of the rate and
daily limits per service, injected faults apart: nmc_dev.sim.notifynl_limits), `sent`,
`requests`, `callbacks`, `reset`, `forget` (the request and callback logs and the
notifications past retention: for long runs), `weigering` (POST/GET/DELETE: from now on
refuse sends as NotifyNL refuses them, with its exact body, one of `REFUSALS` — a team-only
key, a deleted template, Missing personalisation after a template edit, … — optionally only
for some templates or services). The rate limit (`rate_limit`, `rate_limits` per service,
`rate_limit_mode` window or bucket) and the daily limit (`day_limit`) are set through `config`.
"""

import asyncio
import contextlib
import random
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, date, datetime
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from nmc_dev.sim.notifynl_auth import AuthError, SimKey, authenticate
from nmc_dev.sim.notifynl_limits import MODES, Limits, rate_limit_message
from nmc_dev.sim.notifynl_templates import SimTemplate, SimTemplates, missing, missing_message

SEVEN_DAYS_S = 7 * 24 * 3600.0
ALLOWED_PROPERTIES = frozenset(
    {"email_address", "template_id", "personalisation", "reference", "email_reply_to_id"}
)
_EMAIL = re.compile(
    r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@(?=.{1,253}$)"
    r"([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$"
)
OUTCOMES = {
    "bezorgd": "delivered",
    "permanent": "permanent-failure",
    "tijdelijk": "temporary-failure",
    "technisch": "technical-failure",
    "stil": None,
    "verloren": "delivered",
}
LOST_CALLBACK_PREFIX = "verloren"
ERROR_TYPES = {
    400: ("BadRequestError", "Bad request"),
    401: ("AuthError", "Unauthorized: authentication token must be provided"),
    403: ("AuthError", "Invalid token: API key not found"),
    404: ("NoResultFound", "No result found"),
    429: (
        "RateLimitError",
        "Exceeded rate limit for key type LIVE of 3000 requests per 60 seconds",
    ),
    500: ("Exception", "Internal server error"),
}
PAGE_SIZE = 250
# NotifyNL's send refusals (notifynl-contract.md, Errors), with the status, error type and
# message its code raises (app/notifications/validators.py, process_notifications.py,
# app/authentication/auth.py), switched on at run time through /_sim/weigering.
REFUSALS: dict[str, tuple[int, str, str]] = {
    "ongeldig-adres": (400, "ValidationError", "email_address Not a valid email address"),
    "missing-personalisation": (400, "BadRequestError", "Missing personalisation: {velden}"),
    "te-lang": (
        400,
        "BadRequestError",
        "Emails cannot be longer than 2000000 bytes. Your message is 2000001 bytes.",
    ),
    "template-niet-gevonden": (400, "BadRequestError", "Template not found"),
    "template-verwijderd": (400, "BadRequestError", "Template has been deleted"),
    "template-ongeschikt": (
        400,
        "BadRequestError",
        "sms template is not suitable for email notification",
    ),
    "team-only": (
        400,
        "BadRequestError",
        "Can\u2019t send to this recipient using a team-only API key",
    ),
    "trial-mode": (
        400,
        "BadRequestError",
        "Can\u2019t send to this recipient when service is in trial mode \u2013 see "
        "https://www.notifications.service.gov.uk/trial-mode",
    ),
    "geen-email-recht": (400, "BadRequestError", "Service is not allowed to send emails"),
    "ongeldig-verzoek": (400, "ValidationError", "template_id is not a valid UUID"),
    "onbekend": (400, "BadRequestError", "A refusal no table of NotifyNL's errors names"),
    "klok": (403, "AuthError", "Error: Your system clock must be accurate to within 30 seconds"),
}
SEND_PATH = "/v2/notifications/email"
# Callbacks under way at once. httpx's pool scans every queued request on each change, so
# thousands of callbacks waiting in it (a receiver that is slow or down for a while) would
# cost the simulator quadratic CPU; they wait on a semaphore instead.
CALLBACK_CONCURRENCY = 20


@dataclass
class Faults:
    error_rate: dict[int, float] = field(default_factory=dict)
    latency_ms: float = 0.0
    timeout_rate: float = 0.0
    # A send that NotifyNL did accept (and delivers, and calls back) whose answer is still a
    # 504 after `hang_s`: a gateway timing out on a request the backend processed. The NMC
    # only learns of it through the receipt or a lookup by reference.
    accept_timeout_rate: float = 0.0
    duplicate_rate: float = 0.0
    reorder: bool = False
    lose_rate: float = 0.0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Faults":
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown fault settings: {sorted(unknown)}")
        faults = cls(**{k: v for k, v in data.items() if k != "error_rate"})
        faults.error_rate = {int(k): float(v) for k, v in (data.get("error_rate") or {}).items()}
        return faults


@dataclass
class Weigering:
    """A refusal switched on at run time: every send (of `template_ids` / `service_ids` when
    given) is answered with REFUSALS[`soort`]; `velden` fills Missing personalisation's list."""

    soort: str
    template_ids: list[str] = field(default_factory=list)
    service_ids: list[str] = field(default_factory=list)
    velden: list[str] = field(default_factory=lambda: ["naam"])

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Weigering":
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown refusal settings: {sorted(unknown)}")
        if data.get("soort") not in REFUSALS:
            raise ValueError(f"soort must be one of {sorted(REFUSALS)}")
        return cls(**data)

    def applies(self, body: dict[str, Any], service_id: str) -> bool:
        return (not self.template_ids or body.get("template_id") in self.template_ids) and (
            not self.service_ids or service_id in self.service_ids
        )

    def response(self) -> JSONResponse:
        status_code, error, message = REFUSALS[self.soort]
        return _error(status_code, error, message.format(velden=", ".join(self.velden)))


# A send to one of these local parts is refused as if its template had changed: NotifyNL
# renders a template's latest version, and the edited one needs a field the request lacks.
LOCAL_PART_REFUSALS = {
    "sjabloon-gewijzigd": Weigering("missing-personalisation", velden=["kenmerk"]),
}


@dataclass
class SimConfig:
    api_keys: list[str] = field(default_factory=list)
    revoked_keys: list[str] = field(default_factory=list)
    # Service id -> the template ids it owns; empty: every service may send any template.
    templates: dict[str, list[str]] = field(default_factory=dict)
    callback_url: str | None = None
    callback_token: str | None = None
    retention_s: float = SEVEN_DAYS_S
    retry_gap_s: float = 300.0
    retries: int = 5
    callback_timeout_s: float = 5.0
    delivery_delay_s: float = 0.0
    hang_s: float = 30.0
    reorder_window_s: float = 0.2
    base_url: str = "https://api.notifynl.nl"
    # NotifyNL's daily e-mail limit of every service (None: none), per UTC day of the
    # simulator's clock; the send past it is a 429 TooManyRequestsError.
    day_limit: int | None = None
    # NotifyNL's rate limit (requests per 60 s) of every service, or per service id in
    # `rate_limits` (None: none), counted as the fork does (`window`) or upstream (`bucket`):
    # nmc_dev.sim.notifynl_limits. A refusal is a 429 RateLimitError.
    rate_limit: int | None = None
    rate_limits: dict[str, int] = field(default_factory=dict)
    rate_limit_mode: str = "window"


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _error(status_code: int, error: str, message: str) -> JSONResponse:
    body = {"status_code": status_code, "errors": [{"error": error, "message": message}]}
    return JSONResponse(body, status_code=status_code)


class NotifySim:
    """The simulator's state and its ASGI app (`app`: the send straight to its handler, all
    else through the Starlette app `starlette`)."""

    def __init__(self, config: SimConfig | None = None, seed: int | None = None) -> None:
        self.config = config or SimConfig()
        self.random = random.Random(seed)  # noqa: S311 - fault dice, not secrets
        self.starlette = Starlette(routes=self._routes(), lifespan=self._lifespan)
        self.app = _App(self)
        self._client: httpx.AsyncClient | None = None
        self._callback_slots: asyncio.Semaphore | None = None
        self._tasks: set[asyncio.Task] = set()
        self._timers: set[asyncio.Handle] = set()
        # The API keys as the token check wants them, made again only when the config's
        # key lists change (not on every request).
        self._keys_of: tuple[tuple[str, ...], tuple[str, ...]] | None = None
        self._keys_made: dict[str, list[SimKey]] = {}
        self.templates = SimTemplates(lambda: self.config.templates)
        self.reset()

    # ---------------------------------------------------------------- state

    def reset(self) -> None:
        self.faults = Faults()
        self.weigeringen: list[Weigering] = []
        self.offset_s = 0.0
        self.notifications: dict[str, dict[str, Any]] = {}
        # The ids per reference: a lookup by reference (every re-claim makes one) must not
        # sort every notification ever sent, or a long soak slows the simulator to a crawl.
        self.ids_by_reference: dict[str, list[str]] = {}
        self.sends_per_address: Counter[str] = Counter()
        # Sends counted against each service's UTC day (config.day_limit).
        self.sent_per_day: Counter[tuple[str, date]] = Counter()
        self.limits = Limits()
        self.requests: list[dict[str, Any]] = []
        self.callbacks: list[dict[str, Any]] = []
        self.templates.reset()
        for task in list(self._tasks):
            task.cancel()
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()

    def now(self) -> datetime:
        return datetime.fromtimestamp(time.time() + self.offset_s, UTC)

    def _keys(self) -> dict[str, list[SimKey]]:
        source = (tuple(self.config.api_keys), tuple(self.config.revoked_keys))
        if source != self._keys_of:
            self._keys_made, self._keys_of = self._parse_keys(), source
        return self._keys_made

    def _parse_keys(self) -> dict[str, list[SimKey]]:
        keys: dict[str, list[SimKey]] = {}
        for key in self.config.api_keys:
            parsed = SimKey.parse(key)
            keys.setdefault(parsed.service_id, []).append(parsed)
        for key in self.config.revoked_keys:
            parsed = SimKey.parse(key, revoked=True)
            keys.setdefault(parsed.service_id, []).append(parsed)
        return keys

    def _visible(self, notification: dict[str, Any]) -> bool:
        age = (self.now() - notification["created_at"]).total_seconds()
        return age < self.config.retention_s

    # ---------------------------------------------------------------- routes

    def _routes(self) -> list[Route]:
        return [
            Route(SEND_PATH, self._send_email, methods=["POST"]),
            Route("/v2/notifications/{notification_id}", self._get_one, methods=["GET"]),
            Route("/v2/notifications", self._get_list, methods=["GET"]),
            *self._template_routes(),
            Route("/_sim/faults", self._faults, methods=["GET", "POST", "DELETE"]),
            Route("/_sim/config", self._set_config, methods=["GET", "POST"]),
            Route("/_sim/clock", self._clock, methods=["POST"]),
            Route("/_sim/sent", self._sent, methods=["GET"]),
            Route("/_sim/limits", self._limits, methods=["GET"]),
            Route("/_sim/requests", self._requests, methods=["GET"]),
            Route("/_sim/callbacks", self._callbacks, methods=["GET"]),
            Route("/_sim/reset", self._reset, methods=["POST"]),
            Route("/_sim/forget", self._forget, methods=["POST"]),
            Route("/_sim/weigering", self._weigering, methods=["GET", "POST", "DELETE"]),
        ]

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette):
        self._client = httpx.AsyncClient(limits=httpx.Limits(max_connections=CALLBACK_CONCURRENCY))
        self._callback_slots = asyncio.Semaphore(CALLBACK_CONCURRENCY)
        try:
            yield
        finally:
            for task in list(self._tasks):
                task.cancel()
            for timer in self._timers:
                timer.cancel()
            self._timers.clear()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._client.aclose()

    async def _guard(self, request: Request, reference: str | None = None) -> Response | None:
        """Faults, then authentication; the request is logged with its outcome."""
        entry = {
            "ts": time.time(),
            "method": request.method,
            "path": request.scope["path"],
            "reference": reference or request.query_params.get("reference"),
            "traceparent": request.headers.get("traceparent"),
            "status": None,
        }
        self.requests.append(entry)
        # The handler's own entry: requests[-1] may be another's after an await.
        request.state.sim_entry = entry
        faults = self.faults
        if faults.latency_ms:
            await asyncio.sleep(faults.latency_ms / 1000)
        if faults.timeout_rate and self.random.random() < faults.timeout_rate:
            await asyncio.sleep(self.config.hang_s)
            entry["status"] = 504
            return _error(504, "Exception", "Gateway timeout")
        roll = self.random.random()
        for status_code, rate in sorted(faults.error_rate.items()):
            if roll < rate:
                entry["status"] = status_code
                self.limits.fault_injected(status_code)
                error, message = ERROR_TYPES.get(status_code, ("Exception", "Service unavailable"))
                return _error(status_code, error, message)
            roll -= rate
        try:
            # The token check reads the real clock: /_sim/clock moves retention and
            # timestamps only, so a moved clock does not turn every token into a 403.
            service_id = authenticate(
                request.headers.get("authorization"), self._keys(), time.time()
            )
        except AuthError as refusal:
            entry["status"] = refusal.status_code
            return JSONResponse(refusal.body(), status_code=refusal.status_code)
        entry["service_id"] = request.state.sim_service = service_id
        return None

    def _owns(self, service_id: str, notification: dict[str, Any]) -> bool:
        return notification["service_id"] == service_id

    async def _send_email(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            body = None
        reference = body.get("reference") if isinstance(body, dict) else None
        refused = await self._guard(request, reference if isinstance(reference, str) else None)
        if refused is not None:
            return refused
        entry = request.state.sim_entry
        service_id = request.state.sim_service
        over_limit = self._rate_limit_refusal(service_id) or self._day_limit_refusal(service_id)
        if over_limit is not None:
            entry["status"] = 429
            return over_limit
        if not isinstance(body, dict):
            entry["status"] = 400
            return _error(400, "BadRequestError", "Invalid JSON supplied in POST data")
        problems = _validate(body)
        if problems:
            entry["status"] = 400
            errors = [{"error": "ValidationError", "message": p} for p in problems]
            return JSONResponse({"status_code": 400, "errors": errors}, status_code=400)
        service_id = request.state.sim_service
        template = self.templates.find(service_id, body["template_id"])
        if template is None:
            entry["status"] = 400
            return _error(400, "BadRequestError", "Template not found")
        weigering = self._refusal(body, service_id)
        if weigering is not None:
            response = weigering.response()
            entry["status"], entry["weigering"] = response.status_code, weigering.soort
            return response
        lacking = missing(template.placeholders(), body.get("personalisation") or {})
        if lacking:
            entry["status"] = 400
            return _error(400, "BadRequestError", missing_message(lacking))
        notification = self._accept(body, service_id, template)
        accept_timeout = self.faults.accept_timeout_rate
        if accept_timeout and self.random.random() < accept_timeout:
            entry["accepted"] = True
            await asyncio.sleep(self.config.hang_s)
            entry["status"] = 504
            return _error(504, "Exception", "Gateway timeout")
        entry["status"] = 201
        return JSONResponse(self._created_body(notification), status_code=201)

    async def _get_one(self, request: Request) -> Response:
        refused = await self._guard(request)
        if refused is not None:
            return refused
        entry = request.state.sim_entry
        notification_id = request.path_params["notification_id"]
        try:
            uuid.UUID(notification_id)
        except ValueError:
            entry["status"] = 400
            return _error(400, "ValidationError", "notification_id is not a valid UUID")
        notification = self.notifications.get(notification_id)
        if (
            notification is None
            or not self._visible(notification)
            or not self._owns(request.state.sim_service, notification)
        ):
            entry["status"] = 404
            return _error(404, "NoResultFound", "No result found")
        entry["reference"] = notification["reference"]
        entry["status"] = 200
        return JSONResponse(self._full_body(notification))

    async def _get_list(self, request: Request) -> Response:
        refused = await self._guard(request)
        if refused is not None:
            return refused
        entry = request.state.sim_entry
        params = request.query_params
        reference = params.get("reference")
        statuses = params.getlist("status")
        candidates = (
            self.notifications.values()
            if reference is None
            else [self.notifications[i] for i in self.ids_by_reference.get(reference, [])]
        )
        service_id = request.state.sim_service
        items = sorted(
            (n for n in candidates if self._visible(n) and self._owns(service_id, n)),
            key=lambda n: n["created_at"],
            reverse=True,
        )
        items = [
            n
            for n in items
            if (reference is None or n["reference"] == reference)
            and (not statuses or n["status"] in statuses)
        ]
        older_than = params.get("older_than")
        if older_than:
            ids = [n["id"] for n in items]
            items = items[ids.index(older_than) + 1 :] if older_than in ids else []
        page = items[:PAGE_SIZE]
        current = f"{self.config.base_url}/v2/notifications"
        if reference:
            current += f"?reference={reference}"
        links: dict[str, str] = {"current": current}
        if len(items) > PAGE_SIZE:
            sep = "&" if "?" in current else "?"
            links["next"] = f"{current}{sep}older_than={page[-1]['id']}"
        entry["status"] = 200
        return JSONResponse({"notifications": [self._full_body(n) for n in page], "links": links})

    # ---------------------------------------------------------------- sending

    def _rate_limit(self, service_id: str) -> int | None:
        return self.config.rate_limits.get(service_id, self.config.rate_limit)

    def _rate_limit_refusal(self, service_id: str) -> Response | None:
        """NotifyNL's rate limit of the service, checked before its daily limit as NotifyNL
        does (a refused request is not counted against the day)."""
        rate = self._rate_limit(service_id)
        moment = self.now().timestamp()
        if self.limits.admit(service_id, rate, self.config.rate_limit_mode, moment):
            return None
        return _error(429, "RateLimitError", rate_limit_message(rate or 0))

    def _day_limit_refusal(self, service_id: str) -> Response | None:
        """NotifyNL's daily limit, checked before the request's content as NotifyNL does;
        counts this send against the service's UTC day when it is let through."""
        limit = self.config.day_limit
        if limit is None:
            return None
        day = (service_id, self.now().date())
        if self.sent_per_day[day] >= limit:
            self.limits.day_refused(service_id)
            return _error(
                429, "TooManyRequestsError", f"Exceeded send limits (email: {limit}) for today"
            )
        self.sent_per_day[day] += 1
        return None

    def _accept(
        self, body: dict[str, Any], service_id: str, template: SimTemplate
    ) -> dict[str, Any]:
        address = body["email_address"]
        self.sends_per_address[address.lower()] += 1
        personalisation = body.get("personalisation") or {}
        notification = {
            "id": str(uuid.uuid4()),
            "service_id": service_id,
            "reference": body.get("reference"),
            "email_address": address,
            "template_id": body["template_id"],
            "personalisation": personalisation,
            # NotifyNL renders the template's latest version at the send.
            "template_version": template.latest.version,
            "content": template.content(personalisation),
            "status": "created",
            "created_at": self.now(),
            "sent_at": None,
            "completed_at": None,
            "outcome": self._outcome(address),
        }
        self.notifications[notification["id"]] = notification
        if notification["reference"] is not None:
            self.ids_by_reference.setdefault(notification["reference"], []).append(
                notification["id"]
            )
        self._later(self.config.delivery_delay_s, self._sending, notification)
        return notification

    def _outcome(self, address: str) -> str | None:
        prefix = _outcome_prefix(address)
        if prefix == "tijdelijk-dan-bezorgd":
            first = self.sends_per_address[address.lower()] == 1
            return "temporary-failure" if first else "delivered"
        return OUTCOMES.get(prefix, "delivered")

    # Delivery: created -> sending -> the outcome, a `delivery_delay_s` per step, on timers
    # (a task per notification cost the simulator more than the send itself).

    def _sending(self, notification: dict[str, Any]) -> None:
        notification["status"] = "sending"
        notification["sent_at"] = self.now()
        if notification["outcome"] is None:
            return  # stil: never an outcome, never a callback
        self._later(self.config.delivery_delay_s, self._completed, notification)

    def _completed(self, notification: dict[str, Any]) -> None:
        notification["status"] = notification["outcome"]
        notification["completed_at"] = self.now()
        self._schedule_callbacks(notification)

    def _schedule_callbacks(self, notification: dict[str, Any]) -> None:
        if not self.config.callback_url:
            return
        faults = self.faults
        payload = self._callback_body(notification)
        lost = _outcome_prefix(notification["email_address"]) == LOST_CALLBACK_PREFIX
        if lost or (faults.lose_rate and self.random.random() < faults.lose_rate):
            self.callbacks.append(self._callback_entry(payload, "lost"))
            return
        copies = 2 if faults.duplicate_rate and self.random.random() < faults.duplicate_rate else 1
        for _ in range(copies):
            delay = self.random.uniform(0, self.config.reorder_window_s) if faults.reorder else 0
            self._spawn(self._callback(payload, delay))

    def _callback_entry(self, payload: dict[str, Any], result: str) -> dict[str, Any]:
        return {
            "notification_id": payload["id"],
            "reference": payload["reference"],
            "status": payload["status"],
            "result": result,
            "attempts": 0,
            "codes": [],
        }

    async def _callback(self, payload: dict[str, Any], delay: float) -> None:
        """One callback with NotifyNL's retry rule; the log entry records what happened."""
        entry = self._callback_entry(payload, "pending")
        self.callbacks.append(entry)
        await asyncio.sleep(delay)
        config = self.config
        headers = {"Authorization": f"Bearer {config.callback_token}"}
        for attempt in range(config.retries + 1):
            if attempt:
                await asyncio.sleep(config.retry_gap_s)
            entry["attempts"] += 1
            try:
                async with self._callback_slots:
                    response = await self._client.post(
                        config.callback_url,
                        json=payload,
                        headers=headers,
                        timeout=config.callback_timeout_s,
                    )
            except (httpx.TimeoutException, httpx.TransportError) as failure:
                entry["codes"].append(type(failure).__name__)
                continue
            entry["codes"].append(response.status_code)
            if response.status_code < 400:
                entry["result"] = "delivered"
                return
            if response.status_code != 429 and response.status_code < 500:
                entry["result"] = "refused"  # any other 4xx is not retried
                return
        entry["result"] = "gave-up"

    def _spawn(self, coroutine) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _later(self, delay: float, step: Callable[[dict[str, Any]], None], notification) -> None:
        """`step(notification)` after `delay` seconds; `reset` cancels what is still pending."""

        def fire() -> None:
            self._timers.discard(handle)
            step(notification)

        loop = asyncio.get_running_loop()
        handle = loop.call_later(delay, fire) if delay > 0 else loop.call_soon(fire)
        self._timers.add(handle)

    # ---------------------------------------------------------------- bodies

    def _template(self, notification: dict[str, Any]) -> dict[str, Any]:
        template_id = notification["template_id"]
        version = notification["template_version"]
        return {
            "id": template_id,
            "version": version,
            "uri": f"{self.config.base_url}/v2/template/{template_id}/version/{version}",
        }

    def _content(self, notification: dict[str, Any]) -> tuple[str, str]:
        return notification["content"]

    def _created_body(self, notification: dict[str, Any]) -> dict[str, Any]:
        subject, body = self._content(notification)
        return {
            "id": notification["id"],
            "reference": notification["reference"],
            "content": {"subject": subject, "body": body, "from_email": "noreply@notifynl.nl"},
            "uri": f"{self.config.base_url}/v2/notifications/{notification['id']}",
            "template": self._template(notification),
            "scheduled_for": None,
        }

    def _full_body(self, notification: dict[str, Any]) -> dict[str, Any]:
        subject, body = self._content(notification)
        return {
            "id": notification["id"],
            "reference": notification["reference"],
            "email_address": notification["email_address"],
            "phone_number": None,
            "type": "email",
            "status": notification["status"],
            "template": self._template(notification),
            "body": body,
            "subject": subject,
            "created_at": _iso(notification["created_at"]),
            "created_by_name": None,
            "sent_at": _iso(notification["sent_at"]),
            "completed_at": _iso(notification["completed_at"]),
            "scheduled_for": None,
            "one_click_unsubscribe_url": None,
        }

    def _callback_body(self, notification: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": notification["id"],
            "reference": notification["reference"],
            "to": notification["email_address"],
            "status": notification["status"],
            "created_at": _iso(notification["created_at"]),
            "completed_at": _iso(notification["completed_at"]),
            "sent_at": _iso(notification["sent_at"]),
            "notification_type": "email",
            "template_id": notification["template_id"],
            "template_version": notification["template_version"],
        }

    # ---------------------------------------------------------------- templates
    # (nmc_dev.sim.notifynl_templates: the reads of GET /v2/template…, the preview, and the
    # run-time edits of /_sim/templates.)

    def _template_routes(self) -> list[Route]:
        return [
            Route("/v2/template/{template_id}", self._get_template, methods=["GET"]),
            Route(
                "/v2/template/{template_id}/version/{version:int}",
                self._get_template,
                methods=["GET"],
            ),
            Route("/v2/templates", self._get_templates, methods=["GET"]),
            Route("/v2/template/{template_id}/preview", self._preview, methods=["POST"]),
            Route("/_sim/templates", self._sim_templates, methods=["GET", "POST"]),
            Route("/_sim/templates/{template_id}", self._sim_template, methods=["DELETE"]),
        ]

    async def _known_template(self, request: Request) -> SimTemplate | Response:
        """The template of the path as the caller's service sees it, or the error answer."""
        refused = await self._guard(request)
        if refused is not None:
            return refused
        entry = request.state.sim_entry
        template_id = request.path_params["template_id"]
        if not _is_uuid(template_id):
            entry["status"] = 400
            return _error(400, "ValidationError", "template_id is not a valid UUID")
        template = self.templates.find(request.state.sim_service, template_id)
        if template is None:
            entry["status"] = 404
            return _error(404, "NoResultFound", "No result found")
        return template

    async def _get_template(self, request: Request) -> Response:
        template = await self._known_template(request)
        if isinstance(template, Response):
            return template
        entry = request.state.sim_entry
        wanted = request.path_params.get("version")
        version = template.latest
        if wanted is not None:
            found = [v for v in template.versions if v.version == wanted]
            if not found:
                entry["status"] = 404
                return _error(404, "NoResultFound", "No result found")
            version = found[0]
        entry["status"] = 200
        return JSONResponse(template.body(self.config.base_url, version))

    async def _get_templates(self, request: Request) -> Response:
        refused = await self._guard(request)
        if refused is not None:
            return refused
        kind = request.query_params.get("type")
        found = [
            t.body(self.config.base_url)
            for t in self.templates.of_service(request.state.sim_service)
            if kind is None or t.type == kind
        ]
        request.state.sim_entry["status"] = 200
        return JSONResponse({"templates": found})

    async def _preview(self, request: Request) -> Response:
        template = await self._known_template(request)
        if isinstance(template, Response):
            return template
        entry = request.state.sim_entry
        try:
            data = await request.json()
        except ValueError:
            data = None
        personalisation = data.get("personalisation") if isinstance(data, dict) else None
        personalisation = personalisation if isinstance(personalisation, dict) else {}
        lacking = missing(template.placeholders(), personalisation)
        if lacking:
            entry["status"] = 400
            return _error(400, "BadRequestError", missing_message(lacking))
        subject, body = template.content(personalisation)
        entry["status"] = 200
        return JSONResponse(
            {
                "id": template.template_id,
                "type": template.type,
                "version": template.latest.version,
                "body": body,
                "subject": subject,
                "html": None,
                "postage": None,
            }
        )

    async def _sim_templates(self, request: Request) -> Response:
        if request.method == "POST":
            try:
                data = await request.json()
                if not isinstance(data, dict) or not _is_uuid(data.get("template_id")):
                    raise ValueError("give template_id (a UUID), subject and body")
                template = self.templates.edit(data, self.now())
            except (ValueError, TypeError) as problem:
                return JSONResponse({"error": str(problem)}, status_code=400)
            return JSONResponse(template.body(self.config.base_url))
        shown = [t.body(self.config.base_url) for t in self.templates.edited.values()]
        return JSONResponse({"templates": shown, "removed": sorted(self.templates.removed)})

    async def _sim_template(self, request: Request) -> Response:
        known = self.templates.remove(request.path_params["template_id"])
        return Response(status_code=204 if known else 404)

    # ---------------------------------------------------------------- test hooks

    async def _faults(self, request: Request) -> Response:
        if request.method == "POST":
            try:
                self.faults = Faults.from_json(await request.json())
            except (ValueError, TypeError) as problem:
                return JSONResponse({"error": str(problem)}, status_code=400)
        elif request.method == "DELETE":
            self.faults = Faults()
        return JSONResponse(asdict(self.faults))

    async def _set_config(self, request: Request) -> Response:
        if request.method == "POST":
            data = await request.json()
            known = {f.name for f in fields(SimConfig)}
            unknown = set(data) - known
            if unknown:
                return JSONResponse({"error": f"unknown: {sorted(unknown)}"}, status_code=400)
            if data.get("rate_limit_mode", "window") not in MODES:
                return JSONResponse({"error": f"rate_limit_mode: one of {MODES}"}, status_code=400)
            for name, value in data.items():
                setattr(self.config, name, value)
        shown = asdict(self.config)
        shown.pop("api_keys")
        shown.pop("revoked_keys")
        return JSONResponse(shown)

    async def _clock(self, request: Request) -> Response:
        data = await request.json()
        self.offset_s += float(data.get("advance_s", 0))
        return JSONResponse({"now": _iso(self.now()), "offset_s": self.offset_s})

    async def _sent(self, request: Request) -> Response:
        per_reference = Counter(n["reference"] for n in self.notifications.values())
        per_service = Counter(n["service_id"] for n in self.notifications.values())
        items = [
            {
                "id": n["id"],
                "service_id": n["service_id"],
                "reference": n["reference"],
                "email_address": n["email_address"],
                "template_id": n["template_id"],
                "personalisation": n["personalisation"],
                "status": n["status"],
                "created_at": _iso(n["created_at"]),
            }
            for n in self.notifications.values()
        ]
        return JSONResponse(
            {
                "count": len(items),
                "per_reference": per_reference,
                "per_service": per_service,
                "notifications": items,
            }
        )

    async def _limits(self, request: Request) -> Response:
        """Every refusal of NotifyNL's limits per service and the injected faults apart."""
        return JSONResponse(
            self.limits.snapshot(self.config.rate_limit, self.config.rate_limit_mode)
            | {"rate_limits": self.config.rate_limits, "day_limit": self.config.day_limit}
        )

    async def _requests(self, request: Request) -> Response:
        return JSONResponse(self.requests)

    async def _callbacks(self, request: Request) -> Response:
        pending = sum(1 for task in self._tasks if not task.done()) + len(self._timers)
        if request.query_params.get("summary"):  # a long run polls this: no list
            return JSONResponse({"pending_tasks": pending, "callbacks": len(self.callbacks)})
        return JSONResponse({"pending_tasks": pending, "callbacks": self.callbacks})

    # ---------------------------------------------------------------- refusals

    def _refusal(self, body: dict[str, Any], service_id: str) -> Weigering | None:
        """The first refusal switched on that applies to this send (its answer, and the
        request log's `weigering`), or None."""
        for weigering in self.weigeringen:
            if weigering.applies(body, service_id):
                return weigering
        return LOCAL_PART_REFUSALS.get(_outcome_prefix(str(body.get("email_address", ""))))

    async def _weigering(self, request: Request) -> Response:
        """POST one refusal (added to those on), DELETE all, GET the list."""
        if request.method == "POST":
            try:
                self.weigeringen.append(Weigering.from_json(await request.json()))
            except (ValueError, TypeError) as problem:
                return JSONResponse({"error": str(problem)}, status_code=400)
        elif request.method == "DELETE":
            self.weigeringen = []
        return JSONResponse([asdict(w) for w in self.weigeringen])

    async def _reset(self, request: Request) -> Response:
        self.reset()
        return Response(status_code=204)

    async def _forget(self, request: Request) -> Response:
        """Drop the history a long run does not read again: the request and callback logs,
        and the notifications past the retention (a look-up no longer finds them anyway), so
        the simulator's work per call does not grow with the run."""
        self.requests = []
        self.callbacks = []
        gone = [i for i, n in self.notifications.items() if not self._visible(n)]
        for notification_id in gone:
            notification = self.notifications.pop(notification_id)
            ids = self.ids_by_reference.get(notification["reference"], [])
            if notification_id in ids:
                ids.remove(notification_id)
            if not ids:
                self.ids_by_reference.pop(notification["reference"], None)
        return JSONResponse({"forgotten": len(gone), "kept": len(self.notifications)})


class _App:
    """The simulator's ASGI app. A send (NotifyNL's hot path: thousands a second in a drain)
    goes straight to its handler; everything else through the Starlette app, whose
    middleware and route matching cost about as much as the send's handler itself."""

    def __init__(self, sim: NotifySim) -> None:
        self._sim = sim

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"] == SEND_PATH
            and not scope.get("root_path")
        ):
            response = await self._sim._send_email(Request(scope, receive))
            await response(scope, receive, send)
            return
        await self._sim.starlette(scope, receive, send)


def _outcome_prefix(address: str) -> str:
    """`tijdelijk` for `tijdelijk+x@voorbeeld.nl`; '' without a `+` in the local part."""
    local = address.split("@", 1)[0].lower()
    return local.split("+", 1)[0] if "+" in local else ""


def _validate(body: dict[str, Any]) -> list[str]:
    """Problems in NotifyNL's words ("<field> <message>"), first the unknown properties."""
    problems = [
        f"Additional properties are not allowed ({name} was unexpected)"
        for name in sorted(set(body) - ALLOWED_PROPERTIES)
    ]
    for name in ("email_address", "template_id"):
        if name not in body:
            problems.append(f"{name} is a required property")
    address = body.get("email_address")
    if "email_address" in body and (not isinstance(address, str) or not _EMAIL.match(address)):
        problems.append("email_address Not a valid email address")
    for name in ("template_id", "email_reply_to_id"):
        if name in body and not _is_uuid(body[name]):
            problems.append(f"{name} is not a valid UUID")
    personalisation = body.get("personalisation")
    if personalisation is not None and not isinstance(personalisation, dict):
        problems.append("personalisation should contain key value pairs")
    reference = body.get("reference")
    if reference is not None and (not isinstance(reference, str) or len(reference) > 1000):
        problems.append("reference must be a string of at most 1000 characters")
    return problems


def _is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return isinstance(value, str)
