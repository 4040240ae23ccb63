"""What the year run takes from the shipped files and how it measures: the workers'
shape read from docker-compose.yml, and the CPU every process used.

The workers run as docker-compose.yml runs them: as many, with the same `nmc worker`
arguments (kinds, batch, concurrency, poll interval) and the same NMC_* settings, read from
the file at every run so the two cannot drift. Only the wiring differs on one machine: URLs,
secret files, tokens and the NMC's OIN come from the local stack, and the worker's metrics
listener takes a free loopback port instead of 9100 in its own container.

CPU is read from /proc: each part's process with its live descendants, PostgreSQL as the
postmaster with every backend (the ones that exited are in the postmaster's own children
time), and the NMC processes that were restarted (a KEK roll) from this process's children
time once they are reaped. The year run's own measuring connection is subtracted: its
backend works for the harness, not for a notification.
"""

import os
import resource
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nmc.errors import NmcError

WIRING_SUFFIXES = ("_URL", "_FILE", "_TOKEN", "_KEY")
WIRING_NAMES = frozenset({"NMC_OIN"})
LOCAL_METRICS = {"--metrics-port": "0", "--metrics-host": "127.0.0.1"}
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class WorkerShape:
    """How docker-compose.yml runs the workers."""

    service: str
    replicas: int
    args: tuple[str, ...]  # after `worker`, with the metrics listener made local
    settings: dict[str, str] = field(default_factory=dict)  # NMC_* beyond the wiring
    wiring: tuple[str, ...] = ()  # the NMC_* names the local stack supplies instead


def compose_worker_shape(compose_file: Path) -> WorkerShape:
    try:
        import yaml  # a development dependency: `pip install -e '.[test]'`
    except ImportError:
        raise NmcError("the year run reads docker-compose.yml with PyYAML: "
                       "pip install -e '.[test]'") from None  # fmt: skip
    services = yaml.safe_load(compose_file.read_text(encoding="utf-8"))["services"]
    return worker_shape(services)


def worker_shape(services: dict[str, Any]) -> WorkerShape:
    """The one worker service of a parsed compose file (anchors and merge keys resolved)."""
    workers = [
        (name, service)
        for name, service in services.items()
        if list(service.get("command") or [])[:1] == ["worker"]
    ]
    if len(workers) != 1:
        raise NmcError(
            f"docker-compose.yml runs {len(workers)} worker services; the year run takes its "
            "shape from exactly one"
        )
    name, service = workers[0]
    args = list(service["command"][1:])
    for index, word in enumerate(args[:-1]):
        if word in LOCAL_METRICS:
            args[index + 1] = LOCAL_METRICS[word]
    environment = service.get("environment") or {}
    if isinstance(environment, list):
        environment = dict(item.split("=", 1) for item in environment if "=" in item)
    nmc = {str(k): str(v) for k, v in environment.items() if str(k).startswith("NMC_")}
    wiring = sorted(k for k in nmc if k.endswith(WIRING_SUFFIXES) or k in WIRING_NAMES)
    replicas = int(((service.get("deploy") or {}).get("replicas")) or 1)
    return WorkerShape(
        service=name,
        replicas=replicas,
        args=tuple(args),
        settings={k: v for k, v in nmc.items() if k not in wiring},
        wiring=tuple(wiring),
    )


# --------------------------------------------------------------------------------------------
# CPU


def _stat(pid: int) -> tuple[int, float, float] | None:
    """(ppid, own CPU seconds, CPU seconds of its reaped children) of a live process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    ppid = int(fields[1])
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return ppid, (utime + stime) / _TICK, (cutime + cstime) / _TICK


def _parents() -> dict[int, int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat:
                parents[int(entry.name)] = stat[0]
    return parents


def tree_cpu(root: int, parents: dict[int, int] | None = None) -> float:
    """CPU seconds of `root` and every live descendant, with their reaped children."""
    parents = _parents() if parents is None else parents
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        stat = _stat(pid)
        if stat:
            total += stat[1] + stat[2]
        todo += [child for child, parent in parents.items() if parent == pid]
    return total


def own_cpu(pid: int | None) -> float:
    """CPU seconds of one process alone (a backend)."""
    stat = _stat(pid) if pid else None
    return stat[1] if stat else 0.0


def reaped_children_cpu() -> float:
    """CPU seconds of this process's children that exited and were waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class CpuSample:
    api: float
    workers: float
    postgres: float  # the harness's own backend subtracted
    restarted: float  # NMC processes that exited (restarted during the run)
    simulators: float

    @property
    def nmc(self) -> float:
        return self.api + self.workers + self.postgres + self.restarted

    def minus(self, earlier: "CpuSample") -> "CpuSample":
        return CpuSample(*(getattr(self, f) - getattr(earlier, f) for f in _FIELDS))


_FIELDS = ("api", "workers", "postgres", "restarted", "simulators")


def sample_cpu(pids: dict[str, int], worker_names: list[str], harness_backend: int | None,
               simulators: tuple[str, ...]) -> CpuSample:  # fmt: skip
    """One reading of every part (pids: LocalStack.pids(), with "postgres" the postmaster)."""
    parents = _parents()
    postgres = tree_cpu(pids["postgres"], parents) if "postgres" in pids else 0.0
    return CpuSample(
        api=tree_cpu(pids["api"], parents) if "api" in pids else 0.0,
        workers=sum(tree_cpu(pids[name], parents) for name in worker_names if name in pids),
        postgres=postgres - own_cpu(harness_backend),
        restarted=reaped_children_cpu(),
        simulators=sum(tree_cpu(pids[name], parents) for name in simulators if name in pids),
    )
