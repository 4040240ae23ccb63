"""The worker's database: a pool of autocommit connections as nmc_worker, and named calls.

Every call is one statement from nmc.queries, made as nmc.sql_calls makes them, in its own
transaction (so the claim commits before the work, and PgBouncer in transaction mode is
fine). A deadlock or serialization
failure (40P01, 40001) is retried a few times; NM011 (stale claim epoch: another worker owns
the task now) becomes `StaleClaim`, which the handlers drop quietly.
"""

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import psycopg
from psycopg.rows import namedtuple_row
from psycopg_pool import AsyncConnectionPool

from nmc import sql_calls, sqlstates
from nmc.runtime.pool import LifoPool
from nmc.sql_calls import NO_PARAMS

RETRYABLE = frozenset({sqlstates.DEADLOCK_DETECTED, sqlstates.SERIALIZATION_FAILURE})
RETRIES = 4
T = TypeVar("T")


class StaleClaim(Exception):
    """The task's claim epoch moved on (NM011): the work is someone else's now."""


class Database:
    def __init__(self, pool: AsyncConnectionPool) -> None:
        self.pool = pool

    @classmethod
    async def open(cls, url: str, size: int, prepare_threshold: int | None = 5) -> "Database":
        async def configure(conn: psycopg.AsyncConnection) -> None:
            conn.prepare_threshold = prepare_threshold

        pool = LifoPool(
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

    async def fetch_all(
        self, name: str, params: Mapping[str, Any] = NO_PARAMS, *, row_type: type | None = None
    ) -> list[Any]:
        """All rows of query `name`: named tuples, or `row_type` (nmc.sql_calls)."""
        return await self._retried(sql_calls.fetch_all, name, params, row_type=row_type)

    async def fetch_one(
        self, name: str, params: Mapping[str, Any] = NO_PARAMS, *, row_type: type | None = None
    ) -> Any | None:
        """The first row of query `name`, or None."""
        return await self._retried(sql_calls.fetch_one, name, params, row_type=row_type)

    async def fetch_value(self, name: str, params: Mapping[str, Any] = NO_PARAMS) -> Any:
        """The first column of the first row of query `name` (None when there is no row)."""
        return await self._retried(sql_calls.fetch_value, name, params)

    async def _retried(
        self, call: Callable[..., Awaitable[T]], name: str, params: Mapping[str, Any], **kw: Any
    ) -> T:
        for attempt in range(RETRIES + 1):
            try:
                return await call(self.pool, name, params, **kw)
            except psycopg.Error as error:
                if error.sqlstate == sqlstates.STALE_CLAIM:
                    raise StaleClaim() from None
                if error.sqlstate in RETRYABLE and attempt < RETRIES:
                    await asyncio.sleep(0.005 * (attempt + 1))
                    continue
                raise
        raise AssertionError("unreachable")
