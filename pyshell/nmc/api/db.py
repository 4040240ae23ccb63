"""The API's database side: the pool, the OIN register cache, the clock.

Every request makes one call of an `nmc.` function (queries.sql, through nmc.sql_calls) on
an autocommit connection, so the function runs as its own transaction in one round trip: no
BEGIN/COMMIT round trips, and nothing holds a transaction (and so the feed watermark) open
between statements.
"""

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from psycopg import AsyncConnection
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

from nmc import sql_calls
from nmc.api.settings import ApiSettings
from nmc.runtime.pool import LifoPool

Pool = AsyncConnectionPool[AsyncConnection[TupleRow]]

POOL_OPEN_TIMEOUT_SECONDS = 10.0
# A request that waits this long for a connection gets 503 (PoolTimeout) rather than hanging.
POOL_WAIT_SECONDS = 10.0
NEGATIVE_CACHE_SECONDS = 5.0


def new_pool(settings: ApiSettings) -> Pool:
    """An unopened pool of autocommit connections as nmc_api (open it in the lifespan).

    No `check` callback: it would cost a round trip on every checkout. A broken connection
    fails its one request (503) and the pool discards it when it comes back.
    """
    return LifoPool(
        settings.database_url,
        min_size=settings.pool_min,
        max_size=settings.pool_max,
        open=False,
        timeout=POOL_WAIT_SECONDS,
        name="nmc-api",
        kwargs={
            "autocommit": True,
            "prepare_threshold": settings.prepare_threshold,
            "application_name": "nmc-api",
        },
    )


# --------------------------------------------------------------------------------------------
# OIN -> dienstverlener


@dataclass(frozen=True)
class Dienstverlener:
    dv_id: int
    naam: str


class DvRegister:
    """`nmc.find_dienstverlener` with an in-process cache.

    A found DV is reused for `ttl` seconds, an unknown OIN for a few seconds (so a DV that is
    just onboarded gets in quickly). A DV deactivated meanwhile is still refused by the intake
    itself (NM010); reads keep working for at most `ttl` seconds.
    """

    def __init__(self, pool: Pool, ttl: float, clock=time.monotonic):
        self._pool = pool
        self._ttl = ttl
        self._clock = clock
        self._cache: dict[str, tuple[float, Dienstverlener | None]] = {}

    async def find(self, oin: str) -> Dienstverlener | None:
        now = self._clock()
        cached = self._cache.get(oin)
        if cached is not None and cached[0] > now:
            return cached[1]
        row = await sql_calls.fetch_one(self._pool, "find_dienstverlener", {"oin": oin})
        dv = Dienstverlener(dv_id=row[0], naam=row[1]) if row else None
        if len(self._cache) > 10_000:  # OINs come from verified tokens, but stay bounded
            self._cache.clear()
        self._cache[oin] = (now + (self._ttl if dv else min(self._ttl, NEGATIVE_CACHE_SECONDS)), dv)
        return dv


# --------------------------------------------------------------------------------------------
# The clock


class DbClock:
    """An estimate of `nmc.now()` for input checks, without a round trip per request.

    Why not ask the database every time: `geldigTot` in the future is the only time rule the
    shell checks, and only so that a 400 can list it next to the other violations. The
    authority is the intake function itself (NM014, against nmc.now() in the intake
    transaction). So the shell keeps the offset between its wall clock and nmc.now(),
    refreshed every few seconds, and errs towards the past: the offset is taken with the local
    time read *after* the answer (the round trip only makes it smaller), and a margin covers a
    small step of the local clock. nmc.now() only moves forward (tests advance it), so a stale
    offset lets a doubtful value through to SQL and never refuses a good one.
    """

    REFRESH_SECONDS = 5.0
    MARGIN = timedelta(seconds=1)

    def __init__(self, pool: Pool, clock=time.monotonic):
        self._pool = pool
        self._clock = clock
        self._offset: timedelta | None = None
        self._fetched_at = 0.0

    async def now(self) -> datetime:
        if self._offset is None or self._clock() - self._fetched_at >= self.REFRESH_SECONDS:
            row = await sql_calls.fetch_one(self._pool, "clock_now")
            assert row is not None  # noqa: S101 - nmc.now() always answers one row
            self._offset = row[0] - datetime.now(UTC)
            self._fetched_at = self._clock()
        return datetime.now(UTC) + self._offset - self.MARGIN
