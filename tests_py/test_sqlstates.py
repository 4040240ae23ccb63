"""nmc.sqlstates is the one place the shell spells an NMC SQLSTATE; docs/errors.md lists them."""

import ast
import re
from pathlib import Path

from nmc import sqlstates

PYSHELL = Path(__file__).resolve().parents[1] / "pyshell"
NMC_CODE = re.compile(r"NM[0-9P][0-9]{2}")


def code_literals(source: str) -> list[str]:
    """The string constants of a module that are an NMC SQLSTATE, whole."""
    return [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and NMC_CODE.fullmatch(node.value)
    ]


def named_codes() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(sqlstates).items()
        if name.isupper() and isinstance(value, str)
    }


def test_no_module_but_the_table_spells_an_nmc_sqlstate():
    spelled = {
        str(path.relative_to(PYSHELL)): found
        for path in sorted(PYSHELL.rglob("*.py"))
        if path != PYSHELL / "nmc" / "sqlstates.py"
        and (found := code_literals(path.read_text(encoding="utf-8")))
    }
    assert spelled == {}


def test_the_scan_finds_a_spelled_code():
    source = 'STALE = "NM011"\nif error.sqlstate == "NMP01": pass\n"""Docs may say NM011."""\n'
    assert code_literals(source) == ["NM011", "NMP01"]


def test_every_name_has_its_own_code():
    values = list(named_codes().values())
    assert len(values) == len(set(values))


def test_every_named_nmc_code_is_documented():
    documented = set(
        re.findall(
            r"^\| (NM[0-9P][0-9]{2}) \|",
            (PYSHELL.parent / "docs" / "errors.md").read_text(encoding="utf-8"),
            flags=re.MULTILINE,
        )
    )
    named = {value for value in named_codes().values() if NMC_CODE.fullmatch(value)}
    assert named and named <= documented
