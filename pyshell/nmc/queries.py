"""The SQL the shell sends, by name, loaded once from queries.sql next to this module."""

import re
from collections.abc import Mapping
from importlib.resources import files

from psycopg import sql

_HEADER = re.compile(r"^-- (\w+) --$", re.MULTILINE)


def load(package: str) -> dict[str, str]:
    """The named queries of `package`'s queries.sql (`-- name --` headers)."""
    text = files(package).joinpath("queries.sql").read_text(encoding="utf-8")
    names_and_bodies = _HEADER.split(text)[1:]
    return {
        name: body.strip()
        for name, body in zip(names_and_bodies[::2], names_and_bodies[1::2], strict=True)
    }


QUERIES = load("nmc")


def on_database(name: str, database: str, queries: Mapping[str, str] = QUERIES) -> sql.Composed:
    """Query `name` with its {database} placeholder filled in as a quoted identifier."""
    return sql.SQL(queries[name]).format(database=sql.Identifier(database))
