"""`nmc db …`: URLs, status, and an embedded cluster that starts and stops idempotently."""

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from nmc import pg_binaries

embedded_only = pytest.mark.skipif(
    bool(os.environ.get("NMC_DATABASE_URL")), reason="tests the embedded cluster"
)


@pytest.fixture
def private_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """NMC_HOME and NMC_DB_PORT for a throwaway cluster, reachable by the postgres user."""
    home = Path(tempfile.mkdtemp(prefix="nmc_home_", dir="/tmp"))
    home.chmod(0o755)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.delenv("NMC_DATABASE_URL", raising=False)
    monkeypatch.setenv("NMC_HOME", str(home))
    monkeypatch.setenv("NMC_DB_PORT", str(port))
    yield home
    shutil.rmtree(home, ignore_errors=True)


def test_url_names_the_embedded_cluster_and_roles(nmc, monkeypatch):
    monkeypatch.delenv("NMC_DATABASE_URL", raising=False)
    monkeypatch.setenv("NMC_DB_PORT", "54399")
    assert nmc("db", "url").out == "postgresql://postgres@127.0.0.1:54399/nmc\n"
    assert nmc("db", "url", "--role", "api").out == "postgresql://nmc_api@127.0.0.1:54399/nmc\n"
    assert (
        nmc("db", "url", "--role", "worker", "--database", "x").out
        == "postgresql://nmc_worker@127.0.0.1:54399/x\n"
    )


def test_external_url_is_used_instead_of_the_cluster(nmc, monkeypatch):
    monkeypatch.setenv("NMC_DATABASE_URL", "postgresql://admin:geheim@db.example:5432/nmc")
    assert nmc("db", "url").out == "postgresql://admin:geheim@db.example:5432/nmc\n"
    role_url = nmc("db", "url", "--role", "api", "--database", "other").out
    assert role_url == "postgresql://nmc_api@db.example:5432/other\n"  # no admin password
    started = nmc("db", "start")
    assert started.exit_code == 0
    assert "embedded cluster is not used" in started.out


@embedded_only
def test_status_of_the_running_test_cluster(nmc, admin_url):
    result = nmc("db", "status")
    assert result.exit_code == 0
    assert "running" in result.out


@embedded_only
def test_start_and_stop_are_idempotent(nmc, private_home):
    assert nmc("db", "status").exit_code == 3
    try:
        first = nmc("db", "start")
        assert first.exit_code == 0, first.err
        assert "started" in first.out
        again = nmc("db", "start")
        assert again.exit_code == 0
        assert "already running" in again.out
        assert nmc("db", "status").exit_code == 0
        with psycopg.connect(nmc("db", "url").out.strip()) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == ("nmc",)
    finally:
        stopped = nmc("db", "stop")
    assert stopped.exit_code == 0
    assert "stopped" in stopped.out
    assert nmc("db", "stop").exit_code == 0
    assert nmc("db", "status").exit_code == 3


@embedded_only
@pytest.mark.skipif(os.geteuid() != 0, reason="the postgres OS user is only used as root")
def test_unreachable_home_is_explained(nmc, private_home, monkeypatch):
    locked = private_home / "locked"
    locked.mkdir(mode=0o700)
    monkeypatch.setenv("NMC_HOME", str(locked / "nmc"))
    result = nmc("db", "start")
    assert result.exit_code == 1
    assert f"{locked} is not traversable" in result.err


@embedded_only
def test_missing_postgresql_names_the_package(nmc, private_home, monkeypatch):
    monkeypatch.setattr(pg_binaries, "server_bindir", lambda: None)
    result = nmc("db", "start")
    assert result.exit_code == 1
    assert "apt-get install postgresql-15" in result.err
