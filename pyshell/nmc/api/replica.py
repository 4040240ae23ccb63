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

Nor is a standby read when it is too far behind: more than NMC_API_REPLICA_MAX_LAG_SECONDS
of replay lag, or, for a snapshot page after the first, a watermark below the first page's
(a status change below it would be lost: the DV resumes the feed from the first page's
position). The SQL function refuses (NMR01, DETAIL = its lag) and the primary answers.
/metrics exports the standby's lag as nmc_replica_achterstand_seconden either way.
"""

import logging
import math
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import Any

import psycopg

from nmc import sql_calls, sqlstates
from nmc.api.db import Pool
from nmc.api.problems import database_unavailable
from nmc.api.services import Services
from nmc.api.settings import ApiSettings
from nmc.runtime.pool import LifoPool

log = logging.getLogger(__name__)

# Short: past it the page is read on the primary rather than waiting for a standby.
REPLICA_WAIT_SECONDS = 2.0
RECOVERY_CONFLICT = "40001"  # a standby cancels a query whose rows replay must remove
REPLICA_LAG = "nmc_replica_achterstand_seconden"  # as nmc.metrics_replica names it


def new_replica_pool(settings: ApiSettings) -> Pool | None:
    """An unopened pool of autocommit connections to the replica, or None without one."""
    if not settings.replica_database_url:
        return None
    return LifoPool(
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


async def read_snapshot_page(
    services: Services, dv_id: int, na: Any, limiet: int, watermerk: str | None
) -> Any:
    """The page of nmc.snapshot_notificaties; `watermerk`: the first page's (None on it)."""
    params = {"dv_id": dv_id, "na": na, "limiet": limiet}
    if services.replica is None:
        row = await sql_calls.fetch_one(services.pool, "snapshot_notificaties", params)
    else:
        await sql_calls.fetch_one(
            services.pool,
            "take_feed_aanroep_api",
            {"dv_id": dv_id, "epoch": None, "xid": None, "uitgegeven_op": None},
        )
        row = await _on_replica(
            services, "read_snapshot_pagina", {**params, "watermerk": watermerk}
        )
    return row[0] if row else None


async def metrics_rows(services: Services) -> list[tuple[Any, ...]]:
    """nmc.metrics(), on the replica when there is one (with its replay lag) and it is not
    too far behind."""
    if services.replica is None:
        return await sql_calls.fetch_all(services.pool, "api_metrics", {})
    try:
        return await sql_calls.fetch_all(services.replica, "api_metrics_replica", _bound(services))
    except psycopg.Error as error:
        lag = _behind(error)
        if lag is None and not _replica_trouble(error):
            raise
        _log_fallback("/metrics", error, lag)
        rows = await sql_calls.fetch_all(services.pool, "api_metrics", {})
        return rows if lag is None else [*rows, (REPLICA_LAG, {}, lag)]


async def _on_replica(services: Services, name: str, params: dict[str, Any]) -> Any:
    """Query `name` on the replica, or on the primary when the replica cannot answer or is
    too far behind (the same read-only function answers on both)."""
    assert services.replica is not None  # noqa: S101 - only called with a replica
    params = {**params, **_bound(services)}
    try:
        return await sql_calls.fetch_one(services.replica, name, params)
    except psycopg.Error as error:
        lag = _behind(error)
        if lag is None and not _replica_trouble(error):
            raise
        _log_fallback("the page", error, lag)
        return await sql_calls.fetch_one(services.pool, name, params)


def _bound(services: Services) -> dict[str, float]:
    return {"max_lag": services.settings.replica_max_lag_seconds}


def _behind(error: psycopg.Error) -> float | None:
    """The replay lag a standby refused with (NMR01: too far behind for this read), or None."""
    if error.sqlstate != sqlstates.REPLICA_BEHIND:
        return None
    try:
        return float(error.diag.message_detail or "inf")
    except ValueError:
        return math.inf


def _log_fallback(what: str, error: psycopg.Error, lag: float | None) -> None:
    if lag is None:
        log.warning(
            "replica unavailable (%s): %s is read on the primary", type(error).__name__, what
        )
    else:  # routine while a standby catches up: not a warning
        log.info("replica behind (%.3f s of replay lag): %s is read on the primary", lag, what)


def _replica_trouble(error: psycopg.Error) -> bool:
    """No connection, a broken one or a shutting-down server (also a PoolTimeout), or a
    query the standby cancelled for replay: not the request's fault, the primary can answer."""
    return isinstance(error, psycopg.OperationalError) and (
        database_unavailable(error) or error.sqlstate == RECOVERY_CONFLICT
    )


def _without(params: Mapping[str, Any], name: str) -> dict[str, Any]:
    return {key: value for key, value in params.items() if key != name}
