"""OAuth2 bearer verification for the DV API (and the operator console).

A DV calls with a JWT from the MOZa IAM gateway carrying its OIN (SPEC §7). The verifier checks
the signature against the IAM's JWKS (nmc.auth.jwks_cache), then iss, aud, exp and nbf (30 s
leeway), and takes the OIN from a configurable claim. Only RS256, PS256 and ES256 are accepted:
never `none`, never an HMAC algorithm (the classic attack signs an HS256 token with the public
key as secret), and the key type must fit the algorithm.

Settings (environment):
  NMC_OAUTH_ISSUER            expected `iss`
  NMC_OAUTH_AUDIENCE          expected `aud`
  NMC_OAUTH_JWKS_URL          JWKS over HTTPS (http only for localhost), or
  NMC_OAUTH_JWKS_FILE         JWKS from a file (tests, the dev IAM)
  NMC_OAUTH_OIN_CLAIM         claim holding the OIN (default `oin`)
  NMC_OAUTH_JWKS_REFETCH_SECONDS  least time between two fetches caused by unknown `kid`s (60)
  NMC_OAUTH_JWKS_MAX_AGE_SECONDS  keys older than this are refreshed before use (3600)

Failures are typed (nmc.auth.errors): `Unauthenticated` (the caller's token; becomes 401
with a short reason that holds no personal data) and `JwksUnavailable` (the keys cannot be
had; a server-side failure, not the caller's). Tokens are never logged. The development-only
token issuer, which signs tokens this verifier accepts, is nmc.admin.dev_iam.
"""

import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt

from nmc import settings_env
from nmc.auth.errors import AuthConfigError, Unauthenticated
from nmc.auth.jwks_cache import DEFAULT_MAX_AGE_SECONDS, DEFAULT_REFETCH_SECONDS, JwksCache

ALLOWED_ALGORITHMS: tuple[str, ...] = ("RS256", "PS256", "ES256")
LEEWAY_SECONDS = 30
DEFAULT_OIN_CLAIM = "oin"
MAX_TOKEN_BYTES = 16 * 1024

OIN_PATTERN = re.compile(r"\A[0-9]{20}\Z")
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


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
            issuer=settings_env.text(env, "NMC_OAUTH_ISSUER", ""),
            audience=settings_env.text(env, "NMC_OAUTH_AUDIENCE", ""),
            jwks_url=settings_env.text(env, "NMC_OAUTH_JWKS_URL"),
            jwks_file=settings_env.text(env, "NMC_OAUTH_JWKS_FILE"),
            oin_claim=settings_env.text(env, "NMC_OAUTH_OIN_CLAIM", DEFAULT_OIN_CLAIM),
            refetch_seconds=settings_env.seconds(
                env, "NMC_OAUTH_JWKS_REFETCH_SECONDS", DEFAULT_REFETCH_SECONDS, zero_allowed=True
            ),
            max_age_seconds=settings_env.seconds(
                env, "NMC_OAUTH_JWKS_MAX_AGE_SECONDS", DEFAULT_MAX_AGE_SECONDS, zero_allowed=True
            ),
        )


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
        self.jwks = JwksCache(
            url=settings.jwks_url,
            file=settings.jwks_file,
            refetch_seconds=settings.refetch_seconds,
            max_age_seconds=settings.max_age_seconds,
            http_client=http_client,
            clock=clock,
        )

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
        if not isinstance(oin, str) or not OIN_PATTERN.match(oin):
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
