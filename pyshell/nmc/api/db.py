"""The API's database side: the pool, the OIN register cache, the clock, the named calls.

Every request makes one call of an `nmc.` function (queries.sql) on an autocommit connection,
so the function runs as its own transaction in one round trip: no BEGIN/COMMIT round trips,
and nothing holds a transaction (and so the feed watermark) open between statements.
"""

import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import TupleRow
from psycopg.types.string import TextLoader
from psycopg_pool import AsyncConnectionPool

from nmc.api.settings import ApiSettings
from nmc.queries import QUERIES

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
    return AsyncConnectionPool(
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


async def call_one(pool: Pool, name: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
    async with pool.connection() as conn:
        cursor = await conn.execute(QUERIES[name], params)
        return await cursor.fetchone()


async def call_all(pool: Pool, name: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    async with pool.connection() as conn:
        cursor = await conn.execute(QUERIES[name], params)
        return await cursor.fetchall()


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
        row = await call_one(self._pool, "find_dienstverlener", {"oin": oin})
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
            row = await call_one(self._pool, "clock_now", {})
            assert row is not None  # noqa: S101 - nmc.now() always answers one row
            self._offset = row[0] - datetime.now(UTC)
            self._fetched_at = self._clock()
        return datetime.now(UTC) + self._offset - self.MARGIN


# --------------------------------------------------------------------------------------------
# Named calls with their parameters spelled out


@dataclass(frozen=True)
class IntakeItems:
    """Notifications, sealed and HMACed, ready for nmc.intake_notificatie(s)_v2.

    One list per column, entry i of every list belonging to notification i: the arrays that
    nmc.intake_notificaties_v2 takes, built once rather than gathered from per-item objects.
    """

    ids: list[uuid.UUID]
    berichttypen: list[str]
    dvref_hmacs: list[bytes]
    payload_hmacs: list[bytes]  # under payload pepper version `payload_pepper_versie`
    payload_pepper_versie: int
    ontvangers: list[bytes]
    gegevens: list[bytes]
    sleutels: list[bytes]
    geldig_tot: list[str | None]  # canonical RFC 3339 text, cast to timestamptz in SQL
    trace_ids: list[str]
    diensten: list[str | None]
    # While peppers rotate: each item's dvRef HMAC under every earlier live pepper version,
    # item by item (k per item); None when only one version is live.
    vorige_hmacs: list[bytes] | None = None
    # The same for the payload HMAC under the earlier live payload pepper versions.
    vorige_payload_hmacs: list[bytes] | None = None
    # The unkeyed SHA-256 of each request: only when the database asked for them (NMP01),
    # to judge a replay of a row stored before the payload pepper.
    sha256_hashes: list[bytes] | None = None


async def intake_one(
    pool: Pool,
    *,
    dv_id: int,
    regie: str,
    pepper_versie: int,
    kek_id: str,
    batch_id: uuid.UUID | None,
    items: IntakeItems,
) -> uuid.UUID:
    """Intake the one notification in `items`."""
    row = await call_one(
        pool,
        "intake_notificatie",
        {
            "id": items.ids[0],
            "dv_id": dv_id,
            "berichttype": items.berichttypen[0],
            "regie": regie,
            "dvref_hmac": items.dvref_hmacs[0],
            "pepper_versie": pepper_versie,
            "payload_hmac": items.payload_hmacs[0],
            "payload_pepper_versie": items.payload_pepper_versie,
            "ontvanger": items.ontvangers[0],
            "gegevens": items.gegevens[0],
            "sleutel": items.sleutels[0],
            "kek_id": kek_id,
            "geldig_tot": items.geldig_tot[0],
            "batch_id": batch_id,
            "trace_id": items.trace_ids[0],
            "dienst": items.diensten[0],
            "vorige_hmacs": items.vorige_hmacs,
            "vorige_payload_hmacs": items.vorige_payload_hmacs,
            "sha256_hash": items.sha256_hashes[0] if items.sha256_hashes else None,
        },
    )
    assert row is not None  # noqa: S101 - the intake returns one row or raises
    return row[0]


async def intake_many(
    pool: Pool,
    *,
    dv_id: int,
    regie: str,
    pepper_versie: int,
    kek_id: str,
    batch_id: uuid.UUID | None,
    items: IntakeItems,
) -> list[str]:
    """Intake a batch; the notificatie ids in item order, as text (they are only echoed)."""
    params = {
        "dv_id": dv_id,
        "regie": regie,
        "pepper_versie": pepper_versie,
        "payload_pepper_versie": items.payload_pepper_versie,
        "kek_id": kek_id,
        "batch_id": batch_id,
        "ids": items.ids,
        "berichttypen": items.berichttypen,
        "dvref_hmacs": items.dvref_hmacs,
        "payload_hmacs": items.payload_hmacs,
        "ontvangers": items.ontvangers,
        "gegevens": items.gegevens,
        "sleutels": items.sleutels,
        "geldig_tot": items.geldig_tot,
        "trace_ids": items.trace_ids,
        "diensten": items.diensten,
        "vorige_hmacs": items.vorige_hmacs,
        "vorige_payload_hmacs": items.vorige_payload_hmacs,
        "sha256_hashes": items.sha256_hashes,
    }
    async with pool.connection() as conn, conn.cursor() as cursor:
        # Load the ids as text: a thousand uuid.UUID objects, each turned straight back into
        # text for the answer, cost more than the rest of reading the result.
        cursor.adapters.register_loader("uuid", TextLoader)
        await cursor.execute(QUERIES["intake_notificaties"], params)
        return [row[1] for row in await cursor.fetchall()]
