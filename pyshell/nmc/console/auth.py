"""Who may use the console: operators with a token of the DV API's own IAM.

The console verifies every request's token itself, against the IAM's JWKS (nmc.auth.bearer: the
algorithms, the key, iss, exp and nbf), with an audience of its own, and reads the roles from
a claim. It never trusts an identity a proxy asserts in a header of its own: a token comes
either from the platform's authenticating proxy as `Authorization: Bearer …` (the proxy does
the login, the console still checks the token), or from the login form, which keeps it in an
HttpOnly, SameSite=Strict cookie. See docs/console.md for why.

Two roles: the operator role may act (reopen a task, force a transition, resume a webhook),
the reader role may only look. A token with neither is refused (403).

Sessions live in the database (nmc.console_open_sessie, functions/beheer/console_sessie.sql),
so every console replica knows them: the login form's cookie holds only a random session id
(the table its SHA-256), a logout ends the session for good, and the proxy's bearer token
opens (and prolongs) a session keyed by the token's SHA-256. An action names the session and
SQL writes the session's operator into the audit trail.

CSRF: every form that changes something carries the session's own random CSRF token (held
with the session, so no key is shared between replicas), checked on the POST together with
the Origin and Sec-Fetch-Site headers (`same_origin`) against the console's public origin.
"""

import hashlib
import hmac
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from nmc.auth.bearer import BearerVerifier
from nmc.auth.errors import Unauthenticated
from nmc.console.settings import ConsoleSettings

COOKIE = "nmc_console"


class Forbidden(Exception):
    """Authenticated, but without a role of the console (or the action needs the operator's)."""


@dataclass(frozen=True)
class Verified:
    """What a verified IAM token says: the subject id (never a name or an e-mail address),
    whether its role may act, and when it expires (Unix seconds)."""

    subject: str
    may_act: bool
    expires_at: int

    def seconds_left(self) -> int:
        return self.expires_at - int(time.time())


@dataclass(frozen=True)
class Operator:
    """The person at the console, as their session in the database holds them."""

    subject: str
    may_act: bool
    csrf: str
    sessie: bytes  # the SHA-256 the session is kept under
    via_cookie: bool

    @property
    def role(self) -> str:
        return "beheerder" if self.may_act else "lezer"


def new_session_id() -> str:
    """The cookie of a login-form session: 256 random bits."""
    return secrets.token_urlsafe(32)


def session_hash(secret: str) -> bytes:
    """What the database keeps of a session id (or of the proxy's bearer token)."""
    return hashlib.sha256(b"nmc-console-sessie\x00" + secret.encode()).digest()


class OperatorVerifier:
    def __init__(self, settings: ConsoleSettings, verifier: BearerVerifier | None = None):
        self.settings = settings
        self.verifier = verifier or BearerVerifier(settings.auth)

    async def prime(self) -> None:
        await self.verifier.prime()

    async def verify(self, token: str) -> Verified:
        """What the token says; Unauthenticated or Forbidden when it names no operator."""
        claims = await self.verifier.verify_claims(token)
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject.strip():
            raise Unauthenticated("token zonder sub")
        roles = roles_of(claims, self.settings.role_claim)
        if self.settings.operator_role in roles:
            may_act = True
        elif self.settings.reader_role in roles:
            may_act = False
        else:
            raise Forbidden("geen rol voor de beheerconsole")
        return Verified(subject=subject.strip(), may_act=may_act, expires_at=int(claims["exp"]))


def roles_of(claims: Mapping[str, Any], claim: str) -> set[str]:
    """The roles in `claim` (a dotted path reads nested objects): a list, or space-separated."""
    value: Any = claims
    for part in claim.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, str):
        return set(value.split())
    if isinstance(value, list):
        return {item for item in value if isinstance(item, str)}
    return set()


def bearer_of(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer …` header (what the platform's proxy sends)."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("alleen een bearer-token wordt geaccepteerd")
    return token.strip()


def csrf_ok(operator: Operator, given: str | None) -> bool:
    return bool(given) and hmac.compare_digest(operator.csrf.encode(), (given or "").encode())


def same_origin(headers: Mapping[str, str], public_origin: str | None) -> bool:
    """A POST a browser sent from the console's own pages: Sec-Fetch-Site same-origin (or
    absent: an older browser), and an Origin, when sent, that is the console's public origin
    (NMC_CONSOLE_PUBLIC_URL: a proxy may rewrite Host) or, without one, of the Host asked."""
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = headers.get("origin")
    if origin is None:
        return True
    if origin == "null":
        return False
    if public_origin is not None:
        return origin.rstrip("/").lower() == public_origin
    return urlsplit(origin).netloc == headers.get("host", "")
