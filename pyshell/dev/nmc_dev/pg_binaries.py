"""Where the PostgreSQL programs are: `pg_config --bindir`, else the newest Debian install."""

import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

from nmc.errors import NmcError

SERVER_PACKAGE = "postgresql-15"
CLIENT_PACKAGE = "postgresql-client-15"
_DEBIAN_INSTALLS = Path("/usr/lib/postgresql")


@cache
def server_bindir() -> Path | None:
    """The directory holding initdb and pg_ctl, or None when no server is installed.

    Debian's /usr/bin/pg_config belongs to libpq-dev and may name a version whose server
    is not installed, so its answer counts only when initdb is actually there.
    """
    pg_config = shutil.which("pg_config")
    if pg_config:
        result = subprocess.run(
            [pg_config, "--bindir"], capture_output=True, text=True, check=False
        )
        bindir = Path(result.stdout.strip())
        if result.returncode == 0 and (bindir / "initdb").is_file():
            return bindir
    installs = [
        path / "bin"
        for path in _DEBIAN_INSTALLS.glob("*")
        if re.fullmatch(r"\d+", path.name) and (path / "bin" / "initdb").is_file()
    ]
    return max(installs, key=lambda bindir: int(bindir.parent.name), default=None)


def server_tool(name: str) -> Path:
    """A server program (initdb, pg_ctl); a clear error when PostgreSQL is not installed."""
    bindir = server_bindir()
    if bindir is None:
        raise NmcError(
            f"PostgreSQL server binaries not found (no {name}): install them with "
            f"`apt-get install {SERVER_PACKAGE}`, or set NMC_DATABASE_URL to use an "
            "existing server"
        )
    return bindir / name


def client_tool(name: str) -> Path:
    """A client program (psql, pg_dump), preferably the one matching the server binaries."""
    bindir = server_bindir()
    if bindir is not None and (bindir / name).is_file():
        return bindir / name
    found = shutil.which(name)
    if found is None:
        raise NmcError(f"{name} not found: install it with `apt-get install {CLIENT_PACKAGE}`")
    return Path(found)
