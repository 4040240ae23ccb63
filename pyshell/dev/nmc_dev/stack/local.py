"""A local NMC on one machine: every part a supervised child process (`nmc demo`, soak tests).

Start order: the embedded PostgreSQL (or NMC_DATABASE_URL's server), a fresh database
migrated by a one-shot `nmc migrate`, the LDV, Profielservice and NotifyNL simulators, the
API, then the workers. Each child gets free loopback ports, the secrets generated into the
state directory (`$NMC_HOME/demo` by default) and a log file there (`logs/<name>.log`); a
start waits until the child is ready (its health endpoint, or the worker's start event).
`stop()` goes in reverse: SIGTERM to each process group, SIGKILL after a grace.

For chaos tests: `kill(name, SIGKILL)`, `restart(name)` (also "postgres": a fast shutdown
and a start), the simulators' fault hooks at `notifynl_url + "/_sim/faults"`, and
`advance_clock`, which moves the NMC clock and NotifyNL's clock together.
"""

import contextlib
import json
import os
import shlex
import signal
import socket
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import httpx

from nmc.admin import onboarding as admin
from nmc.admin.dev_iam import issue_dev_token
from nmc.api.routes_callback import CALLBACK_PATH
from nmc.config import Settings
from nmc.database import Role, connect, connection_url
from nmc.errors import NmcError
from nmc_dev import clock
from nmc_dev.queries import on_database
from nmc_dev.sim.ldv import RECORDS_PATH
from nmc_dev.stack.child import Child, wait_until
from nmc_dev.stack.postgres import EmbeddedPostgres

LOOPBACK = "127.0.0.1"
NMC_OIN = "00000001003214345000"  # the local NMC's own OIN (the CloudEvents source)
READY_TIMEOUT_S = 60.0
MIGRATE_TIMEOUT_S = 180.0
# NotifyNL retries a failed callback after 5 minutes; locally 1 s, so a receipt refused
# while the API or PostgreSQL restarts comes back within the run.
CALLBACK_RETRY_GAP_S = 1.0
SIMULATORS = ("ldv", "profielservice", "notifynl")
# A GET that answers once a simulator serves.
SIM_PROBES = {"ldv": RECORDS_PATH, "profielservice": "/_sim/parties", "notifynl": "/_sim/faults"}


class StackError(NmcError):
    """A part did not start, or started and died."""


class LocalStack:
    def __init__(
        self,
        settings: Settings,
        *,
        workers: int = 2,
        state_dir: Path | None = None,
        database: str = "nmc_demo",
        worker_args: tuple[str, ...] = (),
        child_env: Mapping[str, str] | None = None,
        notify_templates: Mapping[str, Sequence[str]] | None = None,
        preload: tuple[str, ...] = (),
    ) -> None:
        # The local stack is for demos and tests: its clock may move.
        self.settings = replace(settings, test_clock=True)
        self.state_dir = state_dir or settings.home / "demo"
        self.database = database
        self.worker_names = [f"worker-{n}" for n in range(1, workers + 1)]
        self.worker_args = worker_args
        self.child_env = dict(child_env or {})  # extra settings for every child (a soak's)
        # `preload`: the embedded cluster's shared_preload_libraries (a measuring run's).
        self.postgres = None if settings.database_url else EmbeddedPostgres(settings, preload)
        # Fixed for the stack's life, so a restarted part is found at the same URL.
        self.ports = dict(zip(("api", *SIMULATORS), _free_ports(4), strict=True))
        self.api_url = f"http://{LOOPBACK}:{self.ports['api']}"
        self.notifynl_url = f"http://{LOOPBACK}:{self.ports['notifynl']}"
        self.profielservice_url = f"http://{LOOPBACK}:{self.ports['profielservice']}"
        self.ldv_url = f"http://{LOOPBACK}:{self.ports['ldv']}"
        # Notify service -> its templates: the NotifyNL simulator refuses a send whose key's
        # service does not own the template (the keys are the dev secrets', one per service).
        self.notify_templates = {k: list(v) for k, v in (notify_templates or {}).items()}
        self.secrets: dict[str, str] = {}
        self.children: dict[str, Child] = {}

    # ------------------------------------------------------------------ the whole stack

    @property
    def log_dir(self) -> Path:
        return self.state_dir / "logs"

    @property
    def admin_url(self) -> str:
        """Read when used: the embedded cluster may take another port at its start, when the
        default is taken (nmc_dev.embedded_db)."""
        return connection_url(self.settings, "admin", self.database)

    def notify_environ(self) -> dict[str, str]:
        """What `nmc admin dv apply` in this process needs to read the templates from the
        stack's NotifyNL simulator: its URL and the dev secrets' key per Notify service."""
        return {**self.secrets, "NMC_NOTIFYNL_URL": self.notifynl_url}

    @property
    def admin_settings(self) -> Settings:
        """Settings whose admin connection is this stack's database (for nmc.admin etc.)."""
        return replace(self.settings, database_url=self.admin_url)

    def start(self, *, workers: bool = True) -> None:
        """Start every part (the workers only when `workers`; else `start_workers()` later)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._stop_leftovers()
        for old_log in self.log_dir.glob("*.log"):
            old_log.unlink()
        self.secrets = _load_env_file(admin.init_secrets(self.state_dir / "secrets", force=True))
        if self.postgres:
            self.postgres.start()
            self._save_state()
        self._create_fresh_database()
        self._migrate()
        self.children = self._children()
        self._start_together(list(SIMULATORS))
        self.start_child("api")
        if workers:
            self.start_workers()

    def start_workers(self) -> None:
        self._start_together(self.worker_names)

    def stop(self) -> None:
        """Workers first (they finish what they hold), then the API, the simulators and the
        cluster, if this stack started it."""
        for tier in (self.worker_names, ["api"], list(SIMULATORS)):
            present = [self.children[name] for name in tier if name in self.children]
            for child in present:  # the whole tier at once: each stop waits for its own
                child.signal(signal.SIGTERM)
            for child in present:
                child.stop()
        if self.postgres and self.postgres.owned:
            self.postgres.stop()
        self._save_state()

    def __enter__(self) -> "LocalStack":
        """`with LocalStack(settings) as stack:` starts everything and stops it at the end."""
        try:
            self.start()
        except BaseException:
            self.stop()  # whatever did start
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ one part

    @property
    def names(self) -> list[str]:
        return (["postgres"] if self.postgres else []) + list(self.children)

    def start_child(self, name: str) -> None:
        """Start one part and wait until it is ready."""
        if name == "postgres":
            self._require_postgres().start()
        else:
            self._child(name).start()
            self._save_state()
            self._wait_ready(name)

    def stop_child(self, name: str) -> None:
        if name == "postgres":
            self._own_postgres().stop()
        else:
            self._child(name).stop()
        self._save_state()

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Send `sig` to a part (the postmaster, for "postgres"); no waiting."""
        target = self._own_postgres() if name == "postgres" else self._child(name)
        target.signal(sig)

    def restart(self, name: str) -> None:
        self.stop_child(name)
        self.start_child(name)

    def running(self, name: str) -> bool:
        if name == "postgres":
            return self._require_postgres().running
        return self._child(name).running

    def pids(self) -> dict[str, int]:
        """The running parts' process ids (of the postmaster, for "postgres")."""
        pids = {name: c.pid for name, c in self.children.items() if c.running and c.pid}
        postmaster = self.postgres.pid if self.postgres and self.postgres.running else None
        return pids | ({"postgres": postmaster} if postmaster else {})

    # ------------------------------------------------------------------ using it

    def role_url(self, role: Role) -> str:
        return connection_url(self.settings, role, self.database)

    def dv_token(self, oin: str, ttl_s: int = 3600) -> str:
        """A DV's bearer token from the stack's dev IAM key."""
        return issue_dev_token(oin, lifetime_seconds=ttl_s, environ=self.secrets)

    def now(self) -> datetime:
        return clock.show(self.admin_settings)

    def advance_clock(self, delta: timedelta) -> datetime:
        """Move nmc.now() and the NotifyNL simulator's clock (retention, receipt times)
        forward together; returns the new nmc.now()."""
        seconds = delta.total_seconds()
        moved = clock.advance(self.admin_settings, f"{seconds} seconds")
        response = httpx.post(f"{self.notifynl_url}/_sim/clock", json={"advance_s": seconds})
        response.raise_for_status()
        return moved

    # ------------------------------------------------------------------ internals

    def _children(self) -> dict[str, Child]:
        env = self._child_env()
        notifynl = ["--callback-url", self.api_url + CALLBACK_PATH,
                    "--retry-gap", str(CALLBACK_RETRY_GAP_S)]  # fmt: skip
        for service, templates in sorted(self.notify_templates.items()):
            notifynl += [arg for t in templates for arg in ("--template", f"{service}={t}")]
        commands: dict[str, list[str]] = {
            "ldv": ["sim", "ldv", "--port", str(self.ports["ldv"])],
            "profielservice": [
                "sim",
                "profielservice",
                "--port",
                str(self.ports["profielservice"]),
            ],
            "notifynl": ["sim", "notifynl", "--port", str(self.ports["notifynl"]), *notifynl],
            "api": ["api", "--host", LOOPBACK, "--port", str(self.ports["api"])],
        }
        for name in self.worker_names:
            commands[name] = ["worker", *self.worker_args]
        return {
            name: Child(name, args, env, self.log_dir / f"{name}.log")
            for name, args in commands.items()
        }

    def _child_env(self) -> dict[str, str]:
        # Not the caller's database nor a single NotifyNL key: the worker refuses a key beside
        # the stack's keys file.
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("NMC_DATABASE_URL", "NMC_NOTIFYNL_API_KEY")
        }
        if self.settings.database_url:
            env["NMC_DATABASE_URL"] = self.settings.database_url
        return {
            **env,
            **self.secrets,  # KEK, peppers, IAM key + JWKS, callback token, signing ring
            "PYTHONUNBUFFERED": "1",
            "NMC_HOME": str(self.settings.home),
            "NMC_DB_PORT": str(self.settings.embedded_port()),
            "NMC_TEST_CLOCK": "1",
            "NMC_OIN": NMC_OIN,
            "NMC_API_DATABASE_URL": self.role_url("api"),
            "NMC_WORKER_DATABASE_URL": self.role_url("worker"),
            "NMC_NOTIFYNL_URL": self.notifynl_url,
            # NMC_NOTIFYNL_KEYS_FILE comes with the secrets (a NotifyNL key per service).
            "NMC_PROFIELSERVICE_URL": self.profielservice_url,
            "NMC_LDV_URL": self.ldv_url + RECORDS_PATH,
            **self.child_env,
        }

    def _create_fresh_database(self) -> None:
        """Drop and create the stack's database: every start begins with an empty register
        and an unmoved clock (the clock only moves forward)."""
        with connect(connection_url(self.settings, "admin", "postgres")) as conn:
            conn.execute(on_database("drop_database", self.database))
            conn.execute(on_database("create_database", self.database))

    def _migrate(self) -> None:
        env = self._child_env()
        migrate = Child("migrate", ["migrate", "--database-url", self.admin_url], env,
                        self.log_dir / "migrate.log")  # fmt: skip
        migrate.start()
        if migrate.wait(MIGRATE_TIMEOUT_S) != 0:
            raise StackError(f"nmc migrate failed:\n{migrate.log_tail()}")

    def _start_together(self, names: list[str]) -> None:
        """Start several parts at once (they import in parallel), then wait for each."""
        for name in names:
            self._child(name).start()
        self._save_state()
        for name in names:
            self._wait_ready(name)

    def _wait_ready(self, name: str) -> None:
        child = self._child(name)
        probe = self._probe(name)

        def ready() -> bool:
            return not child.running or probe()

        wait_until(ready, READY_TIMEOUT_S)
        if not child.running:
            raise StackError(
                f"{name} exited with code {child.exit_code} while starting; "
                f"last lines of {child.log_path}:\n{child.log_tail()}"
            )
        if not probe():
            raise StackError(
                f"{name} was not ready after {READY_TIMEOUT_S:.0f} s; "
                f"last lines of {child.log_path}:\n{child.log_tail()}"
            )

    def _probe(self, name: str):
        if name in SIM_PROBES:
            url = f"http://{LOOPBACK}:{self.ports[name]}{SIM_PROBES[name]}"
            return lambda: _answers(url, ok=lambda status: status < 500)
        if name == "api":
            return lambda: _answers(self.api_url + "/health/ready", ok=lambda s: s == 200)
        child = self._child(name)
        return lambda: child.log_contains('"worker-start"')

    def _child(self, name: str) -> Child:
        if name not in self.children:
            raise StackError(f"no part {name!r} in this stack (parts: {', '.join(self.names)})")
        return self.children[name]

    def _require_postgres(self) -> EmbeddedPostgres:
        if self.postgres is None:
            raise StackError("NMC_DATABASE_URL is set: this stack runs no PostgreSQL of its own")
        return self.postgres

    def _own_postgres(self) -> EmbeddedPostgres:
        """The cluster, if this stack started it: one that ran before (a developer's shared
        cluster) is not the stack's to stop or kill."""
        postgres = self._require_postgres()
        if not postgres.owned:
            raise StackError(
                "the embedded cluster was running before this stack started it; give the "
                "stack its own NMC_HOME and NMC_DB_PORT to stop or kill PostgreSQL"
            )
        return postgres

    # The state file names the running children, so that a run that was killed outright
    # (SIGKILL, a closed terminal) is cleaned up by the next one, and tests can check that
    # nothing survived.
    @property
    def state_file(self) -> Path:
        return self.state_dir / "stack.json"

    def _save_state(self) -> None:
        state = {
            "pids": self.pids(),
            "postgres_owned": bool(self.postgres and self.postgres.owned),
            "database": self.database,
            "api_url": self.api_url,
            "logs": str(self.log_dir),
        }
        self.state_file.write_text(json.dumps(state, indent=2) + "\n")

    def _stop_leftovers(self) -> None:
        try:
            state = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return
        for name, pid in state.get("pids", {}).items():
            if name == "postgres" or not _is_our_group_leader(pid):
                continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGTERM)
            wait_until(lambda pid=pid: not _is_our_group_leader(pid), 10.0)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        if self.postgres and state.get("postgres_owned") and self.postgres.running:
            self.postgres.owned = True  # the killed run started it: this run stops it


def _answers(url: str, ok) -> bool:
    try:
        return ok(httpx.get(url, timeout=2.0).status_code)
    except httpx.HTTPError:
        return False


def _free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports (all held open until each is known)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOOPBACK, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _is_our_group_leader(pid: int) -> bool:
    """Whether `pid` still runs `python -m nmc …` as the leader of its own process group."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        return os.getpgid(pid) == pid and b"nmc" in cmdline
    except (OSError, ProcessLookupError):
        return False


def _load_env_file(path: Path) -> dict[str, str]:
    """NAME='value' lines as `nmc admin keys init` writes them (single-quoted)."""
    values = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#") and "=" in line:
            name, _, quoted = line.partition("=")
            values[name] = shlex.split(quoted)[0] if quoted else ""
    return values
