"""OAuth2 bearer verification for the DV API, and a development-only token issuer.

A DV calls with a JWT from the MOZa IAM gateway carrying its OIN (SPEC §7). The verifier checks
the signature against the IAM's JWKS, then iss, aud, exp and nbf (30 s leeway), and takes the OIN
from a configurable claim. Only RS256, PS256 and ES256 are accepted: never `none`, never an HMAC
algorithm (the classic attack signs an HS256 token with the public key as secret), and the key
type must fit the algorithm.

Settings (environment):
  NMC_OAUTH_ISSUER            expected `iss`
  NMC_OAUTH_AUDIENCE          expected `aud`
  NMC_OAUTH_JWKS_URL          JWKS over HTTPS (http only for localhost), or
  NMC_OAUTH_JWKS_FILE         JWKS from a file (tests, the dev IAM)
  NMC_OAUTH_OIN_CLAIM         claim holding the OIN (default `oin`)
  NMC_OAUTH_JWKS_REFETCH_SECONDS  least time between two fetches caused by unknown `kid`s (60)
  NMC_OAUTH_JWKS_MAX_AGE_SECONDS  keys older than this are refreshed before use (3600)
  NMC_DEV_IAM_KEY_FILE        PEM private key of the dev issuer; unset means no dev tokens

Failures are typed: `Unauthenticated` (the caller's token; becomes 401 with a short reason that
holds no personal data) and `JwksUnavailable` (the keys cannot be had; a server-side failure,
not the caller's). Tokens are never logged.
"""

import asyncio
import base64
import hashlib
import json
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from nmc.errors import NmcError

log = logging.getLogger(__name__)

ALLOWED_ALGORITHMS: tuple[str, ...] = ("RS256", "PS256", "ES256")
LEEWAY_SECONDS = 30
DEFAULT_OIN_CLAIM = "oin"
DEFAULT_REFETCH_SECONDS = 60.0
DEFAULT_MAX_AGE_SECONDS = 3600.0
MAX_TOKEN_BYTES = 16 * 1024
MAX_JWKS_BYTES = 1024 * 1024
JWKS_TIMEOUT_SECONDS = 5.0
INITIAL_RETRY_SECONDS = 5.0  # while no keys were ever loaded, retry sooner than refetch_seconds

_OIN = re.compile(r"\A[0-9]{20}\Z")
_KEY_TYPE_FOR_ALG = {"RS256": "RSA", "PS256": "RSA", "ES256": "EC"}
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


class AuthError(Exception):
    """Base of the failures this module raises."""


class Unauthenticated(AuthError):
    """The bearer token is absent or not acceptable. `reason` is short and holds no personal data.

    `token_present` is False when no token was sent at all: RFC 6750 §3.1 then wants a bare
    `WWW-Authenticate: Bearer` challenge without an error code.
    """

    def __init__(self, reason: str, *, token_present: bool = True):
        super().__init__(reason)
        self.reason = reason
        self.token_present = token_present


class JwksUnavailable(AuthError):
    """The verification keys cannot be obtained (IAM down, bad JWKS): not the caller's fault."""


class AuthConfigError(AuthError, NmcError):
    """The OAuth settings are missing or inconsistent."""


class DevIamNotConfigured(AuthConfigError):
    """The dev token issuer was asked for a token while NMC_DEV_IAM_KEY_FILE is not set."""


@dataclass(frozen=True)
class Principal:
    """The authenticated caller: the DV's OIN plus token facts useful for audit (no secrets)."""

    oin: str
    subject: str | None
    token_id: str | None
    expires_at: int


@dataclass(frozen=True)
class AuthSettings:
    issuer: str
    audience: str
    jwks_url: str | None = None
    jwks_file: str | None = None
    oin_claim: str = DEFAULT_OIN_CLAIM
    refetch_seconds: float = DEFAULT_REFETCH_SECONDS
    max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS

    def __post_init__(self) -> None:
        if not self.issuer or not self.audience:
            raise AuthConfigError("NMC_OAUTH_ISSUER and NMC_OAUTH_AUDIENCE must both be set")
        if bool(self.jwks_url) == bool(self.jwks_file):
            raise AuthConfigError("set exactly one of NMC_OAUTH_JWKS_URL and NMC_OAUTH_JWKS_FILE")
        if self.jwks_url:
            parts = urlsplit(self.jwks_url)
            local = parts.hostname in _LOCAL_HOSTS
            if parts.scheme != "https" and not (parts.scheme == "http" and local):
                raise AuthConfigError("NMC_OAUTH_JWKS_URL must use https (http only for localhost)")
        if not self.oin_claim:
            raise AuthConfigError("NMC_OAUTH_OIN_CLAIM must not be empty")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "AuthSettings":
        env = os.environ if environ is None else environ
        return cls(
            issuer=env.get("NMC_OAUTH_ISSUER", ""),
            audience=env.get("NMC_OAUTH_AUDIENCE", ""),
            jwks_url=env.get("NMC_OAUTH_JWKS_URL") or None,
            jwks_file=env.get("NMC_OAUTH_JWKS_FILE") or None,
            oin_claim=env.get("NMC_OAUTH_OIN_CLAIM") or DEFAULT_OIN_CLAIM,
            refetch_seconds=_seconds(
                env, "NMC_OAUTH_JWKS_REFETCH_SECONDS", DEFAULT_REFETCH_SECONDS
            ),
            max_age_seconds=_seconds(
                env, "NMC_OAUTH_JWKS_MAX_AGE_SECONDS", DEFAULT_MAX_AGE_SECONDS
            ),
        )


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise AuthConfigError(f"{name} must be a number of seconds") from None
    if value < 0:
        raise AuthConfigError(f"{name} must not be negative")
    return value


# --------------------------------------------------------------------------------------------
# JWKS cache


class JwksCache:
    """The IAM's public keys, fetched lazily and kept in memory.

    Keys are refreshed when older than `max_age_seconds` (a failed refresh keeps the old keys),
    and a token with an unknown `kid` causes at most one fetch per `refetch_seconds`, so a flood
    of made-up kids cannot turn the NMC into a load generator against the IAM.
    """

    def __init__(
        self,
        settings: AuthSettings,
        *,
        http_client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._settings = settings
        self._client = http_client
        self._clock = clock
        self._keys: list[dict[str, Any]] | None = None
        self._loaded_at = 0.0
        self._last_attempt: float | None = None
        self._lock = asyncio.Lock()
        self.fetch_count = 0

    async def find(self, kid: str | None, alg: str) -> dict[str, Any] | None:
        """The JWK for (kid, alg), refetching once if the kid is unknown and the throttle allows."""
        await self._ensure_fresh()
        jwk_data = _select(self._keys or [], kid, alg)
        if jwk_data is None and self._may_attempt():
            async with self._lock:
                if self._may_attempt():
                    await self._refresh(raise_on_failure=False)
            jwk_data = _select(self._keys or [], kid, alg)
        return jwk_data

    async def prime(self) -> None:
        """Load the keys now (from the app's lifespan), so the first request does not wait."""
        async with self._lock:
            await self._refresh(raise_on_failure=True)

    async def _ensure_fresh(self) -> None:
        if self._keys is None:
            async with self._lock:
                if self._keys is None:
                    if not self._may_attempt(INITIAL_RETRY_SECONDS):
                        raise JwksUnavailable("JWKS not loaded; the last attempt failed")
                    await self._refresh(raise_on_failure=True)
            return
        if self._is_old() and self._may_attempt():
            async with self._lock:
                if self._is_old() and self._may_attempt():
                    await self._refresh(raise_on_failure=False)

    def _is_old(self) -> bool:
        return self._clock() - self._loaded_at >= self._settings.max_age_seconds

    def _may_attempt(self, interval: float | None = None) -> bool:
        last = self._last_attempt
        if interval is None:
            interval = self._settings.refetch_seconds
        return last is None or self._clock() - last >= min(interval, self._settings.refetch_seconds)

    async def _refresh(self, *, raise_on_failure: bool) -> None:
        self._last_attempt = self._clock()
        self.fetch_count += 1
        try:
            document = await self._load()
            keys = _usable_keys(document)
        except JwksUnavailable as exc:
            log.warning("JWKS refresh failed: %s", exc)
            if raise_on_failure:
                raise
            return
        self._keys = keys
        self._loaded_at = self._clock()

    async def _load(self) -> Any:
        if self._settings.jwks_file:
            try:
                raw = Path(self._settings.jwks_file).read_bytes()
            except OSError as exc:
                raise JwksUnavailable(f"JWKS file cannot be read ({exc.strerror})") from None
        else:
            raw = await self._fetch(self._settings.jwks_url or "")
        if len(raw) > MAX_JWKS_BYTES:
            raise JwksUnavailable("JWKS is larger than 1 MiB")
        try:
            return json.loads(raw)
        except ValueError:
            raise JwksUnavailable("JWKS is not valid JSON") from None

    async def _fetch(self, url: str) -> bytes:
        try:
            if self._client is not None:
                response = await self._client.get(url, timeout=JWKS_TIMEOUT_SECONDS)
            else:
                async with httpx.AsyncClient(timeout=JWKS_TIMEOUT_SECONDS) as client:
                    response = await client.get(url)
        except httpx.HTTPError as exc:
            raise JwksUnavailable(f"JWKS fetch failed ({type(exc).__name__})") from None
        if response.status_code != 200:
            raise JwksUnavailable(f"JWKS fetch answered HTTP {response.status_code}")
        return response.content


def _usable_keys(document: Any) -> list[dict[str, Any]]:
    """The signing keys of a JWKS we could use: RSA, or EC on P-256; never private keys."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise JwksUnavailable("JWKS has no 'keys' list")
    usable = []
    for key in document["keys"]:
        if not isinstance(key, dict) or "d" in key:
            continue  # a private key in a public JWKS is a publisher's mistake: do not use it
        if key.get("use", "sig") != "sig":
            continue
        if "key_ops" in key and "verify" not in (key.get("key_ops") or []):
            continue
        if key.get("kty") == "RSA" or (key.get("kty") == "EC" and key.get("crv") == "P-256"):
            usable.append(key)
    return usable


def _select(keys: list[dict[str, Any]], kid: str | None, alg: str) -> dict[str, Any] | None:
    """The key for (kid, alg): same kid, a key type that fits alg, no conflicting `alg`."""
    fitting = [
        key
        for key in keys
        if key.get("kty") == _KEY_TYPE_FOR_ALG[alg] and key.get("alg", alg) == alg
    ]
    if kid is not None:
        matches = [key for key in fitting if key.get("kid") == kid]
    else:
        # No kid in the token: acceptable only when the choice is unambiguous.
        matches = fitting if len(fitting) == 1 else []
    return matches[0] if len(matches) == 1 else None


# --------------------------------------------------------------------------------------------
# Verification


class BearerVerifier:
    """Verify DV bearer tokens. One instance per process; share it through app state."""

    def __init__(
        self,
        settings: AuthSettings,
        *,
        http_client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.settings = settings
        self.jwks = JwksCache(settings, http_client=http_client, clock=clock)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **kwargs: Any) -> "BearerVerifier":
        return cls(AuthSettings.from_env(environ), **kwargs)

    async def prime(self) -> None:
        """Fetch the JWKS now; raises JwksUnavailable when it cannot be had."""
        await self.jwks.prime()

    async def verify_header(self, authorization: str | None) -> Principal:
        """Verify an `Authorization` header value (`Bearer <token>`)."""
        if not authorization:
            raise Unauthenticated("bearer-token ontbreekt", token_present=False)
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthenticated("alleen een bearer-token wordt geaccepteerd")
        return await self.verify(token.strip())

    async def verify(self, token: str) -> Principal:
        """Verify a compact JWS and return the caller; raise Unauthenticated when unacceptable."""
        claims = await self.verify_claims(token)
        oin = claims.get(self.settings.oin_claim)
        if not isinstance(oin, str) or not _OIN.match(oin):
            raise Unauthenticated("token bevat geen geldig OIN")
        sub, jti = claims.get("sub"), claims.get("jti")
        return Principal(
            oin=oin,
            subject=sub if isinstance(sub, str) else None,
            token_id=jti if isinstance(jti, str) else None,
            expires_at=int(claims["exp"]),
        )

    async def verify_claims(self, token: str) -> dict[str, Any]:
        """Verify a compact JWS (algorithm, key, signature, iss, aud, exp, nbf) and return its
        claims, without asking for an OIN (the operator console asks for a role instead)."""
        if not isinstance(token, str) or not token:
            raise Unauthenticated("bearer-token ontbreekt", token_present=False)
        if len(token) > MAX_TOKEN_BYTES or token.count(".") != 2:
            raise Unauthenticated("token is geen JWS")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise Unauthenticated("token is onleesbaar") from None
        alg = header.get("alg")
        if alg not in ALLOWED_ALGORITHMS:
            raise Unauthenticated("algoritme niet toegestaan")
        if "crit" in header:
            raise Unauthenticated("kritieke header-extensies worden niet ondersteund")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise Unauthenticated("token is onleesbaar")
        jwk_data = await self.jwks.find(kid, alg)
        if jwk_data is None:
            raise Unauthenticated("onbekende sleutel")
        try:
            key = jwt.PyJWK(jwk_data, algorithm=alg).key
        except jwt.PyJWTError:
            raise Unauthenticated("onbekende sleutel") from None
        return self._decode(token, key, alg)

    def _decode(self, token: str, key: Any, alg: str) -> dict[str, Any]:
        try:
            return jwt.decode(
                token,
                key=key,
                algorithms=[alg],
                audience=self.settings.audience,
                issuer=self.settings.issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud"], "verify_signature": True},
            )
        except jwt.ExpiredSignatureError:
            raise Unauthenticated("token is verlopen") from None
        except jwt.ImmatureSignatureError:
            raise Unauthenticated("token is nog niet geldig") from None
        except jwt.InvalidIssuerError:
            raise Unauthenticated("onjuiste uitgever (iss)") from None
        except jwt.InvalidAudienceError:
            raise Unauthenticated("onjuiste audience (aud)") from None
        except jwt.MissingRequiredClaimError:
            raise Unauthenticated("verplichte claim ontbreekt") from None
        except jwt.InvalidSignatureError:
            raise Unauthenticated("handtekening ongeldig") from None
        except jwt.PyJWTError:
            raise Unauthenticated("token ongeldig") from None


# --------------------------------------------------------------------------------------------
# Development IAM


def generate_dev_iam_key(
    key_file: str | os.PathLike[str], jwks_file: str | os.PathLike[str], *, overwrite: bool = False
) -> str:
    """Write a new EC P-256 private key (PEM, mode 0600) and the matching JWKS; return the kid.

    Point NMC_DEV_IAM_KEY_FILE at the key and NMC_OAUTH_JWKS_FILE at the JWKS.
    """
    key_path, jwks_path = Path(key_file), Path(jwks_file)
    if not overwrite:
        for path in (key_path, jwks_path):
            if path.exists():
                raise AuthConfigError(f"{path} exists; pass overwrite=True to replace it")
    private_key = ec.generate_private_key(ec.SECP256R1())
    pem = private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    key_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    key_path.chmod(0o600)
    jwks = dev_jwks(key_path)
    jwks_path.parent.mkdir(parents=True, exist_ok=True)
    jwks_path.write_text(json.dumps(jwks, indent=2) + "\n", encoding="utf-8")
    return jwks["keys"][0]["kid"]


def dev_jwks(key_file: str | os.PathLike[str]) -> dict[str, Any]:
    """The public JWKS for a dev private key file."""
    private_key, alg = _load_dev_key(Path(key_file))
    return {"keys": [_public_jwk(private_key, alg)]}


def issue_dev_token(
    oin: str,
    *,
    audience: str | None = None,
    issuer: str | None = None,
    lifetime_seconds: int = 300,
    extra_claims: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    now: float | None = None,
) -> str:
    """A token as the MOZa IAM would issue it, signed with the dev key. Development only.

    Refused unless NMC_DEV_IAM_KEY_FILE names a key: production has no such key, so it cannot
    mint tokens. iss, aud and the OIN claim default to the verifier's settings.
    """
    env = os.environ if environ is None else environ
    key_file = env.get("NMC_DEV_IAM_KEY_FILE")
    if not key_file:
        raise DevIamNotConfigured(
            "the dev token issuer is disabled: set NMC_DEV_IAM_KEY_FILE to a dev private key "
            "(development and tests only)"
        )
    if not isinstance(oin, str) or not _OIN.match(oin):
        raise ValueError("an OIN is exactly 20 digits")
    claims = {
        "sub": oin,
        env.get("NMC_OAUTH_OIN_CLAIM") or DEFAULT_OIN_CLAIM: oin,
        **(extra_claims or {}),
    }
    return issue_dev_claims(
        claims,
        audience=audience,
        issuer=issuer,
        lifetime_seconds=lifetime_seconds,
        environ=env,
        now=now,
    )


def issue_dev_claims(
    claims: Mapping[str, Any],
    *,
    audience: str | None = None,
    issuer: str | None = None,
    lifetime_seconds: int = 300,
    environ: Mapping[str, str] | None = None,
    now: float | None = None,
) -> str:
    """A token with `claims` (plus iss, aud, iat, nbf, exp, jti), signed with the dev key.

    Development only, refused without NMC_DEV_IAM_KEY_FILE; iss and aud default to
    NMC_OAUTH_ISSUER and NMC_OAUTH_AUDIENCE. `issue_dev_token` (a DV's) and the operator
    console's dev tokens (`nmc admin token --console-rol`) are built on it.
    """
    env = os.environ if environ is None else environ
    key_file = env.get("NMC_DEV_IAM_KEY_FILE")
    if not key_file:
        raise DevIamNotConfigured(
            "the dev token issuer is disabled: set NMC_DEV_IAM_KEY_FILE to a dev private key "
            "(development and tests only)"
        )
    issuer = issuer or env.get("NMC_OAUTH_ISSUER")
    audience = audience or env.get("NMC_OAUTH_AUDIENCE")
    if not issuer or not audience:
        raise AuthConfigError("issue_dev_token needs an issuer and an audience (or NMC_OAUTH_*)")
    private_key, alg = _load_dev_key(Path(key_file))
    issued = int(time.time() if now is None else now)
    signed: dict[str, Any] = {
        "iss": issuer,
        "aud": audience,
        "iat": issued,
        "nbf": issued,
        "exp": issued + int(lifetime_seconds),
        "jti": str(uuid.uuid4()),
        **claims,
    }
    kid = _public_jwk(private_key, alg)["kid"]
    return jwt.encode(signed, private_key, algorithm=alg, headers={"kid": kid})


def _load_dev_key(path: Path) -> tuple[Any, str]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise AuthConfigError(f"dev IAM key file not found: {path}") from None
    try:
        private_key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise AuthConfigError(f"{path} is not an unencrypted PEM private key") from None
    if isinstance(private_key, ec.EllipticCurvePrivateKey) and isinstance(
        private_key.curve, ec.SECP256R1
    ):
        return private_key, "ES256"
    if isinstance(private_key, rsa.RSAPrivateKey) and private_key.key_size >= 2048:
        return private_key, "RS256"
    raise AuthConfigError(f"{path} must hold an EC P-256 or an RSA (>= 2048 bit) private key")


def _public_jwk(private_key: Any, alg: str) -> dict[str, Any]:
    """The public JWK with `kid` = its RFC 7638 thumbprint, so the kid follows the key."""
    algorithm = ECAlgorithm if alg == "ES256" else RSAAlgorithm
    jwk = algorithm.to_jwk(private_key.public_key(), as_dict=True)
    members = ("crv", "kty", "x", "y") if jwk["kty"] == "EC" else ("e", "kty", "n")
    thumbprint_input = json.dumps(
        {m: jwk[m] for m in members}, separators=(",", ":"), sort_keys=True
    ).encode("ascii")
    kid = base64.urlsafe_b64encode(hashlib.sha256(thumbprint_input).digest()).rstrip(b"=")
    return {**jwk, "kid": kid.decode("ascii"), "alg": alg, "use": "sig"}
