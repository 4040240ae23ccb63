"""`nmc dev pgtap`: run the pgTAP tests with pg_prove against a freshly migrated database.

The database `nmc_test_sql` (or `$NMC_PGTAP_DATABASE`, so parallel runs on one cluster
keep apart) is dropped and recreated on every run, so the tests always see exactly what
`nmc migrate` builds. pg_prove runs from the project root, so a test's
`\\ir fixtures/setup.sql` resolves the same way for everyone.
"""

import os
import shutil
import subprocess
from pathlib import Path

import psycopg

from nmc.admin.migrate import migrate
from nmc.config import Settings, check_root
from nmc.database import connect, connection_url
from nmc.errors import NmcError
from nmc_dev.pg_binaries import SERVER_PACKAGE, client_tool
from nmc_dev.queries import QUERIES, on_database

TEST_DATABASE = os.environ.get("NMC_PGTAP_DATABASE") or "nmc_test_sql"
PG_PROVE_PACKAGE = "libtap-parser-sourcehandler-pgtap-perl"


def run(settings: Settings, files: list[str]) -> int:
    """Run `files` (default tests_sql/*.sql); return pg_prove's exit code."""
    root = check_root(settings.root)
    paths = [Path(file).resolve() for file in files] or sorted((root / "tests_sql").glob("*.sql"))
    tests = [str(path.relative_to(root) if path.is_relative_to(root) else path) for path in paths]
    if not tests:
        raise NmcError(f"no pgTAP tests found in {root / 'tests_sql'}")
    pg_prove = shutil.which("pg_prove")
    if pg_prove is None:
        raise NmcError(f"pg_prove not found: install it with `apt-get install {PG_PROVE_PACKAGE}`")

    test_url = _recreate_test_database(settings, root)
    completed = subprocess.run(
        [pg_prove, f"--psql-bin={client_tool('psql')}", f"--dbname={test_url}", *tests],
        cwd=root,
        check=False,
    )
    return completed.returncode


def _recreate_test_database(settings: Settings, root: Path) -> str:
    with connect(connection_url(settings)) as conn:
        conn.execute(on_database("drop_database", TEST_DATABASE))
        conn.execute(on_database("create_database", TEST_DATABASE))
    test_url = connection_url(settings, database=TEST_DATABASE)
    plan = migrate(test_url, root)
    print(f"{TEST_DATABASE}: migrated {plan.summary()}", flush=True)
    with connect(test_url) as conn:
        try:
            conn.execute(QUERIES["create_pgtap"])
        except psycopg.Error as error:
            raise NmcError(
                f"cannot create the pgtap extension ({error}); on Debian the server needs "
                f"`apt-get install {SERVER_PACKAGE}-pgtap`"
            ) from error
    return test_url
