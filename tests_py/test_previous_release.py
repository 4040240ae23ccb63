"""The previous release's queries still run on a database migrated to this tree.

A rolling deploy migrates the database while API, worker and console processes of the
previous release still run: every function their queries.sql calls must still exist with the
argument types it passes and be granted to the role that calls it. The copy of that file and
the commit it came from are in tests_py/previous_release/.
"""

import io
import re
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from named_queries import NamedQuery, check_every_query, check_runs_as_role, read_named_queries
from nmc.admin.migrate import migrate

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PREVIOUS_QUERIES = PROJECT_ROOT / "tests_py" / "previous_release" / "queries.sql"
# The commit the copy came from (tests_py/previous_release/README.md): its SQL tree is what
# the database holds before a rolling deploy migrates it.
PREVIOUS_RELEASE = "7b6fbba03370baf5ba890207d4ea0b9bd4cc1a76"
SQL_TREE = ["sql", "schema", "functions", "triggers"]

# The roles that release's code ran a query as, where they differ from its section's role
# (from its pyshell/ with named_queries.roles_in_code): its worker's maintenance and erasure
# (nmc.worker.onderhoud, nmc.worker.wissen), its API's clock, and admin commands (onboarding,
# the beheer report) whose queries sit in the API's and the worker's sections.
RUN_AS = {
    "clock_now": {"admin", "nmc_api"},
    "maintain_event_partities": {"nmc_worker"},
    "drop_event_partities": {"nmc_worker"},
    "delete_expired": {"nmc_worker"},
    "process_wissen": {"nmc_worker"},
    "apply_dienstverlener": {"admin"},
    "list_dienstverleners": {"admin"},
    "get_webhookvalidatie": {"admin"},
    "configure_beheerrapport": {"admin"},
    "list_beheerrapporten": {"admin"},
}


def previous_queries() -> list[NamedQuery]:
    return read_named_queries(PREVIOUS_QUERIES.read_text(encoding="utf-8"))


@pytest.fixture
def upgraded_conn(
    create_database: Callable[..., str], tmp_path: Path
) -> Iterator[psycopg.Connection]:
    """A database migrated to the previous release's SQL tree, then to this one."""
    try:
        archive = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), "archive", PREVIOUS_RELEASE, *SQL_TREE],
            capture_output=True,
            check=True,
        ).stdout
    except (FileNotFoundError, subprocess.CalledProcessError):
        pytest.skip(f"the previous release {PREVIOUS_RELEASE[:7]} is not in this checkout")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tree:
        tree.extractall(tmp_path / "previous", filter="data")
    url = create_database()
    migrate(url, tmp_path / "previous")
    migrate(url, PROJECT_ROOT)
    with psycopg.connect(url, autocommit=True) as connection:
        yield connection


def api_functions(conn: psycopg.Connection) -> dict[str, tuple]:
    """Every function of schema nmc: its result, SECURITY DEFINER, settings and grants."""
    rows = conn.execute(
        "SELECT p.oid::regprocedure::text, pg_catalog.pg_get_function_result(p.oid),"
        " p.prosecdef, p.proconfig, p.proacl::text[]"
        " FROM pg_catalog.pg_proc AS p WHERE p.pronamespace = 'nmc'::regnamespace"
    ).fetchall()
    return {signature: tuple(rest) for signature, *rest in rows}


def test_the_copy_names_the_roles_that_ran_it():
    queries = {query.name: query for query in previous_queries()}
    assert len(queries) == 109
    assert queries["intake_notificatie"].role == "nmc_api"
    assert queries["claim_verzenden"].role == "nmc_worker"
    assert queries["page_events"].role == "nmc_api"
    assert queries["admin_kek_status"].role == "admin"
    assert queries["console_statussen"].role == "nmc_console"
    assert set(RUN_AS) <= set(queries)


def test_every_previous_query_prepares_as_its_role(conn: psycopg.Connection):
    assert check_every_query(conn, previous_queries(), RUN_AS) == []


def test_every_previous_query_prepares_after_the_upgrade(upgraded_conn: psycopg.Connection):
    """The rolling deploy itself: the previous release's database, migrated to this tree."""
    assert check_every_query(upgraded_conn, previous_queries(), RUN_AS) == []


def test_the_upgrade_ends_with_the_functions_of_a_fresh_install(
    upgraded_conn: psycopg.Connection, conn: psycopg.Connection
):
    assert api_functions(upgraded_conn) == api_functions(conn)


def test_previous_utility_statements_call_no_function():
    utility = [query for query in previous_queries() if not query.preparable]
    assert [query.name for query in utility] == [
        "act_as_owner",
        "server_version",
        "create_database",
        "drop_database",
        "create_pgtap",
    ]
    assert [query.name for query in utility if "nmc." in query.statement] == []


def test_the_functions_previous_readiness_looks_up_exist(conn: psycopg.Connection):
    """api_ready and worker_ready find this version's functions with to_regprocedure: one
    that is gone does not fail the query, it turns the process of that release unready."""
    signatures = re.findall(
        r"to_regprocedure\(\s*'([^']+)'\s*\)", PREVIOUS_QUERIES.read_text(encoding="utf-8")
    )
    assert len(signatures) > 5
    missing = [
        signature
        for signature in signatures
        if conn.execute("SELECT pg_catalog.to_regprocedure(%s)", (signature,)).fetchone()[0] is None
    ]
    assert missing == []


@pytest.mark.parametrize("role", ["nmc_api", "nmc_worker"])
def test_a_dropped_function_fails_the_check(conn: psycopg.Connection, role: str):
    """The check itself: a call of a function that is gone, or not granted, is refused."""
    query = NamedQuery("probe", role, "SELECT nmc.kek_status_v0(%(x)s::integer)")
    with pytest.raises(psycopg.errors.UndefinedFunction):
        check_runs_as_role(conn, query)
    not_granted = NamedQuery("probe", role, "SELECT nmc.raise_epoch()")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        check_runs_as_role(conn, not_granted)
