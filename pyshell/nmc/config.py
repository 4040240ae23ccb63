"""Settings from the environment, all under the prefix NMC_.

NMC_DATABASE_URL  an external PostgreSQL server; when set, the embedded cluster is not used
NMC_DB_PORT       port of the embedded cluster (default 54329)
NMC_HOME          working directory of the embedded cluster (default <project root>/.nmc)
NMC_TEST_CLOCK    "1" allows moving the database clock forward (tests and demos only)
NMC_ROOT          the project root: the directory holding sql/bootstrap.sql
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from nmc.errors import NmcError

DEFAULT_DB_PORT = 54329
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent.parent  # pyshell/nmc/../..


@dataclass(frozen=True)
class Settings:
    database_url: str | None
    db_port: int
    home: Path
    root: Path
    test_clock: bool

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Settings":
        env = os.environ if environ is None else environ
        root = Path(env.get("NMC_ROOT") or _PACKAGE_ROOT).resolve()
        port_text = env.get("NMC_DB_PORT") or str(DEFAULT_DB_PORT)
        if not port_text.isdigit():
            raise NmcError(f"NMC_DB_PORT must be a port number, not {port_text!r}")
        return cls(
            database_url=env.get("NMC_DATABASE_URL") or None,
            db_port=int(port_text),
            home=Path(env.get("NMC_HOME") or root / ".nmc").resolve(),
            root=root,
            test_clock=env.get("NMC_TEST_CLOCK") == "1",
        )


def check_root(root: Path) -> Path:
    """Return `root` if it is a project root, else explain what is missing."""
    if not (root / "sql" / "bootstrap.sql").is_file():
        raise NmcError(
            f"{root} is not an NMC project root (no sql/bootstrap.sql); pass --root or set NMC_ROOT"
        )
    return root
