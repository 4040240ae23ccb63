"""The SQL the shell sends, by name, loaded once from queries.sql next to this module."""

import re
from importlib.resources import files

from psycopg import sql

_HEADER = re.compile(r"^-- (\w+) --$", re.MULTILINE)


def _load() -> dict[str, str]:
    text = files("nmc").joinpath("queries.sql").read_text(encoding="utf-8")
    names_and_bodies = _HEADER.split(text)[1:]
    return {
        name: body.strip()
        for name, body in zip(names_and_bodies[::2], names_and_bodies[1::2], strict=True)
    }


QUERIES = _load()


def on_database(name: str, database: str) -> sql.Composed:
    """Query `name` with its {database} placeholder filled in as a quoted identifier."""
    return sql.SQL(QUERIES[name]).format(database=sql.Identifier(database))
