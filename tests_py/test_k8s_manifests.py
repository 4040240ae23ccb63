"""deploy/k8s: the kustomize base and the CloudNativePG cluster, checked structurally.

No kubectl or kustomize: the YAML is parsed and held against what kustomize and the kubelet
require (documents with apiVersion/kind/metadata.name, resources in or below the
kustomization root unless they are kustomizations themselves, a numeric non-root user) and
against the code (commands through the real `nmc` parser, NMC_* names the package reads,
probes on paths the process serves, on the port it listens on, on an address the kubelet can
reach), and the database's shape against SPEC §9 (three instances, synchronous ANY 1 of the
two standbys, PgBouncer in transaction mode).
"""

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from deploytest import (
    PROJECT_ROOT,
    SECRETS_MOUNT,
    command_name,
    env_names_read_by_the_code,
    listen_port,
    option,
    parse_nmc,
    secret_files_written_by_keys_init,
    serves,
)

K8S = PROJECT_ROOT / "deploy" / "k8s"
BASE = K8S / "base"
KUSTOMIZATION = "kustomization.yaml"
WORKLOADS = ("Deployment", "Job")


def load(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def manifest_files() -> list[Path]:
    return sorted(p for p in K8S.rglob("*.yaml") if p.name != KUSTOMIZATION)


def resources_of(kustomization_dir: Path) -> list[Path]:
    """The manifest files a kustomization pulls in, following nested kustomizations."""
    [document] = load(kustomization_dir / KUSTOMIZATION)
    files: list[Path] = []
    for entry in document.get("resources", []):
        target = (kustomization_dir / entry).resolve()
        files += resources_of(target) if target.is_dir() else [target]
    return files


@pytest.fixture(scope="module")
def documents() -> list[dict[str, Any]]:
    """Every document the base kustomization builds."""
    return [doc for path in resources_of(BASE) for doc in load(path)]


def of_kind(documents, kind: str) -> list[dict[str, Any]]:
    return [doc for doc in documents if doc["kind"] == kind]


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    return workload["spec"]["template"]["spec"]


def config_env(documents, container: dict[str, Any]) -> dict[str, str]:
    """The container's environment as far as the manifests set it (ConfigMaps and values)."""
    maps = {doc["metadata"]["name"]: doc.get("data", {}) for doc in of_kind(documents, "ConfigMap")}
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update(maps[source["configMapRef"]["name"]])
    for item in container.get("env", []):
        env[item["name"]] = str(item.get("value", "<from a secret>"))
    return env


def containers(documents) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    return [
        (workload["metadata"]["name"], workload, container)
        for kind in WORKLOADS
        for workload in of_kind(documents, kind)
        for container in pod_spec(workload)["containers"]
    ]


# --------------------------------------------------------------------------------------------
# Files, documents, kustomizations


def test_every_file_parses_into_named_kubernetes_objects():
    files = manifest_files()
    assert len(files) >= 5
    for path in files:
        documents = load(path)
        assert documents, f"{path} holds no document"
        for doc in documents:
            assert isinstance(doc, dict), path
            assert doc.get("apiVersion") and doc.get("kind"), path
            assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", doc["metadata"]["name"]), path


def test_kustomizations_list_files_they_may_load():
    """kustomize loads a file only in or below the kustomization's own directory; anything
    else must be a directory with its own kustomization."""
    kustomizations = sorted(K8S.rglob(KUSTOMIZATION))
    assert BASE / KUSTOMIZATION in kustomizations
    for path in kustomizations:
        [document] = load(path)
        assert document["apiVersion"] == "kustomize.config.k8s.io/v1beta1"
        assert document["kind"] == "Kustomization"
        root = path.parent.resolve()
        for entry in document.get("resources", []):
            target = (root / entry).resolve()
            assert target.exists(), f"{path}: {entry} does not exist"
            if target.is_dir():
                assert (target / KUSTOMIZATION).is_file(), f"{path}: {entry} has no kustomization"
            else:
                assert target.is_relative_to(root), f"{path}: {entry} is outside its root"


def test_the_base_builds_every_manifest_once():
    built = resources_of(BASE)
    assert len(built) == len(set(built))
    assert sorted(built) == [p.resolve() for p in manifest_files()]


def test_no_two_objects_share_kind_and_name(documents):
    keys = [(doc["kind"], doc["metadata"]["name"]) for doc in documents]
    assert len(keys) == len(set(keys)), keys


def test_the_image_is_set_by_the_kustomization(documents):
    [kustomization] = load(BASE / KUSTOMIZATION)
    named = {image["name"] for image in kustomization.get("images", [])}
    for name, _, container in containers(documents):
        assert container["image"] in named, f"{name}: image {container['image']} is not set"


# --------------------------------------------------------------------------------------------
# The NMC's workloads


def test_the_workloads_are_there(documents):
    commands = {command_name(c["args"]) for _, _, c in containers(documents)}
    assert commands == {"api", "worker", "migrate", "console"}
    for deployment in of_kind(documents, "Deployment"):
        assert deployment["spec"]["replicas"] >= 2, "stateless: more than one replica"


def test_every_command_is_a_real_nmc_command(documents):
    for name, _, container in containers(documents):
        assert "command" not in container, f"{name}: keeps the image's ENTRYPOINT nmc"
        parse_nmc(list(container["args"]))


# libpq reads these itself (psycopg connects through it): the database password comes from
# the role's Secret this way, never inside a URL.
LIBPQ_ENV = frozenset({"PGPASSWORD"})


def test_every_nmc_variable_is_one_the_code_reads(documents):
    known = env_names_read_by_the_code() | LIBPQ_ENV
    for config in of_kind(documents, "ConfigMap"):
        unknown = {k for k in config.get("data", {}) if k.startswith("NMC_")} - known
        assert not unknown, f"ConfigMap {config['metadata']['name']}: {sorted(unknown)}"
    for name, _, container in containers(documents):
        unknown = {e["name"] for e in container.get("env", [])} - known
        assert not unknown, f"{name}: {sorted(unknown)}"


def test_secret_files_are_mounted_where_the_settings_point(documents):
    for name, workload, container in containers(documents):
        files = [
            v for v in config_env(documents, container).values() if v.startswith(SECRETS_MOUNT)
        ]
        if not files:
            continue
        assert {f.removeprefix(SECRETS_MOUNT) for f in files} <= secret_files_written_by_keys_init()
        mounts = {m["mountPath"]: m for m in container.get("volumeMounts", [])}
        mount = mounts.get(SECRETS_MOUNT.rstrip("/"))
        assert mount and mount.get("readOnly") is True, f"{name}: secrets not mounted read-only"
        volumes = {v["name"]: v for v in pod_spec(workload).get("volumes", [])}
        assert "secret" in volumes[mount["name"]], f"{name}: the mount is not a Secret"


def mounted_secret_files(workload: dict[str, Any], container: dict[str, Any]) -> set[str] | None:
    """The files of the Secret mounted at SECRETS_MOUNT (None: every key of the Secret)."""
    mounts = {m["mountPath"]: m for m in container.get("volumeMounts", [])}
    mount = mounts.get(SECRETS_MOUNT.rstrip("/"))
    if mount is None:
        return set()
    volumes = {v["name"]: v for v in pod_spec(workload).get("volumes", [])}
    items = volumes[mount["name"]]["secret"].get("items")
    return None if items is None else {item["path"] for item in items}


def test_only_the_api_holds_the_proof_key_and_only_the_worker_the_webhook_key(documents):
    """Every worker signs webhook calls, the API signs proofs: a pod holds its own ring only,
    the API the webhook ring's public keys."""
    holders = {"afleverbewijs-signing.json": "api", "webhook-signing.json": "worker"}
    seen = set()
    for name, workload, container in containers(documents):
        command = command_name(container["args"])
        files = mounted_secret_files(workload, container)
        assert files is not None, f"{name}: mounts the whole Secret (the other ring's key too)"
        env = config_env(documents, container)
        for secret, holder in holders.items():
            if command != holder:
                assert secret not in files, f"{name} mounts {secret}"
                assert not any(v.endswith(secret) for v in env.values()), f"{name}: {secret}"
            elif secret in files:
                seen.add(secret)
        if command == "api":
            assert env.get("NMC_WEBHOOK_PUBLIC_KEYS_FILE", "").removeprefix(SECRETS_MOUNT) in files
            assert "NMC_WEBHOOK_SIGNING_KEYS_FILE" not in env
    assert seen == set(holders)


def test_resources_are_requested_and_limited(documents):
    for name, _, container in containers(documents):
        resources = container.get("resources", {})
        for bound in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(resources.get(bound, {})), f"{name}: {bound}"


def test_containers_run_as_a_non_root_user_on_a_read_only_root(documents):
    uid = int(re.search(r"--uid (\d+)", (PROJECT_ROOT / "Dockerfile").read_text()).group(1))
    for name, workload, container in containers(documents):
        pod = pod_spec(workload).get("securityContext", {})
        own = container.get("securityContext", {})
        merged = {**pod, **own}
        assert merged.get("runAsNonRoot") is True, name
        # The image's USER is a name: the kubelet can only verify non-root with a number.
        assert merged.get("runAsUser") == uid, f"{name}: runAsUser must be the image's {uid}"
        assert own.get("readOnlyRootFilesystem") is True, name
        assert own.get("allowPrivilegeEscalation") is False, name
        assert own.get("capabilities", {}).get("drop") == ["ALL"], name


def test_probes_ask_real_health_paths_on_the_listening_port(documents):
    probed = set()
    for deployment in of_kind(documents, "Deployment"):
        for container in pod_spec(deployment)["containers"]:
            args, env = list(container["args"]), config_env(documents, container)
            port = listen_port(args, env)
            assert port, f"{deployment['metadata']['name']}: listens nowhere, cannot be probed"
            host = option(args, "--host") or option(args, "--metrics-host")
            host = host or env.get("NMC_WORKER_METRICS_HOST")
            assert host == "0.0.0.0", "the kubelet probes the pod address, not loopback"  # noqa: S104
            ports = {str(p["containerPort"]) for p in container.get("ports", [])}
            assert port in ports, f"port {port} is not declared"
            for kind in ("readinessProbe", "livenessProbe"):
                probe = container[kind]["httpGet"]
                assert str(probe["port"]) == port, f"{kind} on {probe['port']}"
                assert serves(args, probe["path"], env), f"{kind}: {probe['path']} is not served"
                probed.add((command_name(args), kind, probe["path"]))
            assert container["readinessProbe"]["httpGet"]["path"] == "/health/ready"
            assert container["livenessProbe"]["httpGet"]["path"] == "/health/live"
    assert {c for c, _, _ in probed} == {"api", "worker", "console"}


# After SIGTERM the worker waits up to SHUTDOWN_GRACE_S for the tasks it holds, then closes
# its listener, the LDV sink, the database pool (psycopg's close waits up to 5 s) and the
# HTTP client: the kubelet must not SIGKILL it before that.
WORKER_CLOSE_S = 10


def test_workers_outlast_their_own_shutdown_grace_on_sigterm(documents):
    from nmc.worker.loop import SHUTDOWN_GRACE_S

    [worker] = [d for d in of_kind(documents, "Deployment") if "worker" in d["metadata"]["name"]]
    grace = pod_spec(worker)["terminationGracePeriodSeconds"]
    assert grace >= SHUTDOWN_GRACE_S + WORKER_CLOSE_S, (
        f"terminationGracePeriodSeconds {grace} is shorter than the worker's own shutdown "
        f"({SHUTDOWN_GRACE_S:.0f} s for held tasks + {WORKER_CLOSE_S} s to close)"
    )


# --------------------------------------------------------------------------------------------
# CloudNativePG


@pytest.fixture(scope="module")
def cluster(documents) -> dict[str, Any]:
    [cluster] = of_kind(documents, "Cluster")
    assert cluster["apiVersion"] == "postgresql.cnpg.io/v1"
    return cluster


def test_three_instances_with_synchronous_any_one_of_two_standbys(cluster):
    spec = cluster["spec"]
    assert spec["instances"] == 3  # a primary and two standbys
    synchronous = spec["postgresql"]["synchronous"]
    assert (synchronous["method"], synchronous["number"]) == ("any", 1)
    assert synchronous.get("dataDurability", "required") == "required"
    assert re.search(r":15(\.|$|-)", spec["imageName"]), "PostgreSQL 15"


def test_pgbouncer_poolers_in_transaction_mode(documents, cluster):
    poolers = of_kind(documents, "Pooler")
    assert {p["spec"]["type"] for p in poolers} >= {"rw"}
    for pooler in poolers:
        assert pooler["apiVersion"] == "postgresql.cnpg.io/v1"
        assert pooler["spec"]["cluster"]["name"] == cluster["metadata"]["name"]
        assert pooler["spec"]["pgbouncer"]["poolMode"] == "transaction"
        assert pooler["spec"]["instances"] >= 2


def test_the_migration_connects_as_a_role_that_may_create_roles(documents, cluster):
    """sql/bootstrap.sql creates nmc_owner, nmc_api and nmc_worker: the migrating user needs
    CREATEROLE. CloudNativePG's app owner has none unless the cluster's managed roles give it."""
    assert "CREATE ROLE" in (PROJECT_ROOT / "sql" / "bootstrap.sql").read_text()
    owner = cluster["spec"]["bootstrap"]["initdb"]["owner"]
    roles = {r["name"]: r for r in cluster["spec"].get("managed", {}).get("roles", [])}
    assert roles.get(owner, {}).get("createrole") is True, f"{owner} cannot create roles"
    [migrate] = of_kind(documents, "Job")
    [container] = pod_spec(migrate)["containers"]
    [url] = [e for e in container["env"] if e["name"] == "NMC_DATABASE_URL"]
    # CloudNativePG keeps the owner's connection URI in the Secret `<cluster>-app`.
    assert url["valueFrom"]["secretKeyRef"] == {
        "name": cluster["metadata"]["name"] + "-app",
        "key": "uri",
    }


# --------------------------------------------------------------------------------------------
# Database roles: the Kubernetes shape can log in

# Which role each command connects as, and the variable it reads the URL from (the code's).
DATABASE_URL_OF = {
    "api": "NMC_API_DATABASE_URL",
    "worker": "NMC_WORKER_DATABASE_URL",
    "console": "NMC_CONSOLE_DATABASE_URL",
}


def managed_roles(cluster) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in cluster["spec"].get("managed", {}).get("roles", [])}


def env_item(container: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((e for e in container.get("env", []) if e["name"] == name), None)


def test_every_role_a_deployment_connects_as_is_declared_with_a_password(documents, cluster):
    """CloudNativePG's pg_hba asks for a SCRAM password over TCP: a role without one cannot log
    in. Each Deployment names its role in its URL and takes the password from a Secret, and the
    Cluster declares that role (login, present) with that same Secret as its passwordSecret, so
    the operator sets the very password the pods send."""
    from nmc.database import ROLE_USERS

    roles = managed_roles(cluster)
    seen = set()
    for deployment in of_kind(documents, "Deployment"):
        for container in pod_spec(deployment)["containers"]:
            command = command_name(container["args"])
            where = f"{deployment['metadata']['name']} ({command})"
            url_item = env_item(container, DATABASE_URL_OF[command])
            assert url_item and "value" in url_item, f"{where}: no literal database URL"
            url = urlsplit(url_item["value"])
            assert url.password is None, f"{where}: a password inside the URL"
            user = url.username
            assert user == ROLE_USERS[command], f"{where} connects as {user!r}"
            password = env_item(container, "PGPASSWORD")
            assert password, f"{where}: no PGPASSWORD, so no password is sent"
            secret = password["valueFrom"]["secretKeyRef"]
            assert secret["key"] == "password", f"{where}: basic-auth Secrets hold `password`"
            role = roles.get(user)
            assert role, f"{where}: role {user} is not a managed role of the Cluster"
            assert role.get("ensure", "present") == "present", user
            assert role.get("login") is True, f"{user} cannot log in"
            assert not role.get("disablePassword"), f"{user}: password disabled"
            assert role.get("passwordSecret", {}).get("name") == secret["name"], (
                f"{user}: the Cluster sets its password from "
                f"{role.get('passwordSecret')}, the pods send the one in {secret['name']}"
            )
            seen.add(user)
    assert seen == {"nmc_api", "nmc_worker", "nmc_console"}


def test_the_pods_reach_postgresql_through_the_read_write_pooler(documents):
    pooler = next(p for p in of_kind(documents, "Pooler") if p["spec"]["type"] == "rw")
    for deployment in of_kind(documents, "Deployment"):
        [container] = pod_spec(deployment)["containers"]
        url = urlsplit(
            env_item(container, DATABASE_URL_OF[command_name(container["args"])])["value"]
        )
        assert url.hostname == pooler["metadata"]["name"], deployment["metadata"]["name"]
        assert url.path == "/" + "nmc"


def test_the_api_reads_its_feed_on_the_replicas_through_the_read_only_pooler(documents):
    pooler = next(p for p in of_kind(documents, "Pooler") if p["spec"]["type"] == "ro")
    [api] = [d for d in of_kind(documents, "Deployment") if d["metadata"]["name"] == "nmc-api"]
    [container] = pod_spec(api)["containers"]
    url = urlsplit(env_item(container, "NMC_API_REPLICA_DATABASE_URL")["value"])
    assert url.hostname == pooler["metadata"]["name"]
    assert (url.username, url.path) == ("nmc_api", "/nmc")


def bootstrap_roles() -> dict[str, bool]:
    """The roles sql/bootstrap.sql creates when missing, with whether they log in."""
    text = (PROJECT_ROOT / "sql" / "bootstrap.sql").read_text()
    return {
        name: attribute == "LOGIN"
        for name, attribute in re.findall(r"CREATE ROLE (\w+) (LOGIN|NOLOGIN)", text)
    }


def test_the_operator_and_the_migrator_agree_on_every_role(cluster):
    """CloudNativePG brings managed roles back to their spec (attributes and memberships), and
    `nmc migrate` creates the NMC's roles only when missing and grants the owner role to the
    migrating user: every role the bootstrap creates is declared with the same LOGIN, and the
    migrator's membership of nmc_owner is declared too, so neither undoes the other."""
    created = bootstrap_roles()
    assert set(created) == {"nmc_owner", "nmc_api", "nmc_worker", "nmc_console"}
    roles = managed_roles(cluster)
    for name, login in created.items():
        assert name in roles, f"{name} is created by the bootstrap but not declared"
        assert bool(roles[name].get("login", False)) is login, name
    owner = cluster["spec"]["bootstrap"]["initdb"]["owner"]
    assert "nmc_owner" in roles[owner].get("inRoles", []), (
        f"{owner} migrates as a member of nmc_owner; undeclared, the operator revokes it"
    )
    assert not roles["nmc_owner"].get("passwordSecret"), "nmc_owner never logs in"


# --------------------------------------------------------------------------------------------
# Strict schema validation for Kubernetes 1.32

KUBERNETES_VERSION = "1.32"
# Custom resources: kubernetes-validate has the schemas of the core API only.
CUSTOM_RESOURCES = {
    ("postgresql.cnpg.io/v1", "Cluster"),
    ("postgresql.cnpg.io/v1", "Pooler"),
    ("monitoring.coreos.com/v1", "PrometheusRule"),
}


def rendered(documents) -> tuple[str, list[dict[str, Any]]]:
    """The base as `kubectl kustomize` renders it (namespace and image set); without kubectl,
    the documents the base's files hold (what the structural tests read)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return "files (no kubectl)", documents
    result = subprocess.run(
        [kubectl, "kustomize", str(BASE)], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, f"kubectl kustomize failed:\n{result.stderr}"
    return "kubectl kustomize", [d for d in yaml.safe_load_all(result.stdout) if d]


def test_the_core_manifests_pass_strict_schema_validation(documents):
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    how, built = rendered(documents)
    validated, skipped = [], []
    for doc in built:
        key = (doc["apiVersion"], doc["kind"])
        if key in CUSTOM_RESOURCES:
            skipped.append(key)
            continue
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            raise AssertionError(
                f"{doc['kind']} {doc['metadata']['name']} ({how}): {error.message} "
                f"at {'/'.join(str(p) for p in error.path)}"
            ) from None
        validated.append(doc["kind"])
    assert sorted(validated) == [
        "ConfigMap",
        "Deployment",
        "Deployment",
        "Deployment",
        "Job",
        "Service",
        "Service",
    ]
    assert sorted(k for _, k in skipped) == ["Cluster", "Pooler", "Pooler", "PrometheusRule"]
    if how == "kubectl kustomize":
        assert {d["metadata"].get("namespace") for d in built} == {"nmc"}


def test_the_console_runs_behind_the_proxy_with_its_own_audience_and_public_url(documents):
    """Its own audience (never the DV API's), the public origin its forms come from (a proxy
    in front rewrites Host), and more than one replica (sessions are in the database)."""
    [console] = [
        d for d in of_kind(documents, "Deployment") if d["metadata"]["name"] == "nmc-console"
    ]
    [container] = pod_spec(console)["containers"]
    env = config_env(documents, container)
    [config] = of_kind(documents, "ConfigMap")
    assert env["NMC_CONSOLE_OAUTH_AUDIENCE"] not in ("", config["data"]["NMC_OAUTH_AUDIENCE"])
    assert {"NMC_OAUTH_ISSUER", "NMC_OAUTH_JWKS_URL"} <= set(env), "the DV API's IAM"
    assert env["NMC_CONSOLE_PUBLIC_URL"].startswith("https://")
    assert console["spec"]["replicas"] >= 2
    [service] = [d for d in of_kind(documents, "Service") if d["metadata"]["name"] == "nmc-console"]
    assert service["spec"]["selector"] == console["spec"]["selector"]["matchLabels"]
