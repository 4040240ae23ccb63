"""Calling the database: a named query of queries.sql with its parameters, on a connection of
a pool, answered as rows.

The one calling convention of the API, the worker and the console: `fetch_all(pool, "name",
{...})`, `fetch_one` and `fetch_value`. The rows are the pool's own (the API's tuples, the
worker's named tuples) unless `row_type` names a dataclass to build from the columns by name,
or `dict` (the console's rows: column name to value).
What each side adds stays on its side: the worker retries deadlocks and turns a stale claim
into an exception (nmc.worker.db), the API maps errors to problems.
"""

from collections.abc import Mapping
from typing import Any

from psycopg import AsyncConnection, AsyncCursor
from psycopg.adapt import Loader
from psycopg.rows import class_row, dict_row
from psycopg_pool import AsyncConnectionPool

from nmc.queries import QUERIES

Pool = AsyncConnectionPool[AsyncConnection[Any]]
NO_PARAMS: Mapping[str, Any] = {}


async def fetch_all(
    pool: Pool,
    name: str,
    params: Mapping[str, Any] = NO_PARAMS,
    *,
    row_type: type | None = None,
    loaders: Mapping[str, type[Loader]] | None = None,
) -> list[Any]:
    """Every row of query `name`; none when the statement returns no rows at all.

    `loaders`: for this call only, the loader of a PostgreSQL type by name (for instance a
    uuid loaded as text when it is only echoed)."""
    async with pool.connection() as conn:
        cursor = await _execute(conn, name, params, row_type, loaders)
        return await cursor.fetchall() if cursor.description else []


async def fetch_one(
    pool: Pool,
    name: str,
    params: Mapping[str, Any] = NO_PARAMS,
    *,
    row_type: type | None = None,
) -> Any | None:
    """The first row of query `name`, or None."""
    async with pool.connection() as conn:
        cursor = await _execute(conn, name, params, row_type)
        return await cursor.fetchone() if cursor.description else None


async def fetch_value(pool: Pool, name: str, params: Mapping[str, Any] = NO_PARAMS) -> Any:
    """The first column of the first row of query `name` (None when there is no row)."""
    row = await fetch_one(pool, name, params)
    return row[0] if row is not None else None


async def _execute(
    conn: AsyncConnection[Any],
    name: str,
    params: Mapping[str, Any],
    row_type: type | None,
    loaders: Mapping[str, type[Loader]] | None = None,
) -> AsyncCursor[Any]:
    """Query `name` executed on a cursor with the connection's rows, or building `row_type`
    (a dataclass, or dict) from the columns by name."""
    if row_type is None and not loaders:
        return await conn.execute(QUERIES[name], params)
    if row_type is dict:
        cursor = conn.cursor(row_factory=dict_row)
    else:
        cursor = conn.cursor(row_factory=class_row(row_type)) if row_type else conn.cursor()
    for type_name, loader in (loaders or {}).items():
        cursor.adapters.register_loader(type_name, loader)
    return await cursor.execute(QUERIES[name], params)
