"""The worker's claimed rows are typed (nmc.worker.claims): each dataclass's fields are the
columns of its claim query and of the SQL function behind it, by name and in order."""

import dataclasses
import re

import psycopg
import pytest

from nmc.queries import QUERIES
from nmc.worker.claims import CLAIM_ROWS

# Parameters that make a claim query claim nothing (and it runs in a rolled-back transaction).
NOTHING = {"eigenaar": "test-claim-rows", "batch": 0, "soort": "controle"}


def fields_of(row_type: type) -> list[str]:
    return [field.name for field in dataclasses.fields(row_type)]


def function_of(query: str) -> str:
    [name] = re.findall(r"\bFROM (nmc\.\w+)\(", query)
    return name


def query_columns(conn: psycopg.Connection, name: str) -> list[str]:
    with conn.transaction(force_rollback=True):
        cursor = conn.execute(QUERIES[name], NOTHING)
        assert cursor.description is not None
        return [column.name for column in cursor.description]


def function_columns(conn: psycopg.Connection, function: str) -> list[str]:
    """The RETURNS TABLE columns of `function`, in order."""
    [(columns,)] = conn.execute(
        "SELECT array_agg(a.name ORDER BY a.n) FROM pg_proc AS p,"
        " unnest(p.proargnames, p.proargmodes) WITH ORDINALITY AS a (name, mode, n)"
        " WHERE p.oid = %s::regproc AND a.mode = 't'",
        [function],
    ).fetchall()
    return columns or []


@pytest.mark.parametrize("name", sorted(CLAIM_ROWS))
def test_the_claimed_row_type_is_the_query_and_the_function(conn, name):
    row_type = CLAIM_ROWS[name]
    assert dataclasses.is_dataclass(row_type) and row_type.__dataclass_params__.frozen
    assert fields_of(row_type) == query_columns(conn, name)
    assert fields_of(row_type) == function_columns(conn, function_of(QUERIES[name]))


def test_every_claim_query_has_a_row_type():
    assert sorted(CLAIM_ROWS) == sorted(name for name in QUERIES if name.startswith("claim_"))
