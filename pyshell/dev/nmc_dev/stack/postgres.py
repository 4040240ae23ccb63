"""The embedded PostgreSQL cluster (nmc_dev.embedded_db) as a part of a local stack.

pg_ctl runs the postmaster in a session of its own, so it is not our child: we start and
stop it through pg_ctl (fast shutdown) and signal it by the pid in postmaster.pid. A
cluster that was already running when the stack started (the developer's own) is left
running when the stack stops.
"""

import contextlib
import os

from nmc.config import Settings
from nmc_dev.embedded_db import EmbeddedCluster, Status


class EmbeddedPostgres:
    name = "postgres"

    def __init__(self, settings: Settings, preload: tuple[str, ...] = ()) -> None:
        self.cluster = EmbeddedCluster(settings, preload=preload)
        self.owned = False  # started by this stack, so stopped by it too

    @property
    def running(self) -> bool:
        return self.cluster.status() is Status.RUNNING

    @property
    def pid(self) -> int | None:
        """The postmaster's pid, from the first line of postmaster.pid."""
        try:
            first = (self.cluster.data_dir / "postmaster.pid").read_text().split("\n", 1)[0]
        except OSError:
            return None
        return int(first) if first.strip().isdigit() else None

    def start(self) -> None:
        if not self.running:
            self.owned = True
        self.cluster.start()

    def stop(self) -> None:
        """Fast shutdown: open transactions are rolled back, clients disconnected."""
        self.cluster.stop()

    def signal(self, sig: int) -> None:
        """E.g. SIGKILL: a crash, recovered from the WAL at the next start."""
        pid = self.pid
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
