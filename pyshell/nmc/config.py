"""Settings from the environment, all under the prefix NMC_.

NMC_DATABASE_URL  an external PostgreSQL server; when set, the embedded cluster is not used
NMC_DB_PORT       port of the embedded cluster (default: the one it remembers in
                  $NMC_HOME/port, else 54329; when 54329 is taken by another server at the
                  first start, `nmc db start` picks a free port and remembers it there)
NMC_HOME          working directory of the embedded cluster (default <project root>/.nmc)
NMC_TEST_CLOCK    "1" allows moving the database clock forward (tests and demos only)
NMC_ROOT          the project root: the directory holding sql/bootstrap.sql

Read by the API and the worker alike (their /metrics flag it per DV), with their own settings:
NMC_GEEN_CONTACTGEGEVENS_DREMPEL  the share of geen-contactgegevens above which a DV is
                  flagged (default 0.3; geen_contactgegevens_drempel)
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from nmc import settings_env
from nmc.errors import NmcError

DEFAULT_DB_PORT = 54329
PORT_FILE = "port"  # under $NMC_HOME: the embedded cluster's port when it is not the default
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent.parent  # pyshell/nmc/../..
DEFAULT_GEEN_CONTACTGEGEVENS_DREMPEL = 0.3


@dataclass(frozen=True)
class Settings:
    database_url: str | None
    db_port: int | None  # NMC_DB_PORT; None: not configured (see embedded_port)
    home: Path
    root: Path
    test_clock: bool

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Settings":
        env = os.environ if environ is None else environ
        root = settings_env.path(env, "NMC_ROOT", _PACKAGE_ROOT).resolve()
        return cls(
            database_url=settings_env.text(env, "NMC_DATABASE_URL"),
            db_port=settings_env.whole_number(env, "NMC_DB_PORT", None, minimum=1, maximum=65535),
            home=settings_env.path(env, "NMC_HOME", root / ".nmc").resolve(),
            root=root,
            test_clock=settings_env.flag(env, "NMC_TEST_CLOCK", False),
        )

    @property
    def port_file(self) -> Path:
        return self.home / PORT_FILE

    def remembered_port(self) -> int | None:
        """The port the embedded cluster under $NMC_HOME took instead of the default."""
        try:
            text = self.port_file.read_text().strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def embedded_port(self) -> int:
        """The embedded cluster's port: NMC_DB_PORT, else the remembered one, else 54329."""
        if self.db_port is not None:
            return self.db_port
        return self.remembered_port() or DEFAULT_DB_PORT


def check_root(root: Path) -> Path:
    """Return `root` if it is a project root, else explain what is missing."""
    if not (root / "sql" / "bootstrap.sql").is_file():
        raise NmcError(
            f"{root} is not an NMC project root (no sql/bootstrap.sql); pass --root or set NMC_ROOT"
        )
    return root


def geen_contactgegevens_drempel(env: Mapping[str, str]) -> float:
    """NMC_GEEN_CONTACTGEGEVENS_DREMPEL: a share between 0 and 1 (default 0.3)."""
    return settings_env.share(
        env, "NMC_GEEN_CONTACTGEGEVENS_DREMPEL", DEFAULT_GEEN_CONTACTGEGEVENS_DREMPEL
    )
