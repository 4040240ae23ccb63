"""Every shipped deployment runs every task kind, maintenance included: nothing extra is
needed for it. docker-compose.yml, the Kubernetes manifests and `nmc demo` are read as they
are shipped; each worker's arguments go through the real `nmc` parser and the worker's own
kind list (nmc.worker.config), and a worker without a webhook signing ring would skip
`terugkoppelen` (nmc.worker.loop), so the environment must give it one."""

from typing import Any

import yaml

from deploytest import command_name, parse_nmc
from nmc.admin import onboarding as admin
from nmc.config import Settings
from nmc.worker.config import KINDS, parse_kinds
from nmc_dev.demo.run import Options, demo_stack
from test_compose_consistency import COMPOSE_FILE, environment, nmc_services, replicas
from test_k8s_manifests import BASE, config_env, containers, load, resources_of

SIGNING = "NMC_WEBHOOK_SIGNING_KEYS_FILE"


def kinds_run(args: list[str], env: dict[str, str]) -> set[str]:
    """The kinds `nmc ARGS` (a worker) runs with this environment."""
    kinds = set(parse_kinds(parse_nmc(args).kinds))
    return kinds if SIGNING in env else kinds - {"terugkoppelen"}


def test_maintenance_is_among_the_default_kinds():
    assert set(parse_kinds("")) == set(KINDS)
    assert "onderhoud" in KINDS


def test_every_compose_worker_runs_every_task_kind():
    services: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))["services"]
    workers = {n: a for n, a in nmc_services(services).items() if command_name(a) == "worker"}
    assert sum(replicas(services[name]) for name in workers) >= 1
    for name, args in workers.items():
        missing = set(KINDS) - kinds_run(args, environment(services[name]))
        assert not missing, f"compose service {name} never runs {sorted(missing)}"


def test_every_kubernetes_worker_runs_every_task_kind():
    documents = [doc for path in resources_of(BASE) for doc in load(path)]
    workers = [
        (name, workload, container)
        for name, workload, container in containers(documents)
        if command_name(container.get("args", [])) == "worker"
    ]
    assert workers and all(w["kind"] == "Deployment" for _, w, _ in workers)
    for name, _, container in workers:
        missing = set(KINDS) - kinds_run(container["args"], config_env(documents, container))
        assert not missing, f"Deployment {name} never runs {sorted(missing)}"


def test_the_demo_workers_run_every_task_kind(tmp_path):
    stack = demo_stack(Settings.from_env({"NMC_HOME": str(tmp_path)}), Options())
    env_file = admin.init_secrets(tmp_path / "secrets", force=True)  # what the stack hands on
    env = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line)
    assert stack.worker_names and kinds_run(["worker", *stack.worker_args], env) == set(KINDS)
