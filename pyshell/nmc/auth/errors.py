"""The failures of bearer verification, typed by whose they are.

`Unauthenticated` is the caller's (its token; the API answers 401 with a short reason that
holds no personal data), `JwksUnavailable` the server's (the IAM's keys cannot be had), and
`AuthConfigError` the deployment's (the OAuth settings).
"""

from nmc.settings_env import SettingError


class AuthError(Exception):
    """Base of the failures of bearer verification."""


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


class AuthConfigError(AuthError, SettingError):
    """The OAuth settings are missing or inconsistent."""
