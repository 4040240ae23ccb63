"""`nmc db …`: URLs, status, and an embedded cluster that starts and stops idempotently."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest

from nmc import config
from nmc.config import Settings
from nmc_dev import pg_binaries
from nmc_dev.stack.local import LocalStack

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


@pytest.fixture
def occupied_port() -> Iterator[int]:
    """A port something else listens on (as another clone's cluster would on 54329)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


@pytest.fixture
def fresh_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """NMC_HOME for a throwaway cluster, with no port configured."""
    home = Path(tempfile.mkdtemp(prefix="nmc_home_", dir="/tmp"))
    home.chmod(0o755)
    monkeypatch.delenv("NMC_DATABASE_URL", raising=False)
    monkeypatch.delenv("NMC_DB_PORT", raising=False)
    monkeypatch.setenv("NMC_HOME", str(home))
    yield home
    shutil.rmtree(home, ignore_errors=True)


@embedded_only
def test_a_taken_default_port_gives_way_to_a_free_one_that_is_remembered(
    nmc, fresh_home, occupied_port, monkeypatch
):
    """A second checkout (or any server) on the default port: the embedded cluster takes a
    free port, says so in one line, and every later command finds it under $NMC_HOME."""
    monkeypatch.setattr(config, "DEFAULT_DB_PORT", occupied_port)
    try:
        started = nmc("db", "start")
        assert started.exit_code == 0, started.err
        port = int((fresh_home / "port").read_text())
        assert port != occupied_port
        notes = [line for line in (started.out + started.err).splitlines() if "taken" in line]
        assert len(notes) == 1, started
        assert f"port {occupied_port} is taken" in notes[0] and str(port) in notes[0]
        assert f"127.0.0.1:{port}" in started.out

        url = nmc("db", "url").out.strip()
        assert url == f"postgresql://postgres@127.0.0.1:{port}/nmc"
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT current_setting('port')").fetchone() == (str(port),)
        # A new process (another shell, the demo, the tests) reads the same port.
        other = subprocess.run(
            [sys.executable, "-m", "nmc", "db", "url", "--role", "api"],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "NMC_HOME": str(fresh_home)},
        )
        assert other.stdout.strip() == f"postgresql://nmc_api@127.0.0.1:{port}/nmc"
        # The demo's and the soak's stack: its URLs name the cluster's port, not the default.
        stack = LocalStack(Settings.from_env())
        assert stack.admin_url == f"postgresql://postgres@127.0.0.1:{port}/nmc_demo"
        assert f"127.0.0.1:{port}/" in stack.role_url("worker")

        again = nmc("db", "start")
        assert "already running" in again.out and "taken" not in again.out + again.err
    finally:
        nmc("db", "stop")
    # Stopped and started again: the remembered port is free, so it stays.
    try:
        restarted = nmc("db", "start")
        assert restarted.exit_code == 0, restarted.err
        assert "taken" not in restarted.out + restarted.err
        assert int((fresh_home / "port").read_text()) == port
    finally:
        nmc("db", "stop")


@embedded_only
def test_an_explicitly_configured_port_that_is_taken_is_not_replaced(
    nmc, fresh_home, occupied_port, monkeypatch
):
    monkeypatch.setenv("NMC_DB_PORT", str(occupied_port))
    result = nmc("db", "start")
    assert result.exit_code == 1
    assert f"port {occupied_port} (NMC_DB_PORT) is taken" in result.err
    assert not (fresh_home / "port").exists()


def test_cluster_settings_preload_the_libraries_asked_for(tmp_path):
    # The lifecycle benchmark's own cluster loads pg_stat_statements at its start; a plain
    # cluster loads nothing extra (no line at all, so PostgreSQL's default stays).
    from nmc_dev.embedded_db import EmbeddedCluster

    settings = replace(Settings.from_env({"NMC_HOME": str(tmp_path)}), db_port=54398)
    for preload, expected in (((), None), (("pg_stat_statements",), "'pg_stat_statements'")):
        cluster = EmbeddedCluster(settings, preload=preload)
        cluster.data_dir.mkdir(parents=True, exist_ok=True)
        cluster._write_settings(54398)
        lines = (cluster.data_dir / "nmc.conf").read_text().splitlines()
        preloads = [
            line.split("=", 1)[1].strip() for line in lines if line.startswith("shared_preload")
        ]
        assert preloads == ([expected] if expected else []), lines
