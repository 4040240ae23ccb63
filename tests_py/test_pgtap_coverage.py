"""Every SQL function of the product has a pgTAP test of its own: each function created in
functions/ and triggers/ (`CREATE [OR REPLACE] FUNCTION nmc.<name>`) is called by name,
`nmc.<name>`, in the SQL of a test in tests_sql/ (a mention in a comment or only in a shared
fixture does not count)."""

import re
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CREATED = re.compile(r"\bCREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+nmc\.(\w+)\s*\(", re.IGNORECASE)
LINE_COMMENT = re.compile(r"--[^\n]*")


def created_functions() -> dict[str, str]:
    """Each function name with the module (relative path) that creates it."""
    found: dict[str, str] = {}
    for folder in ("functions", "triggers"):
        for module in sorted((PROJECT_ROOT / folder).rglob("*.sql")):
            text = LINE_COMMENT.sub("", module.read_text(encoding="utf-8"))
            for name in CREATED.findall(text):
                found.setdefault(name, str(module.relative_to(PROJECT_ROOT)))
    return found


def pgtap_sql() -> str:
    """The SQL of every pgTAP test file, comments left out."""
    tests = sorted((PROJECT_ROOT / "tests_sql").glob("*.sql"))
    return "\n".join(LINE_COMMENT.sub("", test.read_text(encoding="utf-8")) for test in tests)


def test_every_function_is_named_by_a_pgtap_test():
    functions = created_functions()
    tests = pgtap_sql()
    untested = [
        f"nmc.{name} ({module})"
        for name, module in sorted(functions.items())
        if not re.search(rf"\bnmc\.{name}\b", tests)
    ]
    assert not untested, "no test in tests_sql/*.sql calls " + ", ".join(untested)


def test_the_scan_finds_the_functions_and_their_calls():
    functions = created_functions()
    # The scan itself works: the modules create well over a hundred functions, trigger
    # functions and SQL-language ones included, and a comment or fixture is not a test.
    assert len(functions) > 100
    assert functions["refuse_event_change"] == "triggers/event_append_only.sql"
    assert functions["poging_status_voor"] == "functions/receipt/apply_receipt.sql"
    assert re.search(r"\bnmc\.get_afleverbewijs\b", pgtap_sql())
    assert not re.search(r"\bnmc\.", LINE_COMMENT.sub("", "-- nmc.get_afleverbewijs"))
