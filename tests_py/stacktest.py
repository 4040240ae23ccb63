"""Helpers of the tests that run a whole local NMC (`nmc demo`, nmc_dev.stack) in their own
NMC_HOME and port: their own embedded cluster, so the shared one is never touched."""

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from nmc_dev.pg_binaries import server_bindir

needs_server_binaries = pytest.mark.skipif(
    server_bindir() is None, reason="an own embedded cluster needs initdb and pg_ctl"
)


@contextmanager
def private_home() -> Iterator[Path]:
    # Under /tmp and open for traversal: as root the cluster runs as the `postgres` OS user.
    home = Path(tempfile.mkdtemp(prefix="nmc-stack-test-", dir="/tmp"))
    home.chmod(0o755)
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def processes_of(home: Path) -> list[str]:
    """Every process of a run in `home`: it carries NMC_HOME=home in its environment, or (the
    postmaster) the data directory on its command line. This test process is left out."""
    found = []
    needle_env = f"NMC_HOME={home}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue  # gone, or not ours to read
        if needle_env in environ.split(b"\0") or str(home).encode() in cmdline:
            command = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{proc.name}: {command}")
    return found
