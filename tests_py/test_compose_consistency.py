"""docker-compose.yml stays in step with the code.

The compose file is parsed (PyYAML, anchors and merge keys resolved) and every claim it makes
is checked against the code itself: commands against the real `nmc` argparse parser, NMC_*
variables against the names the package reads, secret files against what `nmc admin keys
init` writes, health checks and service URLs against the routes the target process serves,
depends_on against the services. No Docker is needed.
"""

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from deploytest import (
    PROJECT_ROOT,
    SECRETS_MOUNT,
    command_name,
    env_names_read_by_the_code,
    listen_port,
    parse_nmc,
    secret_files_written_by_keys_init,
    serves,
    split_url,
    urls_in,
)

COMPOSE_FILE = PROJECT_ROOT / "docker-compose.yml"
DOCKERFILE = PROJECT_ROOT / "Dockerfile"
SIMULATORS = ("notifynl", "profielservice", "ldv")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def services(compose) -> dict[str, dict[str, Any]]:
    return compose["services"]


def runs_nmc(service: dict[str, Any]) -> bool:
    """Built from this repository's Dockerfile (ENTRYPOINT nmc) and not overriding it."""
    build = service.get("build")
    if isinstance(build, str):
        build = {"context": build}
    if not build or build.get("context") != "." or "dockerfile_inline" in build:
        return False
    return build.get("dockerfile", "Dockerfile") == "Dockerfile" and "entrypoint" not in service


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def nmc_services(services) -> dict[str, list[str]]:
    return {name: list(s["command"]) for name, s in services.items() if runs_nmc(s)}


def by_command(services, name: str) -> list[str]:
    return [s for s, args in nmc_services(services).items() if command_name(args) == name]


def replicas(service: dict[str, Any]) -> int:
    return int(((service.get("deploy") or {}).get("replicas")) or 1)


# --------------------------------------------------------------------------------------------


def test_the_dockerfile_runs_nmc_and_copies_what_exists():
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert re.search(r'^ENTRYPOINT \["nmc"\]$', text, re.MULTILINE)
    assert 'nmc = "nmc.cli:main"' in (PROJECT_ROOT / "pyproject.toml").read_text()
    for line in re.findall(r"^COPY (?!--from)(.+)$", text, re.MULTILINE):
        for source in line.split()[:-1]:
            assert (PROJECT_ROOT / source).exists(), f"Dockerfile copies missing {source}"
    # The last stage is the one `build: .` makes: it must be the runtime image, not the test one.
    stages = re.findall(r"^FROM \S+(?: AS (\S+))?$", text, re.MULTILINE)
    assert stages[-1] in ("", "runtime"), stages


def test_the_expected_services_exist(services):
    assert {"postgres", "migrate", "api", *SIMULATORS} <= set(services)
    assert services["postgres"]["image"].startswith("postgres:15") or "postgres:15" in str(
        services["postgres"].get("build")
    )
    assert by_command(services, "migrate") == ["migrate"]
    assert by_command(services, "api") == ["api"]
    workers = by_command(services, "worker")
    assert sum(replicas(services[w]) for w in workers) == 2, workers
    for simulator in SIMULATORS:
        assert by_command(services, f"sim {simulator}") == [simulator]


def test_the_test_profile_runs_the_pgtap_suite(services):
    pgtap = [name for name, s in services.items() if "test" in (s.get("profiles") or [])]
    assert pgtap, "no service in the `test` profile"
    for name in pgtap:
        assert runs_nmc(services[name]) and command_name(services[name]["command"]) == "dev pgtap"
        assert services[name]["build"].get("target") == "pgtap"
    # pg_prove runs in that image; the extension itself must be on the server.
    dockerfile = DOCKERFILE.read_text(encoding="utf-8")
    stage = dockerfile.split("AS pgtap", 1)[1].split("\nFROM ", 1)[0]
    assert "libtap-parser-sourcehandler-pgtap-perl" in stage and "tests_sql" in stage
    assert "postgresql-15-pgtap" in str(services["postgres"].get("build"))
    # Nothing else is started by `docker compose up` without the profile.
    assert all("profiles" not in s for n, s in services.items() if n not in pgtap)


def test_every_command_is_a_real_nmc_command(services):
    commands = nmc_services(services)
    assert len(commands) >= 7
    for name, args in commands.items():
        try:
            parse_nmc(args)
        except AssertionError as error:
            pytest.fail(f"service {name}: {error}")


def test_every_nmc_variable_is_one_the_code_reads(services):
    known = env_names_read_by_the_code()
    assert {"NMC_DATABASE_URL", "NMC_KEK_FILE", "NMC_API_DATABASE_URL"} <= known  # the scan works
    for name, service in services.items():
        unknown = {v for v in environment(service) if v.startswith("NMC_")} - known
        assert not unknown, f"service {name} sets {sorted(unknown)}, which no code reads"


def test_each_process_finds_its_database(services):
    for name, args in nmc_services(services).items():
        env = environment(services[name])
        role_url = {"api": "NMC_API_DATABASE_URL", "worker": "NMC_WORKER_DATABASE_URL"}
        wanted = role_url.get(command_name(args))
        if command_name(args) in ("migrate", "dev pgtap"):
            wanted = "NMC_DATABASE_URL"
        if wanted:
            host = split_url(env[wanted].replace("postgresql://", "http://"))[0]
            assert host in services, f"{name}: {wanted} points at unknown host {host}"


def test_secret_files_are_the_ones_keys_init_writes(compose, services):
    written = secret_files_written_by_keys_init()
    referenced = set()
    for name, service in services.items():
        for variable, value in environment(service).items():
            if value.startswith(SECRETS_MOUNT):
                referenced.add(value.removeprefix(SECRETS_MOUNT))
                assert variable.endswith("_FILE"), f"{name}: {variable} holds a file path"
        available = secret_files_mounted(service)
        for value in environment(service).values():
            if value.startswith(SECRETS_MOUNT):
                file = value.removeprefix(SECRETS_MOUNT)
                assert available is None or file in available, f"{name}: {file} not mounted"
    assert referenced, "no secret files referenced"
    missing = referenced - written
    assert not missing, f"not written by `nmc admin keys init`: {sorted(missing)}"
    # The file tells how to create them, with a command the CLI accepts.
    text = COMPOSE_FILE.read_text(encoding="utf-8")
    documented = re.search(r"`nmc (admin keys init [^`]*)`", text)
    assert documented, "the compose file does not say how to make ./secrets"
    assert parse_nmc(documented.group(1).split()).dir == Path("secrets")


def secret_files_mounted(service: dict[str, Any]) -> set[str] | None:
    """The files of ./secrets a service sees read-only at SECRETS_MOUNT: None for the whole
    directory, else the files mounted one by one."""
    mounts = [str(v) for v in service.get("volumes") or []]
    if f"./secrets:{SECRETS_MOUNT.rstrip('/')}:ro" in mounts:
        return None
    files = set()
    for mount in mounts:
        source, _, rest = mount.partition(":")
        target, _, mode = rest.partition(":")
        if source.startswith("./secrets/") and target.startswith(SECRETS_MOUNT):
            assert mode == "ro", f"{mount} is not read-only"
            assert source.removeprefix("./secrets/") == target.removeprefix(SECRETS_MOUNT), mount
            files.add(target.removeprefix(SECRETS_MOUNT))
    return files


def test_only_the_api_sees_the_proof_key_and_only_the_workers_the_webhook_key(services):
    """The workers sign webhook calls, the API signs proofs and publishes the
    webhook ring's public keys."""
    [api] = by_command(services, "api")
    [worker] = by_command(services, "worker")
    api_files, worker_files = (secret_files_mounted(services[s]) for s in (api, worker))
    assert api_files is not None and worker_files is not None, "a whole ./secrets is mounted"
    assert "afleverbewijs-signing.json" in api_files - worker_files
    assert "webhook-signing.json" in worker_files - api_files
    assert "webhook-public-keys.json" in api_files
    assert "NMC_WEBHOOK_SIGNING_KEYS_FILE" not in environment(services[api])
    assert "NMC_AFLEVERBEWIJS_SIGNING_KEYS_FILE" not in environment(services[worker])


def test_health_checks_ask_real_endpoints(services):
    checked = 0
    for name, service in services.items():
        test = service.get("healthcheck", {}).get("test")
        if not test or not runs_nmc(service):
            continue
        args, env = list(service["command"]), environment(service)
        for url in urls_in(" ".join(test) if isinstance(test, list) else test):
            host, port, path = split_url(url)
            assert host in ("127.0.0.1", "localhost"), f"{name}: checks another host"
            assert port == listen_port(args, env), f"{name}: checks port {port}"
            assert serves(args, path, env), f"{name}: `nmc {' '.join(args)}` serves no {path}"
            checked += 1
    assert checked >= 2  # the API and the workers at least


def test_urls_between_services_reach_real_ports_and_routes(services):
    """NMC_NOTIFYNL_URL, NMC_LDV_URL, --callback-url, …: the named service listens on that
    port and serves that path."""
    checked = 0
    for name, service in services.items():
        values = [*environment(service).values(), *(service.get("command") or [])]
        for url in (u for value in values for u in urls_in(str(value))):
            host, port, path = split_url(url)
            if host not in services:
                continue  # an outside URL (the IAM issuer, say)
            target = services[host]
            assert runs_nmc(target), f"{name} calls {host}, which is not an nmc process"
            args, env = list(target["command"]), environment(target)
            assert port == listen_port(args, env), f"{name} calls {host} on port {port}"
            if path not in ("", "/"):
                served = serves(args, path, env, method=None)
                assert served, f"{name} calls {host}{path}, which is not served"
            checked += 1
    assert checked >= 4


def test_depends_on_names_services_and_sensible_conditions(services):
    for name, service in services.items():
        depends = service.get("depends_on") or {}
        if isinstance(depends, list):
            depends = {d: {"condition": "service_started"} for d in depends}
        for target, rule in depends.items():
            assert target in services, f"{name} depends on unknown service {target}"
            condition = (rule or {}).get("condition", "service_started")
            if condition == "service_healthy":
                assert "healthcheck" in services[target], f"{target} has no health check"
            elif condition == "service_completed_successfully":
                assert command_name(services[target].get("command", [])) == "migrate"
            else:
                assert condition == "service_started", condition
    # The API and the workers wait for the migration; the migration for a healthy database.
    for name in (*by_command(services, "api"), *by_command(services, "worker")):
        assert "migrate" in (services[name].get("depends_on") or {}), name
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_the_readme_or_compose_file_names_no_file_that_is_missing():
    text = COMPOSE_FILE.read_text(encoding="utf-8")
    for reference in re.findall(r"\b(deploy/[\w./-]+|docs/[\w.-]+\.md)", text):
        assert Path(PROJECT_ROOT, reference).exists(), reference


def _seconds(duration: str) -> float:
    """A compose duration (`130s`, `2m10s`, `1m`) in seconds."""
    parts = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", str(duration))
    assert parts and any(parts.groups()), f"not a duration: {duration!r}"
    minutes, seconds = (int(group or 0) for group in parts.groups())
    return 60 * minutes + seconds


def test_workers_get_their_own_shutdown_grace_before_sigkill(services):
    """After SIGTERM the worker waits up to SHUTDOWN_GRACE_S for its held tasks, then closes
    (test_k8s_manifests.WORKER_CLOSE_S); compose's default stop grace is 10 s."""
    from nmc.worker.loop import SHUTDOWN_GRACE_S
    from test_k8s_manifests import WORKER_CLOSE_S

    workers = by_command(services, "worker")
    assert workers
    for name in workers:
        grace = _seconds(services[name].get("stop_grace_period", "10s"))
        assert grace >= SHUTDOWN_GRACE_S + WORKER_CLOSE_S, f"{name}: stop_grace_period {grace} s"


def test_the_development_tools_run_from_their_own_stage(services):
    """The product image holds the product alone: a service running a development command
    (a simulator, the pgTAP runner) is built from a stage that adds the tools."""
    from nmc.cli import DEV_COMMANDS

    dockerfile = DOCKERFILE.read_text(encoding="utf-8")
    runtime = dockerfile.split(" AS runtime\n", 1)[1].split("\nFROM ", 1)[0]
    tools = dockerfile.split(" AS dev-tools\n", 1)[1].split("\nFROM ", 1)[0]
    assert "pyshell/dev" not in runtime and "pyshell/client" not in runtime
    assert "COPY pyshell/dev " in tools and "pip install" in tools
    assert re.search(r"^FROM runtime AS dev-tools$", dockerfile, re.MULTILINE)
    assert re.search(r"^FROM dev-tools AS pgtap$", dockerfile, re.MULTILINE)
    seen = set()
    for name, args in nmc_services(services).items():
        build = services[name]["build"]
        target = build.get("target") if isinstance(build, dict) else None
        if command_name(args).split()[0] in DEV_COMMANDS:
            assert target in ("dev-tools", "pgtap"), f"{name}: `nmc {args[0]}` needs the tools"
        else:
            assert target in (None, "runtime"), f"{name}: the product runs from the runtime image"
        seen.add(target)
    assert {None, "dev-tools", "pgtap"} <= seen
