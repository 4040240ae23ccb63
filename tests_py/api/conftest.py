"""Fixtures for the DV API tests: secrets, environment, onboarded DVs, the real app.

Every test gets a fresh migrated database (`db_url` from the parent conftest), its own KEK,
peppers and dev IAM key, and the app with its lifespan running (`with TestClient(app)`),
connected as nmc_api.
"""

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from apitest import (
    AUDIENCE,
    CALLBACK_TOKEN,
    ISSUER,
    OIN_A,
    OIN_B,
    dv_document,
)
from starlette.testclient import TestClient

from nmc.admin.dev_iam import generate_dev_iam_key
from nmc.api.app import create_app
from nmc.crypto.kek_ring import new_kek_ring
from nmc.crypto.peppers import new_peppers
from nmc.database import with_overrides
from nmc.signing.afleverbewijs_signing import new_afleverbewijs_ring
from nmc.signing.webhook_signing import new_signing_ring


@dataclass
class ApiProcess:
    process: subprocess.Popen
    port: int

    def peak_rss_bytes(self) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        [line] = [line for line in status.splitlines() if line.startswith("VmHWM:")]
        return int(line.split()[1]) * 1024


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def api_process(api_env, dvs, tmp_path) -> Iterator[ApiProcess]:
    """A real `nmc api` process (uvicorn, as in production) for the onboarded DVs A and B."""
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc to read the process's memory")
    port = _free_port()
    log = (tmp_path / "api.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "nmc", "api", "--port", str(port), "--no-access-log"],
        env=dict(os.environ),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    api = ApiProcess(process, port)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, (tmp_path / "api.log").read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health/live", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "nmc api did not start"
            time.sleep(0.1)
        yield api
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@dataclass
class ApiEnv:
    db_url: str
    secrets: Path
    kek: dict[str, Any]
    peppers: dict[str, Any]


@pytest.fixture
def api_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ApiEnv:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    kek = new_kek_ring("kek-test-1")
    (secrets / "kek.json").write_text(json.dumps(kek))
    peppers = new_peppers()
    generate_dev_iam_key(secrets / "dev-iam-key.pem", secrets / "jwks.json")
    (secrets / "webhook-signing.json").write_text(json.dumps(new_signing_ring("nmc-test-1")))
    (secrets / "afleverbewijs-signing.json").write_text(
        json.dumps(new_afleverbewijs_ring("nmc-bewijs-test-1"))
    )
    for name, value in {
        "NMC_API_DATABASE_URL": with_overrides(db_url, user="nmc_api"),
        "NMC_KEK_FILE": str(secrets / "kek.json"),
        "NMC_PEPPERS": json.dumps(peppers),
        "NMC_OAUTH_ISSUER": ISSUER,
        "NMC_OAUTH_AUDIENCE": AUDIENCE,
        "NMC_OAUTH_JWKS_FILE": str(secrets / "jwks.json"),
        "NMC_DEV_IAM_KEY_FILE": str(secrets / "dev-iam-key.pem"),
        "NMC_NOTIFYNL_CALLBACK_TOKEN": CALLBACK_TOKEN,
        "NMC_API_POOL_MIN": "1",
        "NMC_API_POOL_MAX": "4",
        "NMC_LDV_FILE": str(tmp_path / "ldv.jsonl"),
        "NMC_WEBHOOK_SIGNING_KEYS_FILE": str(secrets / "webhook-signing.json"),
        "NMC_AFLEVERBEWIJS_SIGNING_KEYS_FILE": str(secrets / "afleverbewijs-signing.json"),
        "NMC_OIN": "00000001234567890000",
    }.items():
        monkeypatch.setenv(name, value)
    for name in (
        "NMC_PEPPERS_FILE",
        "NMC_OAUTH_JWKS_URL",
        "NMC_OAUTH_OIN_CLAIM",
        "NMC_LDV_URL",
        "NMC_API_EVENT_SOURCE",
    ):
        monkeypatch.delenv(name, raising=False)
    return ApiEnv(db_url=db_url, secrets=secrets, kek=kek, peppers=peppers)


@pytest.fixture
def apply_dv(conn: psycopg.Connection) -> Callable[..., int]:
    """Onboard a DV through nmc.apply_dienstverlener (as admin); returns its dv_id."""

    def apply(oin: str, **overrides: Any) -> int:
        row = conn.execute(
            "SELECT nmc.apply_dienstverlener(%s::jsonb)",
            [json.dumps(dv_document(oin, **overrides))],
        ).fetchone()
        return row[0]

    return apply


@pytest.fixture
def dvs(api_env: ApiEnv, apply_dv: Callable[..., int]) -> dict[str, int]:
    """Two onboarded DVs, A and B."""
    return {"A": apply_dv(OIN_A), "B": apply_dv(OIN_B)}


@pytest.fixture
def client(api_env: ApiEnv, dvs: dict[str, int]) -> Iterator[TestClient]:
    with TestClient(create_app(), raise_server_exceptions=False) as test_client:
        yield test_client
