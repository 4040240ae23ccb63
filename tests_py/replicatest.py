"""A primary with one streaming hot standby, both PostgreSQL clusters of the test's own (in
a private home, on free ports: the shared cluster is never touched), the primary's database
`nmc` migrated. For the tests that read the feed on a real standby."""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from nmc.admin.migrate import migrate
from nmc.config import Settings
from nmc.database import EMBEDDED_DATABASE
from nmc_dev.drill.clusters import Node, ReplicaSet
from stacktest import free_port, private_home


@dataclass
class Replicated:
    replicas: ReplicaSet
    primary: Node
    standby: Node

    def url(self, node: Node, role: str = "admin") -> str:
        return node.url(role, EMBEDDED_DATABASE)  # type: ignore[arg-type]


@contextmanager
def replicated(apply_delay: str | None = None) -> Iterator[Replicated]:
    with private_home() as home:
        base = replace(Settings.from_env(), test_clock=True)
        replicas = ReplicaSet(base, home / "replicas", [free_port(), free_port()])
        try:
            primary = replicas.start_primary()
            migrate(primary.url("admin", EMBEDDED_DATABASE), base.root)
            standby = replicas.add_standby("s1", apply_delay=apply_delay)
            replicas.wait_caught_up(standby)
            yield Replicated(replicas, primary, standby)
        finally:
            replicas.remove()
