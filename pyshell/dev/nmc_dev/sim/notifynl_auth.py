"""The NotifyNL simulator's token check, as NotifyNL's `requires_auth` does it.

Order and messages follow the upstream API (alphagov/notifications-api,
app/authentication/auth.py): missing header or scheme -> 401; unreadable token, missing or
malformed `iss`, unknown service -> 403; then each key of the service is tried: a good
signature with `iat` more than 30 s off the server clock -> 403 clock error; a wrong
algorithm -> 403; a signature that matches no key (or no `iat`) -> 403 "API key not found".
"""

import functools
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

import jwt

CLOCK_BOUND_S = 30
GENERAL_AUTH_MESSAGE = (
    "Invalid token: make sure your API token matches the example at "
    "https://docs.notifications.service.gov.uk/rest-api.html#authorisation-header"
)


@dataclass(frozen=True)
class AuthError(Exception):
    status_code: int
    message: str

    def body(self) -> dict:
        return {
            "status_code": self.status_code,
            "errors": [{"error": "AuthError", "message": self.message}],
        }


@dataclass(frozen=True)
class SimKey:
    service_id: str
    secret: str
    revoked: bool = False

    @classmethod
    def parse(cls, api_key: str, revoked: bool = False) -> "SimKey":
        return cls(service_id=api_key[-73:-37], secret=api_key[-36:], revoked=revoked)


def authenticate(header: str | None, keys: Mapping[str, list[SimKey]], now: float) -> str:
    """Return the service id of a valid token, or raise `AuthError`."""
    if not header:
        raise AuthError(401, "Unauthorized: authentication token must be provided")
    if header[:7].title() != "Bearer ":
        raise AuthError(401, "Unauthorized: authentication bearer scheme must be used")
    token = header[7:]
    unverified = _unverified(token)
    if unverified is None:
        raise AuthError(403, GENERAL_AUTH_MESSAGE)
    claims, algorithm = unverified
    issuer = claims.get("iss")
    if not issuer:
        raise AuthError(403, "Invalid token: iss field not provided")
    try:
        uuid.UUID(str(issuer))
    except ValueError:
        raise AuthError(403, "Invalid token: service id is not the right data type") from None
    service_keys = keys.get(str(issuer))
    if service_keys is None:
        raise AuthError(403, "Invalid token: service not found")
    if not service_keys:
        raise AuthError(403, "Invalid token: service has no API keys")
    for key in service_keys:
        if algorithm != "HS256":
            raise AuthError(403, "Invalid token: algorithm used is not HS256")
        verified = _verified(token, key.secret)
        if verified is None:
            continue  # not signed with this key: try the next one
        issued_at = verified.get("iat")
        if not isinstance(issued_at, int | float) or isinstance(issued_at, bool):
            continue  # upstream: TokenIssuedAtError is a decode error, so the next key
        if abs(now - issued_at) > CLOCK_BOUND_S:
            raise AuthError(403, "Error: Your system clock must be accurate to within 30 seconds")
        if key.revoked:
            raise AuthError(403, "Invalid token: API key revoked")
        return key.service_id
    raise AuthError(403, "Invalid token: API key not found")


# A client makes a fresh token per request, but tokens made in the same second are the same
# bytes: decoding and verifying each distinct (token, secret) once is enough. The clock rule
# and the revocation are still judged on every request.


@functools.lru_cache(maxsize=4096)
def _unverified(token: str) -> tuple[dict, str | None] | None:
    """The claims and `alg` of a token, unverified; None when it cannot be read."""
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
        return claims, jwt.get_unverified_header(token).get("alg")
    except jwt.PyJWTError:
        return None


@functools.lru_cache(maxsize=4096)
def _verified(token: str, secret: str) -> dict | None:
    """The claims of a token signed with `secret` (HS256); None when it is not."""
    try:
        return jwt.decode(
            token,
            secret,
            algorithms=["HS256"],
            options={"verify_iat": False, "verify_exp": False, "verify_nbf": False},
        )
    except jwt.PyJWTError:
        return None
