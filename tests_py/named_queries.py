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
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

ADMIN = "admin"
_HEADER = re.compile(r"^-- (\w+) --$")
_ROLE = re.compile(r"\brole (nmc_api|nmc_worker|nmc_console)\b|\b(admin) connection\b")
_PARAMETER = re.compile(r"%\((\w+)\)[sbt]")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_PREPARABLE = ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "VALUES")
_STRING = re.compile(r'"(\w+)"')
_PACKAGE_ROLES = {
    ("nmc", "api"): "nmc_api",
    ("nmc", "worker"): "nmc_worker",
    ("nmc", "console"): "nmc_console",
}
# What the {placeholders} of a preparable query stand for while it is checked.
PLACEHOLDER_VALUES = {"partitie": "event"}


@dataclass(frozen=True)
class NamedQuery:
    name: str
    role: str  # nmc_api, nmc_worker, nmc_console or admin
    text: str

    @property
    def statement(self) -> str:
        """The query without its comment lines."""
        lines = self.text.splitlines()
        return "\n".join(line for line in lines if not line.lstrip().startswith("--")).strip()

    @property
    def preparable(self) -> bool:
        """SELECT, INSERT, UPDATE, DELETE, WITH, VALUES: what PREPARE takes (SET, SHOW and
        CREATE are utility statements)."""
        return self.statement.split(None, 1)[0].upper() in _PREPARABLE


def read_named_queries(text: str) -> list[NamedQuery]:
    """Every `-- name --` query of `text` in order, with the role of its section."""
    queries: list[NamedQuery] = []
    role = query_role = ADMIN
    name: str | None = None
    body: list[str] = []
    paragraph: list[str] = []

    def end_query() -> None:
        if name is not None:
            queries.append(NamedQuery(name, query_role, "\n".join(body).strip()))

    for line in [*text.splitlines(), ""]:
        header = _HEADER.match(line)
        if header:
            body.extend(paragraph)
            end_query()
            name, query_role, body, paragraph = header.group(1), role, [], []
            continue
        if line.strip():
            paragraph.append(line)
            continue
        # A blank line ends a paragraph: one of comments only, after the query's own
        # lines, is the intro of the next section.
        if (
            paragraph
            and all(part.startswith("--") for part in paragraph)
            and (name is None or any(not part.startswith("--") for part in body))
        ):
            for match in _ROLE.finditer("\n".join(paragraph)):
                role = match.group(1) or ADMIN
        else:
            body.extend(paragraph)
        paragraph = []
    end_query()
    return queries


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
