"""Several real PostgreSQL clusters on one machine: a primary, streaming standbys, a WAL
archive and base backups (the drills and the standby tests; CloudNativePG automates exactly
these mechanisms).

Each node is an embedded cluster (nmc_dev.embedded_db: its own directory and loopback port,
trust auth, run as the `postgres` OS user when we are root) with one extra include file,
`nmc_replication.conf`, that this module writes: WAL and replication settings on the
primary, `primary_conninfo` and the apply delay on a standby. A standby is made with
`pg_basebackup` from its primary and started with `standby.signal`; it follows the newest
timeline, so after a promotion the other standby is re-pointed with a reload.

DEV-ONLY, like the embedded cluster: loopback trust, replication connections as superuser.
"""

import contextlib
import os
import shutil
import signal
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import psycopg

from nmc.config import Settings
from nmc.database import LOOPBACK, Role, connection_url
from nmc.errors import NmcError
from nmc_dev.embedded_db import EmbeddedCluster, Status, _give_to_cluster_owner
from nmc_dev.pg_binaries import server_tool

REPLICATION_CONF = "nmc_replication.conf"
INCLUDE_LINE = f"include_if_exists = '{REPLICATION_CONF}'\n"
# Small: three clusters share this machine (nmc.conf's 1 GB is for one busy cluster).
PRIMARY_SETTINGS = {
    "shared_buffers": "128MB",
    "wal_level": "replica",
    "max_wal_senders": "10",
    "wal_keep_size": "512MB",  # a standby that lags or is re-pointed finds its WAL
    "hot_standby": "on",
    "hot_standby_feedback": "on",  # no feed page cancelled for a vacuum on the primary
    "synchronous_commit": "on",
    "wal_receiver_status_interval": "1s",
}
CATCH_UP_TIMEOUT_S = 60.0


class ClusterError(NmcError):
    pass


@dataclass(frozen=True)
class Lsns:
    receive: str | None
    replay: str | None


class Node:
    """One PostgreSQL cluster of the set: `name` is also its application_name upstream."""

    def __init__(self, name: str, base: Settings, home: Path, port: int) -> None:
        self.name = name
        self.settings = replace(base, home=home, db_port=port, database_url=None)
        self.cluster = EmbeddedCluster(self.settings)
        self.port = port
        self.extra: dict[str, str] = {}

    # ------------------------------------------------------------------ addresses

    def url(self, role: Role = "admin", database: str | None = None) -> str:
        return connection_url(self.settings, role, database)

    @property
    def host_port(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def conninfo(self) -> str:
        """What a standby streams from: a replication connection to this node."""
        return f"host={LOOPBACK} port={self.port} user=postgres"

    # ------------------------------------------------------------------ life

    @property
    def running(self) -> bool:
        return self.cluster.status() is Status.RUNNING

    def pid(self) -> int | None:
        try:
            first = (self.cluster.data_dir / "postmaster.pid").read_text().split("\n", 1)[0]
        except OSError:
            return None
        return int(first) if first.strip().isdigit() else None

    def start(self) -> None:
        self.cluster.start()

    def stop(self) -> None:
        if self.running:
            self.cluster.stop()

    def kill(self) -> None:
        """The node is lost: SIGSTOP the postmaster and every one of its processes at once,
        then SIGKILL them all (nothing of it answers, commits or streams after this)."""
        pid = self.pid()
        if pid is None:
            return
        victims = [pid, *_children_of(pid)]
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for victim in victims:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(victim, sig)
        deadline = time.monotonic() + 10
        while any(_alive(v) for v in victims) and time.monotonic() < deadline:
            time.sleep(0.02)

    def remove(self) -> None:
        """Stop it if it runs and delete its directory."""
        with contextlib.suppress(NmcError):
            self.stop()
        shutil.rmtree(self.settings.home, ignore_errors=True)

    # ------------------------------------------------------------------ settings

    def write_settings(self, settings: Mapping[str, str]) -> None:
        """Replace nmc_replication.conf (applied at the next start or reload)."""
        self.extra = dict(settings)
        path = self.cluster.data_dir / REPLICATION_CONF
        path.write_text(
            "# Written by nmc_dev.drill.clusters.\n"
            + "".join(f"{name} = '{_quote(value)}'\n" for name, value in settings.items())
        )
        _give_to_cluster_owner(path)

    def reload(self) -> None:
        with self.connect() as conn:
            conn.execute("SELECT pg_catalog.pg_reload_conf()")

    def set(self, **settings: str) -> None:
        """Change settings on the running node (reloadable ones)."""
        self.write_settings({**self.extra, **settings})
        self.reload()

    # ------------------------------------------------------------------ SQL

    def connect(self, database: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(self.url("admin", database), autocommit=True, connect_timeout=5)

    def scalar(self, query: str, params: Iterable = (), database: str = "postgres"):
        with self.connect(database) as conn:
            row = conn.execute(query, tuple(params)).fetchone()
            return row[0] if row else None

    def in_recovery(self) -> bool:
        return bool(self.scalar("SELECT pg_catalog.pg_is_in_recovery()"))

    def lsns(self) -> Lsns:
        with self.connect() as conn:
            row = conn.execute(
                "SELECT pg_catalog.pg_last_wal_receive_lsn()::text,"
                " pg_catalog.pg_last_wal_replay_lsn()::text"
            ).fetchone()
        return Lsns(row[0], row[1])

    def current_lsn(self) -> str:
        return str(self.scalar("SELECT pg_catalog.pg_current_wal_lsn()::text"))


def _quote(value: str) -> str:
    return value.replace("'", "''")


def _children_of(pid: int) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(proc.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# ----------------------------------------------------------------------------------------


class ReplicaSet:
    """A primary and its standbys under one directory, each on its own port."""

    def __init__(self, base: Settings, directory: Path, ports: Iterable[int]) -> None:
        self.base = base
        self.directory = directory
        self.ports = list(ports)
        self.nodes: dict[str, Node] = {}
        self.primary: Node | None = None
        self.archive = directory / "wal-archive"
        self._own_directory(directory)  # the cluster's OS user makes the nodes' directories

    def node(self, name: str, port: int | None = None) -> Node:
        """The node `name`, made on first use on the next free port (or `port`)."""
        if name not in self.nodes:
            port = port or self.ports[len(self.nodes)]
            self.nodes[name] = Node(name, self.base, self.directory / name, port)
        return self.nodes[name]

    # ------------------------------------------------------------------ building it

    def start_primary(
        self,
        name: str = "p",
        *,
        synchronous_standbys: Iterable[str] = (),
        archive: bool = False,
        settings: Mapping[str, str] | None = None,
    ) -> Node:
        """initdb and start a primary; with `synchronous_standbys` a commit waits for ANY 1
        of them (ADR 0024); with `archive` every WAL segment is copied to the archive."""
        node = self.node(name)
        self._own_directory(node.settings.home)
        node.cluster.start()  # initdb, nmc.conf, start, database nmc
        node.stop()
        with (node.cluster.data_dir / "postgresql.conf").open("a") as conf:
            conf.write(INCLUDE_LINE)
        conf_values = {**PRIMARY_SETTINGS, **(settings or {})}
        standbys = list(synchronous_standbys)
        if standbys:
            conf_values["synchronous_standby_names"] = f"ANY 1 ({', '.join(standbys)})"
        if archive:
            self._own_directory(self.archive)
            conf_values["archive_mode"] = "on"
            conf_values["archive_command"] = (
                f"test ! -f {self.archive}/%f && cp %p {self.archive}/%f"
            )
            conf_values["archive_timeout"] = "1s"
        node.write_settings(conf_values)
        node.start()
        self.primary = node
        return node

    def add_standby(
        self, name: str, *, upstream: Node | None = None, apply_delay: str | None = None
    ) -> Node:
        """pg_basebackup from `upstream` (the primary), then start it streaming."""
        upstream = upstream or self._primary()
        node = self.node(name)
        self._own_directory(node.settings.home)
        self._own_directory(node.cluster.run_dir)
        node.cluster._run_as_cluster_owner([
            str(server_tool("pg_basebackup")),
            f"--pgdata={node.cluster.data_dir}",
            f"--dbname={upstream.conninfo()} application_name={name}",
            "--wal-method=stream",
            "--checkpoint=fast",
            "--no-sync",
        ])  # fmt: skip
        self._make_standby(node, upstream, apply_delay)
        node.start()
        return node

    def restore(
        self, name: str, backup: Path, *, target_time: str, port: int | None = None
    ) -> Node:
        """Point-in-time recovery: a copy of base backup `backup` replays the archive up to
        `target_time`, then is promoted (a new timeline, the xids after it handed out anew)."""
        node = self.node(name, port)
        self._own_directory(node.settings.home)
        self._own_directory(node.cluster.run_dir)
        node.cluster._run_as_cluster_owner(["cp", "-a", str(backup), str(node.cluster.data_dir)])
        settings = {
            **PRIMARY_SETTINGS,
            "restore_command": f"cp {self.archive}/%f %p",
            "recovery_target_time": target_time,
            "recovery_target_action": "promote",
            "recovery_target_inclusive": "off",
        }
        node.write_settings(settings)
        (node.cluster.data_dir / "recovery.signal").touch()
        _give_to_cluster_owner(node.cluster.data_dir / "recovery.signal")
        node.start()
        self.primary = node
        deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
        while node.in_recovery():
            if time.monotonic() > deadline:
                raise ClusterError(f"{name}: point-in-time recovery did not end")
            time.sleep(0.1)
        return node

    def base_backup(self, name: str = "backup") -> Path:
        """A base backup of the primary (tar-less, its WAL included), kept for restores."""
        target = self.directory / name
        self._own_directory(target.parent)
        self._primary().cluster._run_as_cluster_owner([
            str(server_tool("pg_basebackup")),
            f"--pgdata={target}",
            f"--dbname={self._primary().conninfo()}",
            "--wal-method=stream",
            "--checkpoint=fast",
            "--no-sync",
        ])  # fmt: skip
        return target

    # ------------------------------------------------------------------ failover

    def promote(self, node: Node) -> float:
        """Promote a standby; returns the seconds until it accepts writes."""
        started = time.monotonic()
        with node.connect() as conn:
            conn.execute("SELECT pg_catalog.pg_promote(true, 60)")
        self.primary = node
        return time.monotonic() - started

    def repoint(self, standby: Node, upstream: Node) -> None:
        """Stream from another upstream (a reload: primary_conninfo; the newest timeline)."""
        standby.set(primary_conninfo=f"{upstream.conninfo()} application_name={standby.name}")

    def wait_replayed(self, standby: Node, timeout_s: float = CATCH_UP_TIMEOUT_S) -> Lsns:
        """Until the standby has replayed all it received (its upstream may be gone)."""
        deadline = time.monotonic() + timeout_s
        while True:
            lsns = standby.lsns()
            if lsns.receive is None or _lsn(lsns.replay) >= _lsn(lsns.receive):
                return lsns
            if time.monotonic() > deadline:
                raise ClusterError(f"{standby.name} did not replay what it received")
            time.sleep(0.05)

    def wait_caught_up(self, standby: Node, timeout_s: float = CATCH_UP_TIMEOUT_S) -> None:
        """Until the standby has replayed the primary's current WAL position."""
        target = _lsn(self._primary().current_lsn())
        deadline = time.monotonic() + timeout_s
        while _lsn(standby.lsns().replay) < target:
            if time.monotonic() > deadline:
                raise ClusterError(f"{standby.name} did not catch up with the primary")
            time.sleep(0.05)

    def streaming(self) -> dict[str, dict[str, object]]:
        """pg_stat_replication on the primary: per standby its state, sync state, lags."""
        with self._primary().connect() as conn:
            rows = conn.execute(
                "SELECT application_name, state, sync_state,"
                " extract(epoch FROM replay_lag)::float8"
                " FROM pg_catalog.pg_stat_replication"
            ).fetchall()
        return {r[0]: {"state": r[1], "sync": r[2], "replay_lag_s": r[3]} for r in rows}

    def remove(self) -> None:
        for node in self.nodes.values():
            node.remove()
        shutil.rmtree(self.directory, ignore_errors=True)

    # ------------------------------------------------------------------ internals

    def _primary(self) -> Node:
        if self.primary is None:
            raise ClusterError("no primary started")
        return self.primary

    def _make_standby(self, node: Node, upstream: Node, apply_delay: str | None) -> None:
        settings = {
            **PRIMARY_SETTINGS,
            "primary_conninfo": f"{upstream.conninfo()} application_name={node.name}",
            "recovery_target_timeline": "latest",
        }
        if apply_delay:
            settings["recovery_min_apply_delay"] = apply_delay
        node.write_settings(settings)
        signal_file = node.cluster.data_dir / "standby.signal"
        signal_file.touch()
        _give_to_cluster_owner(signal_file)

    def _own_directory(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o755 if path != self.archive else 0o777)
        _give_to_cluster_owner(path)


def _lsn(text: str | None) -> int:
    """A pg_lsn's text ('16/B374D848') as a number (None: 0)."""
    if not text:
        return 0
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) + int(low, 16)


def lsn_number(text: str | None) -> int:
    return _lsn(text)
