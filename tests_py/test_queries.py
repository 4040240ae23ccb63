"""queries.sql is shared by the API, the worker and the CLI, nmc_dev/queries.sql by the
development tools: every name must be unique, within a file and across the two, and every
query must run on the migrated database as each role whose code sends it."""

import re
from importlib.resources import files
from pathlib import Path

import psycopg
import pytest

from named_queries import check_every_query, read_named_queries, roles_in_code
from nmc.queries import QUERIES
from nmc_dev.queries import DEV_QUERIES
from nmc_dev.queries import QUERIES as ALL_QUERIES

PYSHELL = Path(__file__).resolve().parent.parent / "pyshell"


def queries_text(package: str = "nmc") -> str:
    return files(package).joinpath("queries.sql").read_text(encoding="utf-8")


@pytest.mark.parametrize(("package", "loaded"), [("nmc", QUERIES), ("nmc_dev", DEV_QUERIES)])
def test_every_query_name_is_unique(package, loaded):
    names = re.findall(r"^-- (\w+) --$", queries_text(package), flags=re.MULTILINE)
    duplicates = sorted({name for name in names if names.count(name) > 1})
    assert duplicates == []
    assert len(names) == len(loaded)


def test_the_tools_see_both_files_and_no_name_is_in_both():
    assert QUERIES.keys().isdisjoint(DEV_QUERIES.keys())
    assert ALL_QUERIES == {**QUERIES, **DEV_QUERIES}


def test_sections_name_the_role_that_runs_their_queries():
    queries = {query.name: query for query in read_named_queries(queries_text())}
    assert set(queries) == set(QUERIES)
    assert queries["lock_migrations"].role == "admin"
    assert queries["intake_notificatie"].role == "nmc_api"
    assert queries["claim_verzenden"].role == "nmc_worker"
    assert queries["page_events"].role == "nmc_api"
    assert queries["admin_kek_status"].role == "admin"
    assert queries["worker_ready"].role == "nmc_worker"
    assert queries["console_statussen"].role == "nmc_console"


def test_the_code_of_each_role_is_found():
    run_as = roles_in_code(PYSHELL, set(QUERIES))
    assert run_as["intake_notificaties"] == {"nmc_api"}
    assert run_as["ensure_onderhoud"] == {"nmc_worker"}
    assert run_as["console_taak"] == {"nmc_console"}
    assert run_as["apply_dienstverlener"] == {"admin"}


def test_every_query_prepares_as_the_roles_that_run_it(conn: psycopg.Connection):
    """Each function a query calls exists with the argument types it passes and is granted
    to every role whose code sends the query (its section's role when no code names it)."""
    queries = read_named_queries(queries_text())
    run_as = roles_in_code(PYSHELL, set(QUERIES))
    assert check_every_query(conn, queries, run_as) == []


def test_every_development_query_prepares_as_admin(conn: psycopg.Connection):
    """The development tools run as the admin connection; their queries resolve too."""
    queries = read_named_queries(queries_text("nmc_dev"))
    assert {query.role for query in queries} == {"admin"}
    # The year run's per-statement counters are pg_stat_statements' (its own cluster
    # preloads it): checked where the extension exists, in a transaction rolled back.
    counters = [q for q in queries if "pg_stat_statements" in q.statement]
    assert counters, "the year run reads pg_stat_statements"
    assert check_every_query(conn, [q for q in queries if q not in counters], {}) == []
    with conn.transaction(force_rollback=True):
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements WITH SCHEMA public")
        assert check_every_query(conn, counters, {}) == []


_NMC_CALL = re.compile(r"\bnmc\.([a-z_][a-z0-9_]*)\s*\(")


def worker_called_functions() -> list[str]:
    """The nmc functions the worker's queries call: every query its code sends (as
    roles_in_code finds them) and every query of its sections, worker_ready itself aside."""
    queries = read_named_queries(queries_text())
    sent = {n for n, roles in roles_in_code(PYSHELL, set(QUERIES)).items() if "nmc_worker" in roles}
    names = set()
    for query in queries:
        if query.name != "worker_ready" and (query.role == "nmc_worker" or query.name in sent):
            names.update(_NMC_CALL.findall(query.statement))
    return sorted(names)


def worker_ready_as_worker(conn: psycopg.Connection) -> bool:
    from nmc.worker.ops_http import readiness_params

    conn.execute("SET LOCAL ROLE nmc_worker")
    [(ready,)] = conn.execute(QUERIES["worker_ready"], readiness_params()).fetchall()
    conn.execute("RESET ROLE")
    return ready


def test_worker_ready_checks_every_function_the_worker_calls(conn: psycopg.Connection):
    """A function any worker query calls that is gone (or not the
    worker's to execute) makes the worker unready, not only the first few."""
    from nmc.queries import worker_functions

    functions = worker_called_functions()
    assert {"claim_verzenden", "finish_herwrap", "ensure_onderhoud_v2"} <= set(functions)
    # What the worker derives at start-up from its sections is what its code sends.
    assert functions == list(worker_functions())
    with conn.transaction(force_rollback=True):
        assert worker_ready_as_worker(conn) is True
    for name in functions:
        with conn.transaction(force_rollback=True):
            for (oid,) in conn.execute(
                "SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc AS p"
                " WHERE p.pronamespace = 'nmc'::regnamespace AND p.proname = %s",
                (name,),
            ).fetchall():
                conn.execute(f"ALTER FUNCTION {oid} RENAME TO weg_{name}")
            if name == "now":
                continue  # the readiness query itself fails: the database answer is 503
            assert worker_ready_as_worker(conn) is False, f"ready without nmc.{name}"
