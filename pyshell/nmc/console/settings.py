"""The console's settings (environment, prefix NMC_CONSOLE_; the IAM is the DV API's).

NMC_CONSOLE_DATABASE_URL     the console's database (default: `nmc db url --role console`)
NMC_CONSOLE_OAUTH_AUDIENCE   the `aud` an operator's token must carry (required): a token for
                             the DV API (NMC_OAUTH_AUDIENCE) is no console token
NMC_OAUTH_ISSUER, NMC_OAUTH_JWKS_URL / NMC_OAUTH_JWKS_FILE
                             the same IAM as the DV API's (nmc.auth.bearer)
NMC_CONSOLE_ROLE_CLAIM       the claim holding the roles (default `roles`; a list or a
                             space-separated string; a dotted path such as
                             `realm_access.roles` reads a nested claim)
NMC_CONSOLE_OPERATOR_ROLE    the role that may act (default `nmc-beheerder`)
NMC_CONSOLE_READER_ROLE      the role that may only look (default `nmc-lezer`)
NMC_CONSOLE_PUBLIC_URL       the console's URL as the browser sees it (e.g.
                             https://beheer.nmc.example): a POST's Origin must be its origin.
                             Unset: the Host header asked (fine without a proxy that rewrites
                             Host; a start-up warning says so)
NMC_CONSOLE_COOKIE_SECURE    "0" drops the cookie's Secure flag (plain-http development
                             on localhost only); default "1"
NMC_CONSOLE_POOL_MAX         connections to the database (default 4)
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from nmc import settings_env
from nmc.auth.bearer import AuthSettings
from nmc.config import Settings
from nmc.database import connection_url
from nmc.errors import NmcError

DEFAULT_ROLE_CLAIM = "roles"
DEFAULT_OPERATOR_ROLE = "nmc-beheerder"
DEFAULT_READER_ROLE = "nmc-lezer"


@dataclass(frozen=True)
class ConsoleSettings:
    database_url: str
    auth: AuthSettings
    role_claim: str = DEFAULT_ROLE_CLAIM
    operator_role: str = DEFAULT_OPERATOR_ROLE
    reader_role: str = DEFAULT_READER_ROLE
    public_origin: str | None = None
    cookie_secure: bool = True
    pool_max: int = 4

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "ConsoleSettings":
        env = os.environ if environ is None else environ
        audience = settings_env.text(env, "NMC_CONSOLE_OAUTH_AUDIENCE", "")
        if not audience:
            raise NmcError(
                "NMC_CONSOLE_OAUTH_AUDIENCE is not set: the audience of the operators' tokens "
                "(never the DV API's NMC_OAUTH_AUDIENCE)"
            )
        if audience == settings_env.text(env, "NMC_OAUTH_AUDIENCE"):
            raise NmcError(
                "NMC_CONSOLE_OAUTH_AUDIENCE must differ from NMC_OAUTH_AUDIENCE: a DV's token "
                "must not open the console"
            )
        auth = AuthSettings.from_env({**env, "NMC_OAUTH_AUDIENCE": audience})
        operator = settings_env.text(env, "NMC_CONSOLE_OPERATOR_ROLE", DEFAULT_OPERATOR_ROLE)
        reader = settings_env.text(env, "NMC_CONSOLE_READER_ROLE", DEFAULT_READER_ROLE)
        if operator == reader:
            raise NmcError("NMC_CONSOLE_OPERATOR_ROLE and NMC_CONSOLE_READER_ROLE must differ")
        return cls(
            database_url=settings_env.text(env, "NMC_CONSOLE_DATABASE_URL")
            or connection_url(Settings.from_env(env), "console"),
            auth=auth,
            role_claim=settings_env.text(env, "NMC_CONSOLE_ROLE_CLAIM", DEFAULT_ROLE_CLAIM),
            operator_role=operator,
            reader_role=reader,
            public_origin=public_origin(settings_env.text(env, "NMC_CONSOLE_PUBLIC_URL", "")),
            cookie_secure=settings_env.flag(env, "NMC_CONSOLE_COOKIE_SECURE", True),
            pool_max=settings_env.whole_number(env, "NMC_CONSOLE_POOL_MAX", 4, minimum=1),
        )


def public_origin(url: str) -> str | None:
    """The origin (scheme://host[:port], lower case) of NMC_CONSOLE_PUBLIC_URL, or None."""
    if not url:
        return None
    parts = urlsplit(url.strip())
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise NmcError("NMC_CONSOLE_PUBLIC_URL must be an http(s) URL, e.g. https://beheer.example")
    return f"{parts.scheme}://{parts.netloc}".lower()
