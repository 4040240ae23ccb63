"""The named queries of a queries.sql file, each with the role that runs it, and a check that
a database can run one as that role, without running it.

The role comes from the section intro above a query: a comment paragraph (after a blank
line, not a query's own comment) naming `role nmc_api`, `role nmc_worker`, `role
nmc_console` or the `admin connection`. Queries above the first intro (the migrator, the
clock, the test databases) run as admin.

The check PREPAREs the statement as the role (every function it calls must exist with the
argument types it passes, unambiguously) and EXPLAINs its generic plan: planning alone does
not check rights, starting the executor does, so EXPLAIN also proves the role may EXECUTE
each function and read each table the statement names. Nothing is executed.
"""

import re
from pathlib import Path

import psycopg
from psycopg import sql

# The parser is the package's own (the worker derives its readiness check from it).
from nmc.queries import ADMIN, NamedQuery, read_named_queries

__all__ = ["ADMIN", "NamedQuery", "read_named_queries"]

_PARAMETER = re.compile(r"%\((\w+)\)[sbt]")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_STRING = re.compile(r'"(\w+)"')
_PACKAGE_ROLES = {
    ("nmc", "api"): "nmc_api",
    ("nmc", "worker"): "nmc_worker",
    ("nmc", "console"): "nmc_console",
}
# What the {placeholders} of a preparable query stand for while it is checked.
PLACEHOLDER_VALUES = {"partitie": "event"}


def check_runs_as_role(conn: psycopg.Connection, query: NamedQuery) -> None:
    """PREPARE and EXPLAIN `query` as its role on `conn` (autocommit, a superuser); raises
    the database's error when a function is missing, ambiguous or not granted."""
    parameters: list[str] = []
    for parameter in _PARAMETER.findall(query.statement):
        if parameter not in parameters:
            parameters.append(parameter)
    statement = _PARAMETER.sub(lambda m: f"${parameters.index(m.group(1)) + 1}", query.statement)
    statement = _PLACEHOLDER.sub(lambda m: PLACEHOLDER_VALUES[m.group(1)], statement)
    prepared = False
    try:
        with conn.transaction(force_rollback=True):
            if query.role != ADMIN:
                conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(query.role)))
            conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            conn.execute(sql.SQL("PREPARE checked_query AS {}").format(sql.SQL(statement)))
            prepared = True
            nulls = ", ".join("NULL" for _ in parameters)
            conn.execute(f"EXPLAIN EXECUTE checked_query{f'({nulls})' if nulls else ''}")
    finally:
        # A prepared statement outlives the transaction that made it.
        if prepared:
            conn.execute("DEALLOCATE checked_query")


def roles_in_code(package_root: Path, names: set[str]) -> dict[str, set[str]]:
    """Per query name, the roles of the code under `package_root` (pyshell/) that names it as
    a string: nmc/api runs as nmc_api, nmc/worker as nmc_worker, nmc/console as nmc_console,
    everything else (nmc/admin, the CLI, nmc_dev) as admin."""
    roles: dict[str, set[str]] = {}
    for path in sorted(package_root.rglob("*.py")):
        parts = path.relative_to(package_root).parts
        role = _PACKAGE_ROLES.get(parts[:2], ADMIN) if len(parts) > 2 else ADMIN
        for name in set(_STRING.findall(path.read_text(encoding="utf-8"))) & names:
            roles.setdefault(name, set()).add(role)
    return roles


def check_every_query(
    conn: psycopg.Connection, queries: list[NamedQuery], run_as: dict[str, set[str]]
) -> list[str]:
    """check_runs_as_role for every preparable query, as each role of `run_as` (default: its
    section's role); one line per refusal: the query, the role and the database's error."""
    failures = []
    for query in queries:
        if not query.preparable:
            continue
        for role in sorted(run_as.get(query.name) or {query.role}):
            try:
                check_runs_as_role(conn, NamedQuery(query.name, role, query.text))
            except psycopg.Error as error:
                message = str(error).splitlines()[0]
                failures.append(f"{query.name} as {role}: {error.sqlstate} {message}")
    return failures
