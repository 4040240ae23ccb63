"""A private PostgreSQL cluster for development and tests, kept under $NMC_HOME.

DEV-ONLY: it listens on 127.0.0.1 only and trusts every loopback and unix-socket
connection (pg_hba `trust`), so any local user may connect as any role, the superuser
`postgres` included. Never keep data you care about in it; use NMC_DATABASE_URL for that.

PostgreSQL refuses to run as root, so when we are root the cluster belongs to the
`postgres` OS user and initdb/pg_ctl run through `runuser -u postgres --`.

Its port: NMC_DB_PORT when set (used as it is), else the default 54329. When that is taken
at a start (another checkout's cluster, any server), the cluster takes a free port instead,
says so in one line, and remembers it in $NMC_HOME/port, where every later command (`nmc db
url`, the demo, the tests) finds it; it keeps that port while it is free.
"""

import os
import pwd
import socket
import subprocess
import sys
from enum import Enum
from pathlib import Path

from nmc.config import Settings
from nmc.database import (
    EMBEDDED_DATABASE,
    EMBEDDED_SUPERUSER,
    LOOPBACK,
    connect,
    connection_url,
)
from nmc.errors import NmcError
from nmc_dev.pg_binaries import SERVER_PACKAGE, server_tool
from nmc_dev.queries import QUERIES, on_database

CLUSTER_OS_USER = "postgres"


class Status(Enum):
    RUNNING = "running"
    STOPPED = "stopped"
    ABSENT = "not initialised"


class EmbeddedCluster:
    def __init__(self, settings: Settings, *, preload: tuple[str, ...] = ()):
        self.settings = settings
        # shared_preload_libraries, read at the postmaster's start only (the lifecycle
        # benchmark's own cluster loads pg_stat_statements; the developer's loads nothing).
        self.preload = preload
        self.data_dir = settings.home / "pgdata"
        self.run_dir = settings.home / "run"  # unix socket and server log
        self.log_file = self.run_dir / "postgres.log"

    def describe(self) -> str:
        return f"{LOOPBACK}:{self.settings.embedded_port()}, data in {self.data_dir}"

    def status(self) -> Status:
        if not (self.data_dir / "PG_VERSION").is_file():
            return Status.ABSENT
        result = self._run_pg_ctl("status", check=False)
        return Status.RUNNING if result.returncode == 0 else Status.STOPPED

    def start(self) -> str:
        """Initialise on first use, start unless running, make sure database `nmc` exists."""
        status = self.status()
        if status is Status.ABSENT:
            self._initialise()
        if status is Status.RUNNING:
            message = f"embedded PostgreSQL already running ({self.describe()})"
        else:
            self._start_on_a_free_port()
            message = f"embedded PostgreSQL started ({self.describe()})"
        self._create_database()
        return message

    def _start_on_a_free_port(self) -> None:
        """pg_ctl start on the configured port; when the port is not configured and taken,
        on a free one (once more if another process took the one found meanwhile)."""
        for attempt in range(2):
            port = self._choose_port()
            self._write_settings(port)
            result = self._run_pg_ctl(
                "start", "--wait", "--timeout=60", f"--log={self.log_file}", check=False
            )
            if result.returncode == 0:
                return
            taken = "could not bind" in self._log_tail() and not _port_is_free(port)
            if not (taken and self.settings.db_port is None and attempt == 0):
                raise NmcError(
                    f"embedded PostgreSQL did not start:\n{result.stdout}{result.stderr}"
                    f"last lines of {self.log_file}:\n{self._log_tail()}"
                )

    def _choose_port(self) -> int:
        port = self.settings.embedded_port()
        if _port_is_free(port):
            return port
        if self.settings.db_port is not None:
            raise NmcError(
                f"port {port} (NMC_DB_PORT) is taken by another server: stop it, or set "
                "NMC_DB_PORT to a free port (unset, a taken port is replaced by a free one)"
            )
        free = _free_port()
        self.settings.port_file.write_text(f"{free}\n")
        print(
            f"nmc: port {port} is taken by another server; the embedded PostgreSQL of "
            f"{self.settings.home} uses port {free} (remembered in {self.settings.port_file})",
            file=sys.stderr,
            flush=True,
        )
        return free

    def stop(self) -> str:
        if self.status() is not Status.RUNNING:
            return "embedded PostgreSQL is not running"
        self._run_pg_ctl("stop", "--wait", "--mode=fast")
        return "embedded PostgreSQL stopped"

    def _initialise(self) -> None:
        for directory in (self.data_dir, self.run_dir):
            directory.mkdir(parents=True, exist_ok=True)
            _give_to_cluster_owner(directory)
        self._check_reachable()
        self._run_as_cluster_owner(
            [
                str(server_tool("initdb")),
                f"--pgdata={self.data_dir}",
                f"--username={EMBEDDED_SUPERUSER}",
                "--auth=trust",  # dev-only, see the module docstring
                "--encoding=UTF8",
                "--locale=C.UTF-8",
            ]
        )
        with (self.data_dir / "postgresql.conf").open("a") as conf:
            conf.write("\n# Written by `nmc db start` on every start.\ninclude = 'nmc.conf'\n")

    def _write_settings(self, port: int) -> None:
        """Rewrite nmc.conf so the port and socket follow the current NMC_ settings."""
        socket_dir = str(self.run_dir).replace("'", "''")
        settings_file = self.data_dir / "nmc.conf"
        settings_file.write_text(
            f"listen_addresses = '{LOOPBACK}'\n"
            f"port = {port}\n"
            f"unix_socket_directories = '{socket_dir}'\n"
            # PostgreSQL's 128 MB default holds too little of a busy intake's indexes: the
            # batch intake lost a third of its rate once the tables passed it (benchmarks).
            # Allocated as used, so an idle demo cluster costs no more.
            "shared_buffers = '1GB'\n"
        )
        if self.preload:
            libraries = ",".join(self.preload).replace("'", "''")
            settings_file.write_text(
                settings_file.read_text() + f"shared_preload_libraries = '{libraries}'\n"
            )
        _give_to_cluster_owner(settings_file)

    def _create_database(self) -> None:
        url = connection_url(self.settings, database="postgres")
        with connect(url) as conn:
            if not conn.execute(QUERIES["database_exists"], {"name": EMBEDDED_DATABASE}).fetchone():
                conn.execute(on_database("create_database", EMBEDDED_DATABASE))

    def _check_reachable(self) -> None:
        """Fail clearly when the cluster's OS user cannot reach $NMC_HOME (e.g. under /root)."""
        if self._owner_passes_test("-w", self.run_dir):
            return
        path = [*reversed(self.run_dir.parents), self.run_dir]
        blocker = next((d for d in path if not self._owner_passes_test("-x", d)), self.run_dir)
        raise NmcError(
            f"the {CLUSTER_OS_USER} OS user cannot reach {self.settings.home}: {blocker} is "
            f"not traversable for it. Allow it (`chmod o+x {blocker}`) or set NMC_HOME to a "
            "directory it can reach, such as /tmp/nmc"
        )

    def _owner_passes_test(self, flag: str, path: Path) -> bool:
        """`test <flag> <path>` (e.g. -x: may enter) as the cluster's OS user."""
        return self._run_as_cluster_owner(["test", flag, str(path)], check=False).returncode == 0

    def _run_pg_ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self._run_as_cluster_owner(
            [str(server_tool("pg_ctl")), f"--pgdata={self.data_dir}", *args], check=check
        )

    def _run_as_cluster_owner(
        self, command: list[str], check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        program = Path(command[0]).name
        if _is_root():
            command = ["runuser", "-u", CLUSTER_OS_USER, "--", *command]
        # The cluster's OS user may not be able to enter our working directory.
        cwd = self.run_dir if self.run_dir.is_dir() else "/"
        result = subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False)
        if check and result.returncode != 0:
            raise NmcError(f"{program} failed:\n{result.stdout}{result.stderr}")
        return result

    def _log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError as error:
            return f"(cannot read the log: {error})"


def _port_is_free(port: int) -> bool:
    """Whether PostgreSQL could listen on loopback:`port` (it sets SO_REUSEADDR too, so a
    socket in TIME_WAIT does not count as taken; a listener, also on 0.0.0.0 or ::, does)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def _is_root() -> bool:
    return os.geteuid() == 0


def _give_to_cluster_owner(path: Path) -> None:
    if not _is_root():
        return
    try:
        owner = pwd.getpwnam(CLUSTER_OS_USER)
    except KeyError:
        raise NmcError(
            f"running as root, but there is no {CLUSTER_OS_USER!r} OS user to own the "
            f"cluster: install `{SERVER_PACKAGE}` or run as an ordinary user"
        ) from None
    os.chown(path, owner.pw_uid, owner.pw_gid)
