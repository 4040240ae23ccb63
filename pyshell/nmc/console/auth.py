"""Who may use the console: operators with a token of the DV API's own IAM.

The console verifies every request's token itself, against the IAM's JWKS (nmc.api.auth: the
algorithms, the key, iss, exp and nbf), with an audience of its own, and reads the roles from
a claim. It never trusts an identity a proxy asserts in a header of its own: a token comes
either from the platform's authenticating proxy as `Authorization: Bearer …` (the proxy does
the login, the console still checks the token), or from the login form, which keeps it in an
HttpOnly, SameSite=Strict cookie. See docs/console.md for why.

Two roles: the operator role may act (reopen a task, force a transition, resume a webhook),
the reader role may only look. A token with neither is refused (403).

CSRF: every form that changes something carries a token that is an HMAC of the session's
token under a key of the console (`csrf_token`), checked on the POST together with the
Origin and Sec-Fetch-Site headers (`same_origin`).
"""

import base64
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from nmc.api.auth import BearerVerifier
from nmc.api.auth_errors import Unauthenticated
from nmc.console.settings import ConsoleSettings

COOKIE = "nmc_console"
MAX_COOKIE_TOKEN = 4000  # a browser keeps about 4 KB per cookie
MAX_DOOR = 100  # nmc.beheeractie.door


class Forbidden(Exception):
    """Authenticated, but without a role of the console (or the action needs the operator's)."""


@dataclass(frozen=True)
class Operator:
    """The person at the console: the IAM's subject id (never a name or an e-mail address)."""

    subject: str
    may_act: bool
    expires_at: int
    token: str
    via_cookie: bool

    @property
    def door(self) -> str:
        """Who, in the audit trail (nmc.beheeractie.door)."""
        return f"console:{self.subject}"[:MAX_DOOR]

    @property
    def role(self) -> str:
        return "beheerder" if self.may_act else "lezer"


class OperatorVerifier:
    def __init__(self, settings: ConsoleSettings, verifier: BearerVerifier | None = None):
        self.settings = settings
        self.verifier = verifier or BearerVerifier(settings.auth)

    async def prime(self) -> None:
        await self.verifier.prime()

    async def operator(self, token: str, *, via_cookie: bool) -> Operator:
        """The operator the token names; Unauthenticated or Forbidden when it names none."""
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
        return Operator(
            subject=subject.strip(),
            may_act=may_act,
            expires_at=int(claims["exp"]),
            token=token,
            via_cookie=via_cookie,
        )


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


def csrf_token(key: bytes, token: str) -> str:
    """The CSRF token of a session: bound to its IAM token, unguessable without the key."""
    digest = hmac.new(
        key, b"nmc-console-csrf\x00" + hashlib.sha256(token.encode()).digest(), "sha256"
    ).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def csrf_ok(key: bytes, token: str, given: str | None) -> bool:
    return bool(given) and hmac.compare_digest(csrf_token(key, token), given or "")


def same_origin(headers: Mapping[str, str]) -> bool:
    """A POST a browser sent from the console's own pages: Sec-Fetch-Site same-origin (or
    absent: an older browser), and an Origin, when sent, of the console's own host."""
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = headers.get("origin")
    if origin is None:
        return True
    if origin == "null":
        return False
    return urlsplit(origin).netloc == headers.get("host", "")
