"""The product installs and runs alone: what the Dockerfile's runtime stage builds.

The runtime stage's own COPY lines are read from the Dockerfile and those files copied into a
fresh build context; it is built into a wheel as its `pip install .` builds it, and the wheel
installed into a fresh virtualenv that sees, besides it, only the distributions the product
declares (pyproject.toml's dependencies and theirs, linked from this suite's environment: no
index is asked for them). There no module of the development tools (nmc_dev) or the DV client
(nmc_client) is importable, every module of nmc imports, `nmc api|worker|migrate|console|admin`
start, and a development command (`nmc demo`, `nmc db start`, `nmc admin clock show`) says in
one line what to install and exits 1.

Building the wheel takes a few seconds, with the build backend of this suite's environment
(the test extras hold setuptools at what [build-system] requires).
"""

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from nmc import cli

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
PRODUCT_COMMANDS = ("api", "worker", "migrate", "console", "admin")


def runtime_stage() -> str:
    text = DOCKERFILE.read_text(encoding="utf-8")
    return text.split(" AS runtime\n", 1)[1].split("\nFROM ", 1)[0]


def runtime_copies() -> list[str]:
    """The sources the runtime stage copies from the build context."""
    sources = []
    for line in re.findall(r"^COPY (?!--from)(.+)$", runtime_stage(), re.MULTILINE):
        sources.extend(line.split()[:-1])
    return sources


def declared_closure() -> list[importlib.metadata.Distribution]:
    """The distributions pyproject.toml's dependencies name, and theirs, as installed here."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(text) for text in project["dependencies"]]
    seen: dict[str, importlib.metadata.Distribution] = {}
    while wanted:
        requirement = wanted.pop()
        name = requirement.name.lower().replace("_", "-")
        if name in seen:
            continue
        dist = importlib.metadata.distribution(requirement.name)
        seen[name] = dist
        extras = requirement.extras or {""}
        for text in dist.requires or []:
            nested = Requirement(text)
            if nested.marker is None or any(nested.marker.evaluate({"extra": e}) for e in extras):
                wanted.append(nested)
    return list(seen.values())


def link_distributions(dists, into: Path) -> None:
    """Symlinks to the top-level packages, modules and metadata of `dists`."""
    into.mkdir()
    for dist in dists:
        site = Path(dist.locate_file(""))
        for top in {file.parts[0] for file in dist.files or []}:
            if top in ("..", "__pycache__") or top.endswith(".pth") or (into / top).exists():
                continue
            (into / top).symlink_to(site / top)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The product's wheel, built from the files the runtime stage copies."""
    top = tmp_path_factory.mktemp("product")
    context = top / "context"
    for source in runtime_copies():
        target = context / source
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / source).is_dir():
            shutil.copytree(ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / source, target)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check",
         "--no-deps", "--no-build-isolation", "--wheel-dir", str(top / "dist"), str(context)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    [found] = (top / "dist").glob("nmc-*.whl")
    return found


@pytest.fixture(scope="module")
def product_venv(wheel: Path) -> Path:
    """A virtualenv with the product's wheel and only what the product declares."""
    venv = wheel.parent.parent / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    link_distributions(declared_closure(), venv / "declared")
    (site / "declared.pth").write_text(f"{venv / 'declared'}\n")
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--quiet", "--disable-pip-version-check", "--no-deps", "--no-index", str(wheel)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return venv


def alone(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """A program of the venv, without this suite's paths, variables or user site."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "VIRTUAL_ENV", "NMC_"))
    }
    env["PYTHONNOUSERSITE"] = "1"
    return subprocess.run(
        [str(venv / "bin" / args[0]), *args[1:]],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_runtime_stage_installs_the_product_alone():
    stage = runtime_stage()
    assert "pyshell/nmc" in runtime_copies()
    assert not {"pyshell", "pyshell/dev", "pyshell/client"} & set(runtime_copies())
    assert re.search(r"pip install --no-cache-dir \. ", stage), "not `pip install .`"
    assert " -e " not in stage


def test_the_wheel_holds_nmc_and_nothing_of_the_tools(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    packages = {name.split("/", 1)[0] for name in names}
    assert {p for p in packages if not p.endswith(".dist-info")} == {"nmc"}
    for data in ("nmc/queries.sql", "nmc/api/openapi.yaml", "nmc/console/static/console.css"):
        assert data in names
    assert any(name.startswith("nmc/console/templates/") for name in names)
    [entry_points] = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
    assert "nmc = nmc.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_every_module_of_the_product_imports_without_the_tools(product_venv: Path, tmp_path):
    script = (
        "import importlib, importlib.util, pkgutil, nmc\n"
        "for m in pkgutil.walk_packages(nmc.__path__, 'nmc.'):\n"
        "    importlib.import_module(m.name)\n"
        "print(nmc.__file__)\n"
        "print(*[n for n in ('nmc_dev', 'nmc_client') if importlib.util.find_spec(n)])\n"
    )
    result = alone(product_venv, "python", "-c", script, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    location, others = result.stdout.splitlines()
    assert location.startswith(str(product_venv)), "nmc is the venv's, not the checkout"
    assert others == ""


@pytest.mark.parametrize("command", PRODUCT_COMMANDS)
def test_the_product_commands_start(product_venv: Path, tmp_path, command: str):
    result = alone(product_venv, "nmc", command, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: nmc {command}")


@pytest.mark.parametrize("args", [("demo", "--count", "3"), ("admin", "clock", "show")])
def test_a_development_command_says_what_to_install(product_venv: Path, tmp_path, args):
    result = alone(product_venv, "nmc", *args, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert f"`nmc {' '.join(args[:2] if args[0] == 'admin' else args[:1])}`" in line
    assert "nmc-dev" in line and "pip install" in line and "./pyshell/dev" in line


def test_the_development_tools_register_the_commands_the_product_names():
    [entry_point] = importlib.metadata.entry_points(group=cli.COMMAND_GROUP)
    assert entry_point.dist.name == cli.DEV_TOOLS
    parser = cli.argparse.ArgumentParser()
    commands = parser.add_subparsers()
    admin = cli._group(commands, "admin", "operator tasks")
    entry_point.load()(commands, admin, cli._group, cli._command)
    assert set(commands.choices) - {"admin"} == set(cli.DEV_COMMANDS)
    assert set(admin.choices) == set(cli.DEV_ADMIN_COMMANDS)
