"""The import contract of the product, read from the source (every import, lazy ones too):

* The three processes, `nmc.api`, `nmc.worker` and `nmc.console`, import their own package
  and the core, never one another, and not the command line (`nmc.cli`, `nmc.admin`).
* The core (every other package and module of nmc but the command line) imports none of the
  processes and not the command line: what two processes share lives in the core.
* Nothing under nmc imports the development tools (`nmc_dev`) or the DV client
  (`nmc_client`): they are distributions of their own, not installed in production.
* The top of nmc holds the modules of TOP_LEVEL only; every other concern is a package.
"""

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pyshell" / "nmc"
PROCESSES = ("nmc.api", "nmc.worker", "nmc.console")
COMMAND_LINE = ("nmc.cli", "nmc.__main__", "nmc.admin")
OTHER_DISTRIBUTIONS = ("nmc_dev", "nmc_client")
# The modules at the top of nmc: the command line, the settings, the errors, the database
# calls and their named queries, the status vocabulary.
TOP_LEVEL = frozenset({
    "__init__", "__main__", "cli", "config", "settings_env", "errors", "status",
    "database", "queries", "sql_calls", "sqlstates",
})  # fmt: skip


@dataclass(frozen=True)
class Import:
    importer: str  # the importing module, dotted
    imported: str  # the module it names, dotted (a name from a package: that submodule)
    line: int

    def __str__(self) -> str:
        return f"{self.importer}:{self.line} imports {self.imported}"


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str, root: Path) -> bool:
    """Whether `dotted` (under root's package) is a module or package of the source tree."""
    parts = dotted.split(".")
    if parts[0] != root.name:
        return False
    path = root.joinpath(*parts[1:])
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports_of(source: str, importer: str, *, is_package: bool, root: Path = PACKAGE):
    """Every module `source` imports, at any depth of the code."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(importer, alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = importer.split(".")
                if not is_package:
                    anchor = anchor[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                yield Import(
                    importer, candidate if _is_module(candidate, root) else base, node.lineno
                )


def every_import(root: Path = PACKAGE) -> list[Import]:
    found: set[Import] = set()
    for path in sorted(root.rglob("*.py")):
        found.update(
            imports_of(
                path.read_text(encoding="utf-8"),
                module_name(path, root),
                is_package=path.name == "__init__.py",
                root=root,
            )
        )
    return sorted(found, key=str)


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def area(module: str) -> str:
    """The process or command-line package a module of nmc belongs to, or "core"."""
    for package in (*PROCESSES, *COMMAND_LINE):
        if within(module, package):
            return package
    return "core"


def violations(imports: list[Import]) -> list[str]:
    """The imports that break the contract of this module's docstring."""
    broken = []
    for item in imports:
        if any(within(item.imported, other) for other in OTHER_DISTRIBUTIONS):
            broken.append(f"{item}: a development tool or the DV client")
            continue
        if not within(item.imported, "nmc"):
            continue
        source, target = area(item.importer), area(item.imported)
        if source in COMMAND_LINE:
            continue  # the command line puts the processes together
        if target in COMMAND_LINE:
            broken.append(f"{item}: the command line")
        elif target in PROCESSES and target != source:
            who = "the core" if source == "core" else source
            broken.append(f"{item}: {who} must not import the process {target}")
    return broken


def test_the_processes_the_core_and_the_other_distributions_keep_apart():
    imports = every_import()
    assert len(imports) > 500, "the scan reads the package"
    broken = violations(imports)
    assert not broken, "\n".join(broken)


def test_the_top_of_nmc_holds_only_the_allowed_modules():
    modules = {path.stem for path in PACKAGE.glob("*.py")}
    assert "cli" in modules
    loose = sorted(modules - TOP_LEVEL)
    assert not loose, f"move these into the package of their concern: {', '.join(loose)}"


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        ("api/x.py", "from nmc.worker import loop", "nmc.api must not import the process"),
        ("worker/x.py", "def f():\n    from nmc.console.app import y", "nmc.worker must not"),
        ("console/x.py", "from ..api import auth", "nmc.console must not import"),
        ("adapters/x.py", "import nmc.api.settings", "the core must not import the process"),
        ("feed/x.py", "from nmc import cli", "the command line"),
        ("cli.py", "from nmc_dev import cli", "a development tool"),
        ("api/x.py", "import nmc_client.bewijs", "the DV client"),
    ],
)
def test_the_check_finds_each_kind_of_crossing(tmp_path: Path, path: str, source: str, expected):
    root = tmp_path / "nmc"
    for package in ("", "api", "worker", "console", "adapters", "feed"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
    for module in ("worker/loop.py", "console/app.py", "api/auth.py", "api/settings.py", "cli.py"):
        (root / module).write_text("")
    (root / path).write_text(source)
    found = violations(every_import(root))
    assert len(found) == 1 and expected in found[0], found


def test_allowed_imports_pass(tmp_path: Path):
    root = tmp_path / "nmc"
    for package in ("", "api", "crypto"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
    (root / "crypto" / "sealing.py").write_text("from nmc import errors")
    (root / "errors.py").write_text("")
    (root / "api" / "app.py").write_text("from nmc.crypto import sealing\nfrom . import app")
    (root / "cli.py").write_text("from nmc.api import app")
    imports = every_import(root)
    assert {str(i) for i in imports} >= {"nmc.api.app:1 imports nmc.crypto.sealing"}
    assert violations(imports) == []
