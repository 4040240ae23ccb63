"""The SQL the shell sends, by name, loaded once from queries.sql next to this module; the
queries with the role of their section (read_named_queries), and the functions the worker's
queries call (WORKER_FUNCTIONS, what its readiness check looks for)."""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.resources import files

from psycopg import sql

_HEADER = re.compile(r"^-- (\w+) --$", re.MULTILINE)
_LINE_HEADER = re.compile(r"^-- (\w+) --$")
ADMIN = "admin"
_ROLE = re.compile(r"\brole (nmc_api|nmc_worker|nmc_console)\b|\b(admin) connection\b")
_PREPARABLE = ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "VALUES")
_NMC_CALL = re.compile(r"\bnmc\.([a-z_][a-z0-9_]*)\s*\(")


def load(package: str) -> dict[str, str]:
    """The named queries of `package`'s queries.sql (`-- name --` headers)."""
    text = files(package).joinpath("queries.sql").read_text(encoding="utf-8")
    names_and_bodies = _HEADER.split(text)[1:]
    return {
        name: body.strip()
        for name, body in zip(names_and_bodies[::2], names_and_bodies[1::2], strict=True)
    }


QUERIES = load("nmc")


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
        header = _LINE_HEADER.match(line)
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


def functions_called(queries: Iterable[NamedQuery]) -> tuple[str, ...]:
    """The names of the nmc functions the queries call, sorted (each once)."""
    return tuple(sorted({name for q in queries for name in _NMC_CALL.findall(q.statement)}))


def worker_functions(text: str | None = None) -> tuple[str, ...]:
    """The nmc functions the worker's queries call (its sections of queries.sql), the
    readiness query's own aside: what `worker_ready` looks for."""
    if text is None:
        text = files("nmc").joinpath("queries.sql").read_text(encoding="utf-8")
    return functions_called(
        q for q in read_named_queries(text) if q.role == "nmc_worker" and q.name != "worker_ready"
    )


def on_database(name: str, database: str, queries: Mapping[str, str] = QUERIES) -> sql.Composed:
    """Query `name` with its {database} placeholder filled in as a quoted identifier."""
    return sql.SQL(queries[name]).format(database=sql.Identifier(database))
