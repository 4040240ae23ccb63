"""Fixtures of the console tests: the dev IAM, the console's environment (its own database
role and audience), a populated database, and the app with its lifespan running."""

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from consoletest import AUDIENCE, DV_AUDIENCE, ISSUER, Populated, populate
from starlette.testclient import TestClient

from nmc.admin.dev_iam import generate_dev_iam_key
from nmc.console.app import create_app
from nmc.crypto.kek_ring import KekRing, new_kek_ring, parse_kek_ring
from nmc.database import with_overrides


@pytest.fixture
def console_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    generate_dev_iam_key(tmp_path / "iam.pem", tmp_path / "jwks.json")
    for name, value in {
        "NMC_CONSOLE_DATABASE_URL": with_overrides(db_url, user="nmc_console"),
        "NMC_OAUTH_ISSUER": ISSUER,
        "NMC_OAUTH_AUDIENCE": DV_AUDIENCE,
        "NMC_CONSOLE_OAUTH_AUDIENCE": AUDIENCE,
        "NMC_OAUTH_JWKS_FILE": str(tmp_path / "jwks.json"),
        "NMC_DEV_IAM_KEY_FILE": str(tmp_path / "iam.pem"),
        "NMC_CONSOLE_COOKIE_SECURE": "0",
        "NMC_CONSOLE_POOL_MAX": "2",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("NMC_OAUTH_JWKS_URL", "NMC_CONSOLE_ROLE_CLAIM", "NMC_OAUTH_OIN_CLAIM"):
        monkeypatch.delenv(name, raising=False)
    return db_url


@pytest.fixture(scope="session")
def ring() -> KekRing:
    return parse_kek_ring(new_kek_ring("kek-console-test"))


@pytest.fixture
def data(conn: psycopg.Connection, ring: KekRing) -> Populated:
    return populate(conn, ring)


@pytest.fixture
def client(console_env: str, data: Populated) -> Iterator[TestClient]:
    with TestClient(create_app(), base_url="http://console.test") as test_client:
        yield test_client
