"""Which database a command talks to (as a libpq URL), and connecting to it.

Without NMC_DATABASE_URL that is the embedded cluster (`nmc db start`): superuser
`postgres` and the shell's roles, all over loopback trust. With it, the external URL,
with the user and database swapped in when a role or database is asked for (the roles'
passwords then come from PGPASSWORD or ~/.pgpass, never from us).

Every connection made here (the admin commands, `kek rotate`, `nmc migrate`, the developer
tools) carries a statement timeout and an idle-in-transaction timeout, as the API's and the
worker's roles do (sql/bootstrap.sql): an open transaction holds the feed watermark back for
every DV. They are sent as startup options, before PGOPTIONS and the URL's own `options`, so
an operator's explicit setting wins (`PGOPTIONS='-c statement_timeout=10min' nmc admin …`).
The admin connection goes to PostgreSQL itself (CloudNativePG's `-rw` service), not through
PgBouncer, which refuses unknown startup options.
"""

import os
from typing import Literal
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from nmc.config import Settings
from nmc.errors import NmcError

Role = Literal["admin", "api", "worker", "console"]
ROLE_USERS: dict[Role, str | None] = {
    "admin": None,
    "api": "nmc_api",
    "worker": "nmc_worker",
    "console": "nmc_console",
}

LOOPBACK = "127.0.0.1"
EMBEDDED_SUPERUSER = "postgres"
EMBEDDED_DATABASE = "nmc"


def connection_url(settings: Settings, role: Role = "admin", database: str | None = None) -> str:
    user = ROLE_USERS[role]
    if settings.database_url:
        return with_overrides(settings.database_url, user=user, database=database)
    return (
        f"postgresql://{user or EMBEDDED_SUPERUSER}@{LOOPBACK}:{settings.embedded_port()}/"
        f"{quote(database or EMBEDDED_DATABASE)}"
    )


def with_overrides(url: str, user: str | None = None, database: str | None = None) -> str:
    """`url` with another user (its password dropped) and/or database; URLs stay URLs."""
    if user is None and database is None:
        return url
    if url.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(url)
        netloc = parts.netloc
        if user is not None:
            netloc = f"{quote(user)}@{netloc.rpartition('@')[2]}"
        path = parts.path if database is None else "/" + quote(database)
        return urlunsplit(parts._replace(netloc=netloc, path=path))
    params = conninfo_to_dict(url)
    if user is not None:
        params["user"] = user
        params.pop("password", None)
    if database is not None:
        params["dbname"] = database
    return make_conninfo("", **params)


# An admin command is a few short statements; a KEK rotation is many short batches.
ADMIN_STATEMENT_TIMEOUT = "60s"
ADMIN_IDLE_IN_TRANSACTION_TIMEOUT = "60s"
# A schema file may rebuild an index on a large table: longer, but not unbounded.
MIGRATE_STATEMENT_TIMEOUT = "15min"

Purpose = Literal["admin", "migrate"]


def session_options(url: str, purpose: Purpose = "admin") -> str:
    """The libpq `options` of a connection: our timeouts, then the caller's own options."""
    statement = MIGRATE_STATEMENT_TIMEOUT if purpose == "migrate" else ADMIN_STATEMENT_TIMEOUT
    ours = (
        f"-c statement_timeout={statement} "
        f"-c idle_in_transaction_session_timeout={ADMIN_IDLE_IN_TRANSACTION_TIMEOUT}"
    )
    try:
        theirs = conninfo_to_dict(url).get("options") or os.environ.get("PGOPTIONS", "")
    except psycopg.ProgrammingError:
        theirs = ""  # an unparsable URL: psycopg.connect says what is wrong with it
    return f"{ours} {theirs}".strip()


def connect(url: str, purpose: Purpose = "admin") -> psycopg.Connection:
    """An autocommit connection with the admin timeouts; a clear error when the server
    cannot be reached."""
    try:
        return psycopg.connect(url, autocommit=True, options=session_options(url, purpose))
    except psycopg.OperationalError as error:
        raise NmcError(
            f"cannot connect to the database: {error}\n"
            "(is the server running? `nmc db start` starts the embedded one)"
        ) from error
