"""The worker's database: a pool of autocommit connections as nmc_worker, and named calls.

Every call is one statement from nmc.queries in its own transaction (so the claim commits
before the work, and PgBouncer in transaction mode is fine). A deadlock or serialization
failure (40P01, 40001) is retried a few times; NM011 (stale claim epoch: another worker owns
the task now) becomes `StaleClaim`, which the handlers drop quietly.
"""

import asyncio
from typing import Any

import psycopg
from psycopg.rows import namedtuple_row
from psycopg_pool import AsyncConnectionPool

from nmc.queries import QUERIES

RETRYABLE = frozenset({"40P01", "40001"})
STALE_EPOCH = "NM011"
RETRIES = 4


class StaleClaim(Exception):
    """The task's claim epoch moved on (NM011): the work is someone else's now."""


class Database:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self.pool = pool

    @classmethod
    async def open(cls, url: str, size: int, prepare_threshold: int | None = 5) -> "Database":
        async def configure(conn: psycopg.AsyncConnection) -> None:
            conn.prepare_threshold = prepare_threshold

        pool = AsyncConnectionPool(
            url,
            min_size=min(2, size),
            max_size=size,
            open=False,
            kwargs={"autocommit": True, "row_factory": namedtuple_row},
            configure=configure,
            name="nmc-worker",
        )
        await pool.open(wait=True, timeout=30)
        return cls(pool)

    async def close(self) -> None:
        await self.pool.close()

    async def rows(self, name: str, **params: Any) -> list[Any]:
        """All rows of query `name`, as named tuples."""
        query = QUERIES[name]
        for attempt in range(RETRIES + 1):
            try:
                async with self.pool.connection() as conn:
                    cursor = await conn.execute(query, params)
                    return await cursor.fetchall() if cursor.description else []
            except psycopg.Error as error:
                if error.sqlstate == STALE_EPOCH:
                    raise StaleClaim() from None
                if error.sqlstate in RETRYABLE and attempt < RETRIES:
                    await asyncio.sleep(0.005 * (attempt + 1))
                    continue
                raise
        raise AssertionError("unreachable")

    async def value(self, name: str, **params: Any) -> Any:
        """The first column of the first row of query `name` (None when there is no row)."""
        found = await self.rows(name, **params)
        return found[0][0] if found else None
