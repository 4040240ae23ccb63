"""Receiving the NMC's webhook calls: verify the bearer JWT, then read the CloudEvents batch.

The contract (SPEC §7, docs/feed.md, the OpenAPI document's `webhooks`): a POST with
`Authorization: Bearer <JWT>` signed by the NMC with RS256 or ES256 (header `kid`; claims
`iss` = the NMC, `aud` = the DV's webhook URL, `iat`, `nbf`, `exp` at most 5 minutes later,
`jti`), header `Nmc-Cursor` (the cursor after the batch's last event) and a body
`application/cloudevents-batch+json`: a JSON array of the feed's CloudEvents.

The public keys come from the NMC's JWKS (`NmcClient.jwks_url`): only a key the JWKS marks
as a webhook key (`"nmc_use": "webhook"`) verifies a token. They are cached for `max_age` and
fetched again at once for a `kid` the cache does not know (a key rotation publishes the new
key before it signs), though not more often than `min_refetch_interval`, so tokens with made-up
kids cannot make this process hammer the NMC.

Answer a WebhookRejected with its `status` (401 for the token, 415 or 400 for the body);
anything but a 2xx makes the NMC deliver the batch again later.

Before it delivers anything to a new (or changed) webhook URL, the NMC validates it with the
CloudEvents webhook handshake the NL GOV profile adopts: an `OPTIONS` request with
`WebHook-Request-Origin: <the NMC's origin>`. `answer_handshake(headers, allowed_origins)`
gives the status and headers to answer it with: 200 and `WebHook-Allowed-Origin` for an origin
the DV expects, else a refusal (and the NMC does not use the webhook).
"""

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import jwt

from .problems import NmcClientError

log = logging.getLogger(__name__)

ALLOWED_ALGORITHMS = ("RS256", "ES256")
# The NMC marks each published key with the ring it is of (JWK member `nmc_use`): a webhook
# token verifies only under a `webhook` key, a delivery proof only under an `afleverbewijs`
# key (nmc_client.bewijs). Every NMC worker holds the webhook keys; only its API the proof keys.
KEY_USE_MEMBER = "nmc_use"
WEBHOOK_USE = "webhook"
_KEY_TYPE = {"RS256": "RSA", "ES256": "EC"}
BATCH_MEDIA_TYPE = "application/cloudevents-batch+json"
CURSOR_HEADER = "Nmc-Cursor"
REQUEST_ORIGIN_HEADER = "WebHook-Request-Origin"
ALLOWED_ORIGIN_HEADER = "WebHook-Allowed-Origin"
MAX_LIFETIME_SECONDS = 300
LEEWAY_SECONDS = 30
MAX_TOKEN_LENGTH = 8192
_CURSOR = re.compile(r"\A[A-Za-z0-9_-]{1,500}\Z")
_SEQUENCE = re.compile(r"\A[1-9][0-9]*\Z")
_REQUIRED_ATTRIBUTES = ("specversion", "id", "source", "type", "subject", "sequence", "data")


class WebhookRejected(NmcClientError):
    """The call is not a valid NMC webhook call; answer it with `status`."""

    def __init__(self, reason: str, status: int = 401):
        super().__init__(reason)
        self.reason = reason
        self.status = status


class JwksUnavailable(NmcClientError):
    """The NMC's JWKS could not be fetched and no earlier copy is held."""


class KeyRefused(NmcClientError):
    """The published key `kid` cannot verify a token or proof signed with `alg`: `reason`
    says why (`unavailable`: the JWKS itself could not be had)."""

    def __init__(self, reason: str, *, unavailable: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.unavailable = unavailable


def published_key(
    keys: Any, kid: str, alg: str, use: str, what: str
) -> tuple[Mapping[str, Any], Any]:
    """The JWK `kid` of `keys` (anything with `key(kid)`, such as a JwksCache) and its public
    key for `alg`, when the NMC marks it as a key of ring `use` (`what` names that ring in the
    refusal) and its type, curve and `alg` fit `alg`; KeyRefused otherwise."""
    try:
        jwk = keys.key(kid)
    except JwksUnavailable:
        raise KeyRefused("the NMC's keys are unavailable", unavailable=True) from None
    if jwk is None:
        raise KeyRefused("unknown key (kid)")
    if jwk.get(KEY_USE_MEMBER) != use:
        raise KeyRefused(f"the key is not {what} of the NMC")
    if jwk.get("kty") != _KEY_TYPE[alg] or jwk.get("alg", alg) != alg:
        raise KeyRefused("the key does not fit the algorithm")
    if alg == "ES256" and jwk.get("crv") != "P-256":
        raise KeyRefused("the key does not fit the algorithm")
    try:
        return jwk, jwt.PyJWK(dict(jwk), algorithm=alg).key
    except jwt.PyJWTError:
        raise KeyRefused("the published key cannot be read") from None


class JwksCache:
    """The NMC's JWKS by kid, fetched with the client's own httpx client (its TLS, proxies and
    timeouts), held `max_age`, fetched again for an unknown kid at most every
    `min_refetch_interval`, and kept when a refresh fails.

    Why not PyJWT's PyJWKClient (benchmarks/bench_jwks.py): it fetches with urllib (not the
    DV's client), and once its cache has aged an unreachable JWKS fails every verification
    with a fetch per call, where this cache keeps the keys it had and tries once per interval.
    """

    def __init__(
        self,
        url: str,
        http: httpx.Client | None = None,
        *,
        max_age: float = 3600.0,
        min_refetch_interval: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.url = url
        self.http = http if http is not None else httpx.Client(timeout=5.0)
        self.max_age = max_age
        self.min_refetch_interval = min_refetch_interval
        self.clock = clock
        self.fetches = 0
        self._keys: dict[str, Mapping[str, Any]] | None = None
        self._fetched_at = 0.0
        self._lock = threading.Lock()

    def key(self, kid: str) -> Mapping[str, Any] | None:
        """The JWK with this kid, fetching the JWKS when stale or when the kid is new."""
        with self._lock:
            now = self.clock()
            age = now - self._fetched_at
            stale = self._keys is None or age >= self.max_age
            unknown = self._keys is not None and kid not in self._keys
            if stale or (unknown and age >= self.min_refetch_interval):
                self._refresh(now)
            return (self._keys or {}).get(kid)

    def _refresh(self, now: float) -> None:
        try:
            keys = self._fetch()
        except JwksUnavailable:
            if self._keys is None:
                raise
            log.warning("JWKS refresh failed; keeping the keys fetched before")
            return
        finally:
            self._fetched_at = now
        self._keys = keys

    def _fetch(self) -> dict[str, Mapping[str, Any]]:
        self.fetches += 1
        try:
            response = self.http.get(self.url, headers={"Accept": "application/json"})
            document = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError) as error:
            raise JwksUnavailable(f"JWKS not fetched ({type(error).__name__})") from None
        if not isinstance(document, Mapping) or not isinstance(document.get("keys"), list):
            raise JwksUnavailable(f"JWKS not fetched (HTTP {response.status_code})")
        return {
            jwk["kid"]: jwk
            for jwk in document["keys"]
            if isinstance(jwk, Mapping)
            and isinstance(jwk.get("kid"), str)
            and jwk.get("use", "sig") == "sig"
        }


@dataclass(frozen=True)
class WebhookBatch:
    events: list[dict[str, Any]]
    cursor: str
    claims: Mapping[str, Any]


class WebhookVerifier:
    """Verifies webhook calls for one webhook URL (`audience`) from one NMC (`issuer`).

    `issuer` is the NMC's `NMC_WEBHOOK_ISSUER`, by default its event source
    `urn:nld:oin:<NMC OIN>:systeem:nmc` (the `source` of its CloudEvents).
    """

    def __init__(
        self,
        jwks: JwksCache,
        *,
        audience: str,
        issuer: str,
        leeway: float = LEEWAY_SECONDS,
        reject_replays: bool = True,
        wall_clock: Callable[[], float] = time.time,
    ):
        self.jwks = jwks
        self.audience = audience
        self.issuer = issuer
        self.leeway = leeway
        self.reject_replays = reject_replays
        self.wall_clock = wall_clock
        self._seen: dict[str, float] = {}  # jti -> exp, while the token could still be replayed
        self._seen_lock = threading.Lock()

    def receive(self, headers: Mapping[str, str], body: bytes) -> WebhookBatch:
        """Verify the call's token, then parse its batch."""
        claims = self.verify(header_value(headers, "Authorization"))
        events, cursor = parse_batch(
            header_value(headers, "Content-Type"), header_value(headers, CURSOR_HEADER), body
        )
        return WebhookBatch(events, cursor, claims)

    def verify(self, authorization: str | None) -> dict[str, Any]:
        """The claims of a valid `Authorization: Bearer <JWT>`; WebhookRejected otherwise."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise WebhookRejected("no bearer token")
        if len(token) > MAX_TOKEN_LENGTH or token.count(".") != 2:
            raise WebhookRejected("the token is not a compact JWS")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise WebhookRejected("the token header cannot be read") from None
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in ALLOWED_ALGORITHMS:
            raise WebhookRejected("algorithm not allowed")
        if "crit" in header:
            raise WebhookRejected("critical header extensions are not supported")
        if not isinstance(kid, str) or not kid:
            raise WebhookRejected("the token names no key (kid)")
        claims = self._decode(token, self._public_key(kid, alg), alg)
        self._check_lifetime(claims)
        if self.reject_replays:
            self._check_replay(claims)
        return claims

    # ----------------------------------------------------------------------------------------

    def _public_key(self, kid: str, alg: str) -> Any:
        try:
            return published_key(self.jwks, kid, alg, WEBHOOK_USE, "a webhook key")[1]
        except KeyRefused as refused:
            status = 503 if refused.unavailable else 401
            raise WebhookRejected(refused.reason, status=status) from None

    def _decode(self, token: str, key: Any, alg: str) -> dict[str, Any]:
        try:
            return jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["iss", "aud", "exp", "iat", "jti"]},
            )
        except jwt.ExpiredSignatureError:
            raise WebhookRejected("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise WebhookRejected("the token is not valid yet") from None
        except jwt.InvalidAudienceError:
            raise WebhookRejected("the token is for another webhook (aud)") from None
        except jwt.InvalidIssuerError:
            raise WebhookRejected("the token is not from this NMC (iss)") from None
        except jwt.MissingRequiredClaimError:
            raise WebhookRejected("the token lacks a required claim") from None
        except jwt.InvalidSignatureError:
            raise WebhookRejected("the signature does not verify") from None
        except jwt.PyJWTError:
            raise WebhookRejected("the token is invalid") from None

    def _check_lifetime(self, claims: Mapping[str, Any]) -> None:
        exp, iat = claims.get("exp"), claims.get("iat")
        if not isinstance(exp, int | float) or not isinstance(iat, int | float):
            raise WebhookRejected("the token is invalid")
        if exp - iat > MAX_LIFETIME_SECONDS:
            raise WebhookRejected("the token lives longer than the NMC's five minutes")

    def _check_replay(self, claims: Mapping[str, Any]) -> None:
        jti = claims.get("jti")
        if not isinstance(jti, str) or not jti:
            raise WebhookRejected("the token lacks a required claim")
        now = self.wall_clock()
        with self._seen_lock:
            for seen, expires in list(self._seen.items()):
                if expires + self.leeway < now:
                    del self._seen[seen]
            if jti in self._seen:
                raise WebhookRejected("the token was used before (jti)")
            self._seen[jti] = float(claims["exp"])


def parse_batch(
    content_type: str | None, cursor: str | None, body: bytes
) -> tuple[list[dict[str, Any]], str]:
    """The events and the `Nmc-Cursor` of a webhook call; WebhookRejected when malformed."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type != BATCH_MEDIA_TYPE:
        raise WebhookRejected(f"the body must be {BATCH_MEDIA_TYPE}", status=415)
    if cursor is None or not _CURSOR.match(cursor.strip()):
        raise WebhookRejected(f"the {CURSOR_HEADER} header is missing or malformed", status=400)
    try:
        events = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise WebhookRejected("the body is not JSON", status=400) from None
    if not isinstance(events, list):
        raise WebhookRejected("the body must be a JSON array of CloudEvents", status=400)
    for event in events:
        if not _is_status_event(event):
            raise WebhookRejected("an item is not a status CloudEvent of the NMC", status=400)
    return events, cursor.strip()


def _is_status_event(event: Any) -> bool:
    return (
        isinstance(event, dict)
        and all(name in event for name in _REQUIRED_ATTRIBUTES)
        and event["specversion"] == "1.0"
        and isinstance(event["subject"], str)
        and isinstance(event["sequence"], str)
        and bool(_SEQUENCE.match(event["sequence"]))
        and isinstance(event["data"], dict)
        and isinstance(event["data"].get("naar"), str)
    )


def header_value(headers: Mapping[str, str], name: str) -> str | None:
    """A header from any mapping (a plain dict too), by case-insensitive name."""
    value = headers.get(name)
    if value is not None:
        return value
    wanted = name.lower()
    for key, candidate in headers.items():
        if key.lower() == wanted:
            return candidate
    return None


def answer_handshake(
    headers: Mapping[str, str], allowed_origins: Iterable[str]
) -> tuple[int, dict[str, str]]:
    """The answer to the NMC's webhook validation request (`OPTIONS` with
    `WebHook-Request-Origin`): (200, {WebHook-Allowed-Origin, Allow}) when the origin is one
    of `allowed_origins` (the NMC's, as its operators publish it), 403 for another origin,
    400 when the header is missing. Send the headers with the status."""
    origin = header_value(headers, REQUEST_ORIGIN_HEADER)
    if origin is None or not origin.strip():
        return 400, {}
    origin = origin.strip()
    if origin not in set(allowed_origins):
        return 403, {}
    return 200, {ALLOWED_ORIGIN_HEADER: origin, "Allow": "OPTIONS, POST"}
