"""`nmc migrate`: bookkeeping, --check, modules, concurrency, and fresh == step by step."""

import re
import subprocess
import sys

import psycopg

from nmc.admin.migrate import migrate
from nmc_dev.pg_binaries import client_tool

TABLE_T = "CREATE TABLE nmc.t (id integer PRIMARY KEY);\n"
FUNCTION_F = "CREATE OR REPLACE FUNCTION nmc.f() RETURNS integer LANGUAGE sql RETURN {};\n"


def applied_files(url: str) -> list[tuple[str, str, str]]:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT bestand, soort, checksum FROM nmc_migratie.toegepast ORDER BY bestand"
        ).fetchall()


def test_second_run_applies_nothing(nmc, empty_db_url):
    first = nmc("migrate", "--database-url", empty_db_url)
    assert first.exit_code == 0, first.err
    assert "applied  schema/" in first.out
    second = nmc("migrate", "--database-url", empty_db_url)
    assert second.exit_code == 0, second.err
    assert second.out == "up to date: nothing to apply; grants re-applied\n"


def test_check_passes_when_up_to_date(nmc, db_url):
    result = nmc("migrate", "--check", "--database-url", db_url)
    assert (result.exit_code, result.out) == (0, "check: up to date\n")


def test_check_fails_on_a_pending_schema_file(nmc, db_url, project_copy):
    (project_copy / "schema" / "9999_extra.sql").write_text(TABLE_T)
    before = applied_files(db_url)
    result = nmc("migrate", "--check", "--database-url", db_url, "--root", str(project_copy))
    assert result.exit_code == 1
    assert result.out.splitlines() == [
        "pending  schema/9999_extra.sql",
        "check: to apply 1 schema file, 0 modules",
    ]
    assert applied_files(db_url) == before


def test_an_edited_schema_file_is_drift(nmc, db_url, project_copy):
    first_schema_file = min((project_copy / "schema").glob("*.sql"))
    with first_schema_file.open("a") as edited:
        edited.write("-- an edit after the fact\n")
    relative = f"schema/{first_schema_file.name}"

    check = nmc("migrate", "--check", "--database-url", db_url, "--root", str(project_copy))
    assert check.exit_code == 1
    assert f"DRIFTED  {relative}" in check.out

    run = nmc("migrate", "--database-url", db_url, "--root", str(project_copy))
    assert run.exit_code == 1
    assert relative in run.err
    assert "append-only" in run.err


def test_a_changed_module_is_reapplied(nmc, empty_db_url, make_root):
    root = make_root({"0001_t.sql": TABLE_T}, {"functions/f.sql": FUNCTION_F.format(1)})
    assert nmc("migrate", "--database-url", empty_db_url, "--root", str(root)).exit_code == 0
    checksum_before = applied_files(empty_db_url)[0][2]

    (root / "functions" / "f.sql").write_text(FUNCTION_F.format(2))
    check = nmc("migrate", "--check", "--database-url", empty_db_url, "--root", str(root))
    assert check.exit_code == 1
    assert check.out.splitlines()[0] == "changed  functions/f.sql (module)"
    result = nmc("migrate", "--database-url", empty_db_url, "--root", str(root))
    assert result.exit_code == 0, result.err
    assert result.out.splitlines()[0] == "applied  functions/f.sql (changed module)"
    with psycopg.connect(empty_db_url) as conn:
        assert conn.execute("SELECT nmc.f()").fetchone() == (2,)
    assert applied_files(empty_db_url)[0][2] != checksum_before


def test_a_failing_file_rolls_everything_back(nmc, empty_db_url, make_root):
    root = make_root(
        {"0001_t.sql": TABLE_T, "0002_kapot.sql": "SELECT 1;\n\nSELECT nope FROM nmc.t;\n"},
        {"functions/f.sql": FUNCTION_F.format(1)},
    )
    result = nmc("migrate", "--database-url", empty_db_url, "--root", str(root))
    assert result.exit_code == 1
    assert result.err.startswith("nmc: schema/0002_kapot.sql, line 3: ERROR 42703: column")
    with psycopg.connect(empty_db_url) as conn:
        assert conn.execute("SELECT to_regnamespace('nmc')").fetchone() == (None,)


def test_a_listed_module_must_exist(nmc, empty_db_url, make_root):
    root = make_root({}, {})
    (root / "sql" / "modules.txt").write_text("# the modules\nfunctions/weg.sql  # gone\n")
    result = nmc("migrate", "--database-url", empty_db_url, "--root", str(root))
    assert result.exit_code == 1
    assert "sql/modules.txt line 2: functions/weg.sql does not exist" in result.err


def test_concurrent_migrators_apply_once(empty_db_url, make_root):
    slow_table = "SELECT pg_catalog.pg_sleep(1);\n" + TABLE_T  # would fail if run twice
    root = make_root({"0001_t.sql": slow_table}, {"functions/f.sql": FUNCTION_F.format(1)})
    command = [sys.executable, "-m", "nmc", "migrate", f"--database-url={empty_db_url}"]
    migrators = [
        subprocess.Popen([*command, f"--root={root}"], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [migrator.communicate(timeout=60)[0] for migrator in migrators]
    assert [migrator.returncode for migrator in migrators] == [0, 0]
    assert sorted(output.splitlines()[-1] for output in outputs) == [
        "migrated: 1 schema file, 1 module; grants re-applied",
        "up to date: nothing to apply; grants re-applied",
    ]
    assert [row[:2] for row in applied_files(empty_db_url)] == [
        ("functions/f.sql", "module"),
        ("schema/0001_t.sql", "schema"),
    ]


def schema_dump(url: str) -> str:
    """pg_dump of schema nmc, minus the \\restrict lines whose key is random per dump."""
    dump = subprocess.run(
        [str(client_tool("pg_dump")), "--schema-only", "--schema=nmc", f"--dbname={url}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return re.sub(r"^\\(un)?restrict .*\n", "", dump, flags=re.MULTILINE)


def test_fresh_install_equals_step_by_step(create_database, make_root, project_root):
    """One run with everything ends where one run per schema file, then the rest, ends."""
    fresh = create_database()
    migrate(fresh, project_root)

    stepwise = create_database()
    schema_files = sorted((project_root / "schema").glob("*.sql"))
    for k in range(1, len(schema_files) + 1):
        migrate(stepwise, make_root({path.name: path.read_text() for path in schema_files[:k]}, {}))
    migrate(stepwise, project_root)

    assert schema_files, "the project has no schema files to compare"
    assert schema_dump(stepwise) == schema_dump(fresh)
