"""The README's one test command, `make test`, on a machine that lacks what it needs.

A fresh checkout (the project's files copied into /tmp, no .venv, no .nmc) is run the way a
new user would, with a PATH on which pg_prove is missing (this machine's packages stay
installed: the PATH hides the program, as on a machine without the package). `apt-get` on
that PATH is a stand-in that records what it is asked, so nothing is installed for real.

* As root, `make test` installs the missing package itself (the list it shares with
  .ci/run is in .ci/install), then goes on to the checks (here `MAKE=true` ends the run
  after the install step: the checks themselves are the rest of this suite).
* As any other user it cannot install: it stops at once with the package to install and
  the command that does it, and asks apt-get for nothing.

axe-core (the console's accessibility test) comes from the npm registry at the version
tools/axe/package-lock.json pins; .ci/install runs `npm ci` there. In CI (CI=true) it must be
there: without it the accessibility test would be skipped unseen.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PG_PROVE_PACKAGE = "libtap-parser-sourcehandler-pgtap-perl"
AXE = PROJECT_ROOT / "tools" / "axe"
AXE_INSTALLED = AXE / "node_modules" / "axe-core" / "package.json"
FAKE_APT_GET = """#!/bin/sh
echo "$@" >> "{log}"
"""

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


# What a fresh clone does not have: build state, caches, the local cluster (.gitignore).
NOT_IN_A_CLONE = shutil.ignore_patterns(
    ".git", ".venv", ".nmc", "__pycache__", "*.pyc", "*.egg-info", ".pytest_cache",
    ".ruff_cache", ".hypothesis", "build", "dist", "node_modules", "results",
)  # fmt: skip


@pytest.fixture
def checkout() -> Iterator[Path]:
    """The project's files as a fresh clone has them, in a directory every user may read."""
    top = Path(tempfile.mkdtemp(prefix="nmc_checkout_", dir="/tmp"))
    top.chmod(0o755)
    dest = top / "nmc"
    shutil.copytree(PROJECT_ROOT, dest, ignore=NOT_IN_A_CLONE, symlinks=True)
    for directory in [dest, *(p for p in dest.rglob("*") if p.is_dir())]:
        directory.chmod(0o755)
    yield dest
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture
def without_pg_prove(checkout: Path) -> tuple[dict[str, str], Path]:
    """An environment whose PATH has every program of this one but pg_prove, and a
    stand-in apt-get that logs its arguments; returns (environment, apt-get's log)."""
    bin_dir = checkout.parent / "bin"
    bin_dir.mkdir(mode=0o755)
    log = checkout.parent / "apt-get.log"
    apt_get = bin_dir / "apt-get"
    apt_get.write_text(FAKE_APT_GET.format(log=log))
    apt_get.chmod(0o755)
    for directory in os.environ["PATH"].split(os.pathsep):
        if not Path(directory).is_dir():
            continue
        for program in Path(directory).iterdir():
            name = program.name
            if name == "pg_prove" or (bin_dir / name).exists() or not os.access(program, os.X_OK):
                continue
            (bin_dir / name).symlink_to(program)
    assert shutil.which("pg_prove", path=str(bin_dir)) is None
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("NMC_", "MAKE", "VIRTUAL_ENV")) and key != "MFLAGS"
    }
    env["PATH"] = str(bin_dir)
    return env, log


def installed_venv(checkout: Path) -> Path:
    """A virtualenv as .ci/install leaves it for this checkout (this suite's interpreter and
    `nmc`, and the stamp of the three pyproject.toml files it installed: the product's, the
    DV client's and the development tools'), so no pip runs in the test."""
    venv = checkout.parent / "venv"
    (venv / "bin").mkdir(parents=True)
    for program in ("python", "nmc"):
        (venv / "bin" / program).symlink_to(Path(sys.executable).parent / program)
    projects = (
        checkout / "pyproject.toml",
        checkout / "pyshell" / "client" / "pyproject.toml",
        checkout / "pyshell" / "dev" / "pyproject.toml",
    )
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in projects)).hexdigest()
    (venv / ".nmc-installed").write_text(digest + "\n")
    return venv


def installed_axe(checkout: Path) -> None:
    """axe-core as .ci/install leaves it (its stamp: the lock file's digest), so no npm runs."""
    modules = checkout / "tools" / "axe" / "node_modules"
    (modules / "axe-core").mkdir(parents=True)
    lock = (checkout / "tools" / "axe" / "package-lock.json").read_bytes()
    (modules / ".nmc-installed").write_text(hashlib.sha256(lock).hexdigest() + "\n")


@needs_make
@pytest.mark.skipif(os.geteuid() != 0, reason="installing packages needs root")
def test_make_test_installs_what_is_missing_when_run_as_root(checkout, without_pg_prove):
    env, log = without_pg_prove
    venv = installed_venv(checkout)
    installed_axe(checkout)
    result = subprocess.run(
        ["make", "test", f"VENV={venv}", "MAKE=true"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == "update"
    assert calls[1:] == [f"install -y --no-install-recommends {PG_PROVE_PACKAGE}"]


@needs_make
def test_make_test_names_the_missing_package_for_a_user_who_cannot_install(
    checkout, without_pg_prove
):
    env, log = without_pg_prove
    command = ["make", "test", f"VENV={checkout.parent / 'venv'}"]
    if os.geteuid() == 0:  # as root: as the unprivileged postgres OS user
        command = ["runuser", "-u", "postgres", "--", "env", f"PATH={env['PATH']}", *command]
    result = subprocess.run(
        command, cwd=checkout, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode != 0
    assert f"apt-get install {PG_PROVE_PACKAGE}" in result.stderr, result.stderr
    assert "pg_prove" in result.stderr
    assert not log.exists(), "apt-get was called without root"
    assert not (checkout.parent / "venv").exists(), "it stopped before building anything"


def test_ci_run_installs_through_the_same_script():
    run = (PROJECT_ROOT / ".ci" / "run").read_text()
    assert "bash .ci/install" in run or ".ci/install" in run
    assert "apt-get" not in run, "the package list lives in .ci/install only"
    assert "make test" in run


def test_axe_core_is_pinned_to_one_version_in_package_json_and_lock():
    pinned = json.loads((AXE / "package.json").read_text())["dependencies"]["axe-core"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", pinned), f"not an exact version: {pinned}"
    lock = json.loads((AXE / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/axe-core"]["version"] == pinned
    assert lock["packages"]["node_modules/axe-core"]["integrity"].startswith("sha512-")
    install = (PROJECT_ROOT / ".ci" / "install").read_text()
    assert 'npm ci --prefix "$axe"' in install and "axe=tools/axe" in install


@pytest.mark.skipif(
    os.environ.get("CI") != "true" and not AXE_INSTALLED.exists(),
    reason="not in CI, and axe-core is not installed here (bash .ci/install installs it)",
)
def test_ci_install_provides_the_pinned_axe_core():
    assert AXE_INSTALLED.exists(), ".ci/install did not install axe-core (npm ci in tools/axe)"
    pinned = json.loads((AXE / "package.json").read_text())["dependencies"]["axe-core"]
    assert json.loads(AXE_INSTALLED.read_text())["version"] == pinned
    assert (AXE_INSTALLED.parent / "axe.min.js").is_file()
