"""Reads on a standby: NMC_API_REPLICA_DATABASE_URL (ADR 0024: feed scans and reports on the
replica, feed and watermark from one snapshot).

With the setting, a feed page (JSON or an SSE poll) and a snapshot page are two calls: the
call count on the primary (nmc.take_feed_aanroep_api: the DV, the cursor and the call rate,
one small write), then the page on the replica (nmc.read_feed_pagina /
nmc.read_snapshot_pagina, read-only, under the standby's own watermark). /metrics reads
nmc.metrics() there too. The acknowledgement and everything else stay on the primary.
Without the setting a page is the one call it always was (nmc.page_events,
nmc.snapshot_notificaties).

A replica that cannot answer (no connection within REPLICA_WAIT_SECONDS, a broken one, a
query cancelled by a recovery conflict) costs no 503: the page is read on the primary with
the same read-only function (the call was already counted). A standby that lags serves an
older page, never a gap: its watermark holds back every xid it has not seen end.
"""

import logging
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from nmc import sql_calls
from nmc.api.db import Pool
from nmc.api.problems import database_unavailable
from nmc.api.services import Services
from nmc.api.settings import ApiSettings

log = logging.getLogger(__name__)

# Short: past it the page is read on the primary rather than waiting for a standby.
REPLICA_WAIT_SECONDS = 2.0
RECOVERY_CONFLICT = "40001"  # a standby cancels a query whose rows replay must remove


def new_replica_pool(settings: ApiSettings) -> Pool | None:
    """An unopened pool of autocommit connections to the replica, or None without one."""
    if not settings.replica_database_url:
        return None
    return AsyncConnectionPool(
        settings.replica_database_url,
        min_size=settings.pool_min,
        max_size=settings.pool_max,
        open=False,
        timeout=REPLICA_WAIT_SECONDS,
        name="nmc-api-replica",
        kwargs={
            "autocommit": True,
            "prepare_threshold": settings.prepare_threshold,
            "application_name": "nmc-api-replica",
        },
    )


async def open_replica_pool(settings: ApiSettings, stack: AsyncExitStack) -> Pool | None:
    """The replica's pool, opened without waiting: a standby that is down when the API starts
    does not stop it (pages are read on the primary until the standby answers)."""
    pool = new_replica_pool(settings)
    if pool is not None:
        stack.push_async_callback(pool.close)
        await pool.open(wait=False)
    return pool


async def read_feed_page(
    services: Services, dv_id: int, cursor: Mapping[str, Any], limiet: int | None
) -> Any:
    """The page of nmc.page_events (`cursor`: epoch, xid, event_id, uitgegeven_op)."""
    params = {"dv_id": dv_id, "limiet": limiet, **cursor}
    if services.replica is None:
        row = await sql_calls.fetch_one(services.pool, "page_events", params)
    else:
        await sql_calls.fetch_one(
            services.pool, "take_feed_aanroep_api", _without(params, "event_id")
        )
        row = await _on_replica(services, "read_feed_pagina", params)
    return row[0] if row else None


async def read_snapshot_page(services: Services, dv_id: int, na: Any, limiet: int) -> Any:
    """The page of nmc.snapshot_notificaties."""
    params = {"dv_id": dv_id, "na": na, "limiet": limiet}
    if services.replica is None:
        row = await sql_calls.fetch_one(services.pool, "snapshot_notificaties", params)
    else:
        await sql_calls.fetch_one(
            services.pool,
            "take_feed_aanroep_api",
            {"dv_id": dv_id, "epoch": None, "xid": None, "uitgegeven_op": None},
        )
        row = await _on_replica(services, "read_snapshot_pagina", params)
    return row[0] if row else None


async def metrics_rows(services: Services) -> list[tuple[Any, ...]]:
    """nmc.metrics(), on the replica when there is one."""
    if services.replica is None:
        return await sql_calls.fetch_all(services.pool, "api_metrics", {})
    try:
        return await sql_calls.fetch_all(services.replica, "api_metrics", {})
    except psycopg.OperationalError as error:
        if not _replica_trouble(error):
            raise
        log.warning(
            "replica unavailable for /metrics (%s): read on the primary", type(error).__name__
        )
        return await sql_calls.fetch_all(services.pool, "api_metrics", {})


async def _on_replica(services: Services, name: str, params: dict[str, Any]) -> Any:
    assert services.replica is not None  # noqa: S101 - only called with a replica
    try:
        return await sql_calls.fetch_one(services.replica, name, params)
    except psycopg.OperationalError as error:
        if not _replica_trouble(error):
            raise
        log.warning(
            "replica unavailable (%s): the page is read on the primary", type(error).__name__
        )
        return await sql_calls.fetch_one(services.pool, name, params)


def _replica_trouble(error: psycopg.OperationalError) -> bool:
    """No connection, a broken one or a shutting-down server (also a PoolTimeout), or a
    query the standby cancelled for replay: not the request's fault, the primary can answer."""
    return database_unavailable(error) or error.sqlstate == RECOVERY_CONFLICT


def _without(params: Mapping[str, Any], name: str) -> dict[str, Any]:
    return {key: value for key, value in params.items() if key != name}
